"""ClusterQueue: quota, queueing strategy, preemption and admission-check policy."""

from __future__ import annotations

from pykueue.api.fields import Model, Rule, f
from pykueue.api.meta import DNS1123_SUBDOMAIN, NAME_ITEMS, Condition, LabelSelector, conditions_field
from pykueue.api.quota import (
    FairSharing,
    FairSharingStatus,
    FlavorUsage,
    ResourceGroup,
    resource_groups_field,
)
from pykueue.api.resource import PrinterColumn, Resource

QUEUEING_STRATEGIES = ("StrictFIFO", "BestEffortFIFO")
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")


class AdmissionCheckStrategyRule(Model):
    name: str = f(required=True, min_length=1, max_length=316)
    on_flavors: list[str] | None = f(max_items=64, list_type="set", items=NAME_ITEMS)


class AdmissionChecksStrategy(Model):
    admission_checks: list[AdmissionCheckStrategyRule] = f(
        required=True, min_items=1, max_items=64, list_type="map", map_keys=("name",))


class AdmissionScope(Model):
    admission_mode: str = f(required=True, enum=("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"))


class MigrationConstraints(Model):
    last_acceptable_flavor_name: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN)


class Migration(Model):
    mode: str = f(required=True, max_length=253, enum=("TryPreferredFlavors", "RetainFirstAdmission"))
    constraints: MigrationConstraints | None = f()


class ConcurrentAdmissionPolicy(Model):
    migration: Migration = f(required=True)


class FlavorFungibility(Model):
    __rules__ = (Rule(
        "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && "
        "self.whenCanPreempt == 'TryNextFlavor')",
        "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"),)

    when_can_borrow: str | None = f(default="MayStopSearch", enum=("MayStopSearch", "TryNextFlavor"))
    when_can_preempt: str | None = f(default="TryNextFlavor", enum=("MayStopSearch", "TryNextFlavor"))
    preference: str | None = f(enum=("BorrowingOverPreemption", "PreemptionOverBorrowing"))


class BorrowWithinCohort(Model):
    policy: str | None = f(default="Never", enum=("Never", "LowerPriority"))
    max_priority_threshold: int | None = f(fmt="int32")


class ClusterQueuePreemption(Model):
    __rules__ = (Rule(
        "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  "
        "self.borrowWithinCohort.policy != 'Never')",
        "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),)

    reclaim_within_cohort: str | None = f(default="Never", enum=("Never", "LowerPriority", "Any"))
    borrow_within_cohort: BorrowWithinCohort | None = f(default={})
    within_cluster_queue: str | None = f(default="Never",
                                         enum=("Never", "LowerPriority", "LowerOrNewerEqualPriority"))


class ClusterQueueSpec(Model):
    __rules__ = (Rule(
        "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, "
        "f.resources.all(r, !has(r.borrowingLimit)))) : true",
        "borrowingLimit must be nil when cohort is empty"),)

    resource_groups: list[ResourceGroup] | None = resource_groups_field()
    cohort_name: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN)
    queueing_strategy: str | None = f(default="BestEffortFIFO", enum=QUEUEING_STRATEGIES)
    namespace_selector: LabelSelector | None = f(map_type="atomic")
    flavor_fungibility: FlavorFungibility | None = f(default={})
    preemption: ClusterQueuePreemption | None = f(default={})
    admission_checks_strategy: AdmissionChecksStrategy | None = f()
    stop_policy: str | None = f(default="None", enum=STOP_POLICIES)
    fair_sharing: FairSharing | None = f()
    admission_scope: AdmissionScope | None = f()
    concurrent_admission_policy: ConcurrentAdmissionPolicy | None = f()


class ClusterQueueStatus(Model):
    conditions: list[Condition] | None = conditions_field()
    flavors_reservation: list[FlavorUsage] | None = f(max_items=64, list_type="map", map_keys=("name",))
    flavors_usage: list[FlavorUsage] | None = f(max_items=64, list_type="map", map_keys=("name",))
    pending_workloads: int | None = f(fmt="int32")
    reserving_workloads: int | None = f(fmt="int32")
    admitted_workloads: int | None = f(fmt="int32")
    fair_sharing: FairSharingStatus | None = f()


class ClusterQueue(Resource):
    KIND = "ClusterQueue"
    PLURAL = "clusterqueues"
    SINGULAR = "clusterqueue"
    SHORT_NAMES = ("cq",)
    STATUS_SUBRESOURCE = True
    PRINTER_COLUMNS = (
        PrinterColumn("Cohort", "string", ".spec.cohortName", "Cohort that this ClusterQueue belongs to"),
        PrinterColumn("Strategy", "string", ".spec.queueingStrategy",
                      "The queueing strategy used to prioritize workloads", priority=1),
        PrinterColumn("Pending Workloads", "integer", ".status.pendingWorkloads",
                      "Number of pending workloads"),
        PrinterColumn("Admitted Workloads", "integer", ".status.admittedWorkloads",
                      "Number of admitted workloads that haven't finished yet", priority=1),
    )

    spec: ClusterQueueSpec | None = f()
    status: ClusterQueueStatus | None = f()
