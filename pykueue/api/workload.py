"""Workload: the unit of admission. Its spec lists pod sets; its status carries the
admission (flavors, counts, topology assignment), checks, requeue state and conditions."""

from __future__ import annotations

from typing import Any

from pykueue.api.fields import Items, Model, Rule, f
from pykueue.api.meta import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    NAME_ITEMS,
    Condition,
    Toleration,
    conditions_field,
    tolerations_field,
)
from pykueue.api.quantity import Quantity
from pykueue.api.resource import PrinterColumn, Resource

_RESERVED = "has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == " \
    "'QuotaReserved' && c.status == 'True')"
_OLD_RESERVED = _RESERVED.replace("self.", "oldSelf.").replace("has(self)", "has(oldSelf)")

# The embedded pod template keeps everything: its schema is the apiserver's business.
_POD_TEMPLATE_SCHEMA = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}



def podset_name(required: bool = False) -> Any:
    """A pod set name: a DNS label, ``main`` when left out."""
    if required:
        return f(required=True, max_length=63, pattern=DNS1123_LABEL)
    return f(default="main", max_length=63, pattern=DNS1123_LABEL)


class SliceTopologyConstraint(Model):
    topology: str = f(required=True, min_length=1, max_length=63)
    size: int = f(required=True, minimum=1, fmt="int32")


class PodSetTopologyRequest(Model):
    required: str | None = f(max_length=63)
    preferred: str | None = f(max_length=63)
    unconstrained: bool | None = f()
    pod_index_label: str | None = f(max_length=317)
    sub_group_index_label: str | None = f(max_length=317)
    sub_group_count: int | None = f(minimum=0, fmt="int32")
    pod_set_group_name: str | None = f(max_length=256)
    pod_set_slice_required_topology: str | None = f(max_length=63)
    pod_set_slice_size: int | None = f(minimum=1, fmt="int32")
    podset_slice_required_topology_constraints: list[SliceTopologyConstraint] | None = f(
        max_items=3, list_type="atomic")


class PodSet(Model):
    __rules__ = (Rule("has(self.minCount) ? self.minCount <= self.count : true",
                      "minCount should be positive and less or equal to count"),)

    name: str | None = podset_name()
    template: dict[str, Any] = f(required=True, schema=_POD_TEMPLATE_SCHEMA)
    count: int | None = f(default=1, minimum=0, fmt="int32")
    min_count: int | None = f(minimum=1, fmt="int32")
    topology_request: PodSetTopologyRequest | None = f()


class PriorityClassRef(Model):
    __rules__ = (
        Rule("(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
             "kind must be PriorityClass when group is scheduling.k8s.io"),
        Rule("(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
             "kind must be WorkloadPriorityClass when group is kueue.x-k8s.io"),
    )

    group: str = f(required=True, enum=("kueue.x-k8s.io", "scheduling.k8s.io"))
    kind: str = f(required=True, enum=("WorkloadPriorityClass", "PriorityClass"))
    name: str = f(required=True, min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN)


class PreemptionGate(Model):
    name: str = f(required=True, min_length=1, max_length=63)


class WorkloadSpec(Model):
    __rules__ = (Rule("!has(self.priorityClassRef) || has(self.priority)",
                      "priority should not be nil when priorityClassRef is set"),)

    pod_sets: list[PodSet] | None = f(min_items=1, max_items=18, list_type="map", map_keys=("name",))
    queue_name: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN)
    priority_class_ref: PriorityClassRef | None = f()
    priority: int | None = f(fmt="int32")
    active: bool | None = f(default=True)
    maximum_execution_time_seconds: int | None = f(minimum=1, fmt="int32")
    preemption_gates: list[PreemptionGate] | None = f(max_items=8, list_type="map", map_keys=("name",))


# -- status: admission ---------------------------------------------------------------------
class PodCounts(Model):
    __rules__ = (Rule("[has(self.universal),has(self.individual)].filter(x,x==true).size() == 1",
                      "exactly one of the fields in [universal individual] must be set"),)

    universal: int | None = f(minimum=1, fmt="int32")
    individual: list[int] | None = f(min_items=1, max_items=100000, list_type="atomic",
                                     items=Items(minimum=1, fmt="int32"))


class IndividualValues(Model):
    prefix: str | None = f(max_length=63)
    roots: list[str] = f(required=True, min_items=1, max_items=100000, list_type="atomic",
                         items=Items(max_length=63))
    suffix: str | None = f(max_length=63)


class LevelValues(Model):
    __rules__ = (Rule("has(self.universal) != has(self.individual)",
                      "exactly one of the fields in [universal individual] must be set"),)

    universal: str | None = f(max_length=63)
    individual: IndividualValues | None = f()


class TopologyAssignmentSlice(Model):
    __rules__ = (
        Rule("!has(self.podCounts.individual) || size(self.podCounts.individual) == self.domainCount",
             "podCounts.individual must have length equal to domainCount"),
        Rule("self.valuesPerLevel.all(x, !has(x.individual) || size(x.individual.roots) == self.domainCount)",
             "valuesPerLevel.individual.roots must have length equal to domainCount"),
    )

    domain_count: int = f(required=True, minimum=1, fmt="int32")
    values_per_level: list[LevelValues] = f(required=True, min_items=1, max_items=16, list_type="atomic")
    pod_counts: PodCounts = f(required=True)


class TopologyAssignment(Model):
    __rules__ = (Rule("self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
                      "valuesPerLevel must have the same length as levels"),)

    levels: list[str] = f(required=True, min_items=1, max_items=16, list_type="atomic",
                          items=Items(max_length=317))
    slices: list[TopologyAssignmentSlice] = f(required=True, max_items=1000, list_type="atomic")


class PodSetAssignment(Model):
    name: str | None = podset_name()
    flavors: dict[str, str] | None = f(items=NAME_ITEMS)
    resource_usage: dict[str, Quantity] | None = f()
    count: int | None = f(minimum=0, fmt="int32")
    topology_assignment: TopologyAssignment | None = f()
    delayed_topology_request: str | None = f(max_length=7, enum=("Pending", "Ready"))


class Admission(Model):
    cluster_queue: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN)
    pod_set_assignments: list[PodSetAssignment] | None = f(max_items=18, list_type="map", map_keys=("name",))


# -- status: checks, requeueing and the rest -------------------------------------------------
class PodSetUpdate(Model):
    name: str = podset_name(required=True)
    labels: dict[str, str] | None = f()
    annotations: dict[str, str] | None = f()
    node_selector: dict[str, str] | None = f()
    tolerations: list[Toleration] | None = tolerations_field()


class AdmissionCheckState(Model):
    name: str = f(required=True, min_length=1, max_length=316)
    state: str = f(required=True, enum=("Pending", "Ready", "Retry", "Rejected"))
    last_transition_time: str = f(required=True, fmt="date-time")
    message: str = f(required=True, max_length=32768)
    pod_set_updates: list[PodSetUpdate] | None = f(max_items=18, list_type="atomic")
    retry_count: int | None = f(minimum=0, fmt="int32")
    requeue_after_seconds: int | None = f(minimum=0, fmt="int32")


class RequeueState(Model):
    count: int | None = f(minimum=0, fmt="int32")
    requeue_at: str | None = f(fmt="date-time")


class ReclaimablePod(Model):
    name: str = podset_name(required=True)
    count: int = f(required=True, minimum=0, fmt="int32")


class PodSetRequest(Model):
    name: str = podset_name(required=True)
    resources: dict[str, Quantity] | None = f()


class WorkloadSchedulingStatsEviction(Model):
    reason: str = f(required=True, max_length=316)
    underlying_cause: str = f(required=True, max_length=316)
    count: int = f(required=True, minimum=0, fmt="int32")


class SchedulingStats(Model):
    evictions: list[WorkloadSchedulingStatsEviction] | None = f(
        max_items=256, list_type="map", map_keys=("reason", "underlyingCause"))


class UnhealthyNode(Model):
    name: str = f(required=True, max_length=63)


class PreemptionGateState(Model):
    name: str = f(required=True, min_length=1, max_length=63)
    position: str = f(required=True, enum=("Closed", "Open"))
    last_transition_time: str = f(required=True, fmt="date-time")


class WorkloadStatus(Model):
    __rules__ = (
        Rule("!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
             "clusterName is immutable once set"),
        Rule("!has(self.clusterName) || (!has(self.nominatedClusterNames) || "
             "(has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
             "clusterName and nominatedClusterNames are mutually exclusive"),
    )

    conditions: list[Condition] | None = conditions_field()
    admission: Admission | None = f()
    requeue_state: RequeueState | None = f()
    reclaimable_pods: list[ReclaimablePod] | None = f(max_items=18, list_type="map", map_keys=("name",))
    admission_checks: list[AdmissionCheckState] | None = f(max_items=8, list_type="map", map_keys=("name",))
    resource_requests: list[PodSetRequest] | None = f(max_items=18, list_type="map", map_keys=("name",))
    accumulated_past_execution_time_seconds: int | None = f(fmt="int32")
    scheduling_stats: SchedulingStats | None = f()
    nominated_cluster_names: list[str] | None = f(max_items=20, list_type="atomic",
                                                  items=Items(max_length=256))
    cluster_name: str | None = f(max_length=256)
    unhealthy_nodes: list[UnhealthyNode] | None = f(max_items=8, list_type="map", map_keys=("name",))
    preemption_gates: list[PreemptionGateState] | None = f(max_items=8, list_type="map", map_keys=("name",))


_OLD_ADMITTED = _OLD_RESERVED.replace("QuotaReserved", "Admitted")
_ADMITTED = _RESERVED.replace("QuotaReserved", "Admitted")
_BOTH_REFS = "has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)"


class Workload(Resource):
    __rules__ = (
        Rule(f"{_RESERVED} && has(self.status.admission) ? "
             "size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
             "podSetAssignments must have the same number of podSets as the spec"),
        Rule(f"({_OLD_RESERVED}) ? (!has(oldSelf.spec.priorityClassRef) && !has(self.spec.priorityClassRef)) "
             f"|| ({_BOTH_REFS}) : true",
             "priorityClassRef is immutable while workload quota reserved"),
        *(Rule(f"({_OLD_RESERVED} && {_BOTH_REFS}) ? "
               f"oldSelf.spec.priorityClassRef.{part} == self.spec.priorityClassRef.{part} : true",
               f"priorityClassRef.{part} is immutable while workload quota reserved")
          for part in ("group", "kind")),
        Rule(f"({_OLD_RESERVED} && {_BOTH_REFS} && self.spec.priorityClassRef.group == 'scheduling.k8s.io' "
             "&& self.spec.priorityClassRef.kind == 'PriorityClass') ? "
             "oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true",
             "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass "
             "while workload quota reserved"),
        Rule(f"(({_OLD_RESERVED}) && ({_RESERVED})) ? ((has(oldSelf.spec.queueName) == "
             "has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || "
             "oldSelf.spec.queueName == self.spec.queueName)) : true",
             "queueName is immutable while workload quota reserved"),
        Rule(f"(({_OLD_ADMITTED}) && ({_ADMITTED}))?((has(oldSelf.spec.maximumExecutionTimeSeconds)?"
             "oldSelf.spec.maximumExecutionTimeSeconds:0) ==  (has(self.spec.maximumExecutionTimeSeconds)?"
             "self.spec.maximumExecutionTimeSeconds:0)):true",
             "maximumExecutionTimeSeconds is immutable while workload quota reserved"),
    )

    KIND = "Workload"
    PLURAL = "workloads"
    SINGULAR = "workload"
    SHORT_NAMES = ("kwl", "kueueworkload", "kueueworkloads")
    NAMESPACED = True
    STATUS_SUBRESOURCE = True
    SELECTABLE_FIELDS = (".status.admission.clusterQueue",)
    PRINTER_COLUMNS = (
        PrinterColumn("Queue", "string", ".spec.queueName",
                      "Name of the queue this workload was submitted to"),
        PrinterColumn("Reserved in", "string", ".status.admission.clusterQueue",
                      "Name of the ClusterQueue where the workload is reserving quota"),
        PrinterColumn("Admitted", "string", ".status.conditions[?(@.type=='Admitted')].status",
                      "Admission status"),
        PrinterColumn("Finished", "string", ".status.conditions[?(@.type=='Finished')].status",
                      "Workload finished"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time this workload was created"),
    )

    spec: WorkloadSpec | None = f()
    status: WorkloadStatus | None = f()
