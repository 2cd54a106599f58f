"""Which Events a Workload status write stands for, with Kueue v0.19's exact wording.

The core decides, its record renders the status, and the events are read off the stored
object before and after that write, as the manager's status writer does. The expected
texts are written out by hand from Kueue's sources (pkg/scheduler/scheduler.go,
pkg/scheduler/preemption/preemption.go, pkg/workload/evict, pkg/controller/core), not
rebuilt from our own helpers, so a rewording on either side fails here.
"""

from __future__ import annotations

import copy
from typing import Any

from pykueue.api.events import NORMAL, WARNING, EventRecord, ObjectReference
from pykueue.manager.core.config import CoreConfig, WaitForPodsReady
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.events import evicted_event_reason, retention_deleted, workload_events
from pykueue.manager.core.objects import format_time, parse_time
from pykueue.manager.core.status import workload_status

CREATED = "2026-01-01T00:00:00Z"
T0 = parse_time(CREATED) or 0.0
API = "kueue.x-k8s.io/v1beta2"


class Stored:
    """The API's copies of the Workloads: written from the core's records, each write
    turned into the events it stands for (the manager's status writer, without I/O)."""

    def __init__(self, core: QueueingCore) -> None:
        self.core = core
        self.objects: dict[str, dict[str, Any]] = {}
        self.rv = 0

    def add(self, name: str, cpu: int = 1, priority: int = 0, queue: str = "lq") -> None:
        obj: dict[str, Any] = {
            "apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid", "creationTimestamp": CREATED},
            "spec": {"queueName": queue, "priority": priority, "podSets": [{
                "name": "main", "count": 1, "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}
        self.objects[f"ns/{name}"] = self._stamp(obj)
        self.core.apply(copy.deepcopy(obj))

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    def write(self, name: str, now: float, tiered: bool = False) -> list[EventRecord]:
        key = f"ns/{name}"
        rec = self.core.workload(key)
        before = self.objects[key]
        after = self._stamp({**copy.deepcopy(before),
                             "status": workload_status(rec, self.core.now, tiered=tiered)})
        self.objects[key] = after
        return workload_events(before, after, rec, now, tiered=tiered)


def _core(checks: tuple[str, ...] = (), **config: Any) -> QueueingCore:
    core = QueueingCore(CoreConfig(hold_quota_until_stopped=True, **config), now=T0 + 12.4)
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    for check in checks:
        core.apply({"kind": "AdmissionCheck", "metadata": {"name": check}})
    spec: dict[str, Any] = {
        "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})
    return core


def _ref(name: str, rv: str) -> ObjectReference:
    return ObjectReference(API, "Workload", name, "ns", f"{name}-uid", rv)


def _said(events: list[EventRecord]) -> list[tuple[str, str, str, str]]:
    return [(e.type, e.reason, e.note, e.reporter) for e in events]


def test_a_reservation_without_checks_records_quota_reserved_then_admitted() -> None:
    core = _core()
    api = Stored(core)
    api.add("a")
    core.run_until_idle()
    events = api.write("a", now=T0 + 12.4)
    assert _said(events) == [
        (NORMAL, "QuotaReserved", "Quota reserved in ClusterQueue cq, wait time since queued was 12s",
         "kueue-admission"),
        (NORMAL, "Admitted", "Admitted by ClusterQueue cq, wait time since reservation was 0s",
         "kueue-admission"),
    ]
    assert all(e.regarding == _ref("a", "2") and e.event_action == e.reason for e in events)
    assert api.write("a", now=T0 + 20) == [], "writing the same status again records nothing"


def test_the_queued_wait_counts_from_the_requeue() -> None:
    """Kueue's QueuedWaitTime: from the Requeued condition's transition when there is one."""
    core = _core()
    api = Stored(core)
    api.add("a")
    api.objects["ns/a"]["status"] = {"conditions": [
        {"type": "Requeued", "status": "True", "reason": "Preempted", "message": "",
         "lastTransitionTime": format_time(T0 + 100)}]}
    core.run_until_idle()
    events = api.write("a", now=T0 + 145.6)
    assert events[0].note == "Quota reserved in ClusterQueue cq, wait time since queued was 46s"


def test_an_admission_after_the_checks_is_the_workload_controllers() -> None:
    core = _core(checks=("prov",))
    api = Stored(core)
    api.add("a")
    core.run_until_idle()
    assert [e.reason for e in api.write("a", now=T0 + 12.4)] == ["QuotaReserved"]
    core.advance_clock(T0 + 42.4)
    assert core.set_check_state("ns/a", "prov", "Ready")
    assert _said(api.write("a", now=T0 + 42.4)) == [
        (NORMAL, "Admitted", "Admitted by ClusterQueue cq, wait time since reservation was 30s",
         "kueue-workload-controller")]


def test_a_scheduling_verdict_is_a_pending_warning_recorded_when_it_changes() -> None:
    core = _core()
    api = Stored(core)
    api.add("big", cpu=5)
    core.run_until_idle()
    message = ("couldn't assign flavors to pod set main: insufficient quota for cpu in flavor rf, "
               "request > maximum capacity (5 > 4)")
    assert _said(api.write("big", now=T0 + 13)) == [(WARNING, "Pending", message, "kueue-admission")]
    assert api.write("big", now=T0 + 14) == [], "the same verdict again is no new event"


def test_with_the_tiers_the_pending_warning_carries_the_tier() -> None:
    core = _core(tiered_reasons=True)
    api = Stored(core)
    api.add("big", cpu=5)
    core.run_until_idle()
    [event] = api.write("big", now=T0 + 13, tiered=True)
    assert (event.type, event.reason) == (WARNING, "ExceedsMaxQuota")


def test_a_reason_found_while_routing_is_no_scheduler_event() -> None:
    """A missing LocalQueue is the workload controller's finding: Kueue records no event."""
    core = _core()
    api = Stored(core)
    api.add("lost", queue="nowhere")
    assert "doesn't exist" in core.workload("ns/lost").reason
    assert api.write("lost", now=T0 + 13) == []


def test_a_preemption_records_the_eviction_the_preemption_and_the_preemptors_side() -> None:
    core = _core()
    api = Stored(core)
    api.add("low", cpu=4)
    core.run_until_idle()
    api.write("low", now=T0 + 13)
    api.add("high", cpu=4, priority=10)
    core.run_until_idle()
    assert core.workload("ns/low").stopping is not None
    events = api.write("low", now=T0 + 14)
    why = ("Preempted to accommodate a workload (UID: high-uid, JobUID: UNKNOWN) due to prioritization in "
           "the ClusterQueue; preemptor path: /cq; preemptee path: /cq")
    priorities = ("; preemptor effective priority: 10 (base: 10, boost: 0); "
                  "preemptee effective priority: 0 (base: 0, boost: 0)")
    assert _said(events) == [
        (NORMAL, "EvictedDueToPreempted", why, "kueue-admission"),
        (NORMAL, "Preempted", why + priorities, "kueue-admission"),
        (NORMAL, "PreemptedWorkload",
         "Preempted workload ns/low (UID: low-uid) in ClusterQueue cq" + priorities, "kueue-admission"),
    ]
    assert [e.regarding.name for e in events] == ["low", "low", "high"]
    assert events[2].regarding == ObjectReference(API, "Workload", "high", "ns", "high-uid")
    condition = {c["type"]: c for c in api.objects["ns/low"]["status"]["conditions"]}["Evicted"]
    assert condition["message"] == why, "the event's note is the condition's message"
    core.job_stopped("ns/low")
    core.run_until_idle()
    # Requeued after its job stopped: no second eviction, only the scheduler's verdict on it.
    assert _said(api.write("low", now=T0 + 15)) == [
        (WARNING, "Pending", "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
         "flavor rf, 4 more needed", "kueue-admission")]


def test_a_pods_ready_timeout_eviction() -> None:
    core = _core(wait_for_pods_ready=WaitForPodsReady(timeout=60.0))
    api = Stored(core)
    api.add("a")
    core.run_until_idle()
    api.write("a", now=T0 + 13)
    core.fire_timers(T0 + 100)
    assert _said(api.write("a", now=T0 + 100)) == [
        (NORMAL, "EvictedDueToPodsReadyTimeout", "Exceeded the PodsReady timeout ns/a",
         "kueue-workload-controller")]


def test_deactivations_by_the_user_and_by_a_rejected_check() -> None:
    core = _core(checks=("prov",))
    api = Stored(core)
    api.add("user")
    api.add("rejected")
    core.run_until_idle()
    api.write("user", now=T0 + 13)
    api.write("rejected", now=T0 + 13)
    inactive = copy.deepcopy(api.objects["ns/user"])
    inactive["spec"]["active"] = False
    core.apply(inactive)
    assert _said(api.write("user", now=T0 + 14)) == [
        (NORMAL, "EvictedDueToDeactivated", "The workload is deactivated", "kueue-workload-controller")]
    assert core.set_check_state("ns/rejected", "prov", "Rejected")
    assert _said(api.write("rejected", now=T0 + 14)) == [
        (WARNING, "AdmissionCheckRejected", 'Deactivated due to AdmissionCheck in Rejected state: "prov"',
         "kueue-workload-controller"),
        (NORMAL, "EvictedDueToDeactivatedDueToAdmissionCheck",
         'The workload is deactivated due to AdmissionCheck in Rejected state: "prov"',
         "kueue-workload-controller"),
    ]


def test_a_retry_check_eviction_and_a_stopped_local_queue() -> None:
    core = _core(checks=("prov",))
    api = Stored(core)
    api.add("retry")
    api.add("drained")
    core.run_until_idle()
    assert core.set_check_state("ns/drained", "prov", "Ready")
    api.write("retry", now=T0 + 13)
    api.write("drained", now=T0 + 13)
    assert core.set_check_state("ns/retry", "prov", "Retry")
    assert _said(api.write("retry", now=T0 + 14)) == [
        (NORMAL, "EvictedDueToAdmissionCheck", 'Evicted due to AdmissionCheck in Retry state: "prov"',
         "kueue-workload-controller")]
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq", "stopPolicy": "HoldAndDrain"}})
    core.run_until_idle()
    assert _said(api.write("drained", now=T0 + 15)) == [
        (NORMAL, "EvictedDueToLocalQueueStopped", "The LocalQueue is stopped", "kueue-workload-controller")]


def test_a_replaced_slice_and_a_retention_deletion() -> None:
    core = _core()
    api = Stored(core)
    api.add("old")
    core.run_until_idle()
    api.write("old", now=T0 + 13)
    message = ("Replaced to accommodate a workload (UID: new-uid, JobUID: job) due to workload slice "
               "aggregation")
    core.workload("ns/old").finished_as = ("WorkloadSliceReplaced", message)
    core.finish("ns/old")
    [event] = api.write("old", now=T0 + 14)
    assert (event.reason, event.event_action, event.note, event.reporter) == (
        "WorkloadSliceReplaced", "Replaced", message, "kueue-admission")
    deleted = retention_deleted(api.objects["ns/old"])
    assert (deleted.reason, deleted.note, deleted.reporter, deleted.regarding.resource_version) == (
        "Deleted", "Deleted finished workload due to elapsed retention", "kueue-workload-controller", "")


def test_evicted_event_reasons_follow_kueues_reason_with_cause() -> None:
    assert evicted_event_reason("Preempted") == "EvictedDueToPreempted"
    assert evicted_event_reason("Deactivated") == "EvictedDueToDeactivated"
    assert evicted_event_reason("DeactivatedDueToRequeuingLimitExceeded") == \
        "EvictedDueToDeactivatedDueToRequeuingLimitExceeded"
    assert evicted_event_reason("NodeFailures") == "EvictedDueToNodeFailures"


def test_a_workload_past_its_maximum_execution_time() -> None:
    core = _core()
    api = Stored(core)
    api.add("limited")
    limited = copy.deepcopy(api.objects["ns/limited"])
    limited["spec"]["maximumExecutionTimeSeconds"] = 10
    api.objects["ns/limited"] = limited
    core.apply(copy.deepcopy(limited))
    core.run_until_idle()
    api.write("limited", now=core.now)
    core.fire_timers(core.now + 10)
    assert _said(api.write("limited", now=core.now)) == [
        (WARNING, "MaximumExecutionTimeExceeded", "The maximum execution time (10s) exceeded",
         "kueue-workload-controller"),
        (NORMAL, "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded",
         "The workload is deactivated due to exceeding the maximum execution time",
         "kueue-workload-controller"),
    ]
