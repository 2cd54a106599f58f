"""LocalQueue: the namespaced queue users submit to, backed by one ClusterQueue."""

from __future__ import annotations

from pykueue.api.fields import Model, Rule, f
from pykueue.api.meta import DNS1123_SUBDOMAIN, Condition, conditions_field
from pykueue.api.quota import FairSharing, LocalQueueFairSharingStatus, LocalQueueFlavorUsage
from pykueue.api.resource import PrinterColumn, Resource

STOP_POLICIES = ("None", "Hold", "HoldAndDrain")


class LocalQueueSpec(Model):
    cluster_queue: str | None = f(max_length=253, pattern=DNS1123_SUBDOMAIN,
                                  rules=(Rule("self == oldSelf", "field is immutable"),))
    stop_policy: str | None = f(default="None", enum=STOP_POLICIES)
    fair_sharing: FairSharing | None = f()


class LocalQueueStatus(Model):
    conditions: list[Condition] | None = conditions_field()
    pending_workloads: int | None = f(fmt="int32")
    reserving_workloads: int | None = f(fmt="int32")
    admitted_workloads: int | None = f(fmt="int32")
    flavors_reservation: list[LocalQueueFlavorUsage] | None = f(max_items=64, list_type="map",
                                                                map_keys=("name",))
    flavors_usage: list[LocalQueueFlavorUsage] | None = f(max_items=64, list_type="map", map_keys=("name",))
    fair_sharing: LocalQueueFairSharingStatus | None = f()


class LocalQueue(Resource):
    KIND = "LocalQueue"
    PLURAL = "localqueues"
    SINGULAR = "localqueue"
    SHORT_NAMES = ("queue", "queues", "lq")
    NAMESPACED = True
    STATUS_SUBRESOURCE = True
    PRINTER_COLUMNS = (
        PrinterColumn("ClusterQueue", "string", ".spec.clusterQueue", "Backing ClusterQueue"),
        PrinterColumn("Pending Workloads", "integer", ".status.pendingWorkloads",
                      "Number of pending workloads"),
        PrinterColumn("Admitted Workloads", "integer", ".status.admittedWorkloads",
                      "Number of admitted workloads that haven't finished yet."),
    )

    spec: LocalQueueSpec | None = f()
    status: LocalQueueStatus | None = f()
