"""The core's public API: events in, decision values out, hooks for preemption and TAS."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pykueue.manager.core.assignment import Assignment, Entry, Outcome
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.hooks import NO_CANDIDATES, PREEMPT
from pykueue.manager.core.objects import FR, ClusterQueueDef
from pykueue.manager.core.reasons import Pending
from pykueue.manager.core.snapshot import Snapshot
from pykueue.manager.core.status import workload_status


def _setup(core: QueueingCore, cpu: int = 4, topology: str | None = None, **cq_spec: Any) -> None:
    rf: dict[str, Any] = {"nodeLabels": {"rack": "r"}, "topologyName": topology} if topology else {}
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": rf})
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, **cq_spec,
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq"}})


def _wl(core: QueueingCore, name: str, cpu: int, priority: int = 0, **podset: Any) -> None:
    core.apply({"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
        "queueName": "lq", "priority": priority, "podSets": [{
            "name": "main", "count": 1, **podset, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}})


def test_a_cycle_decides_without_changing_the_cache() -> None:
    core = QueueingCore()
    _setup(core)
    _wl(core, "a", 3)
    result = core.next_cycle()
    assert [(d.key, d.outcome) for d in result.decisions] == [("ns/a", Outcome.ADMIT)]
    assert core.usage_of("cq") == {} and core.workload("ns/a").status == "Pending"
    core.apply_cycle(result)
    assert core.usage_of("cq") == {("rf", "cpu"): 3000}
    assert core.workload("ns/a").status == "Admitted"


def test_status_is_kueue_shaped() -> None:
    core = QueueingCore(now=1_000_000.0)
    _setup(core)
    _wl(core, "a", 3)
    _wl(core, "b", 3)
    core.run_until_idle()
    admitted = workload_status(core.workload("ns/a"), core.now)
    assignment = admitted["admission"]["podSetAssignments"][0]
    assert admitted["admission"]["clusterQueue"] == "cq"
    assert assignment == {"name": "main", "flavors": {"cpu": "rf"}, "count": 1, "resourceUsage": {"cpu": "3"}}
    kinds = {c["type"]: (c["status"], c["reason"]) for c in admitted["conditions"]}
    assert kinds == {"QuotaReserved": ("True", "QuotaReserved"), "Admitted": ("True", "Admitted")}
    pending = workload_status(core.workload("ns/b"), core.now)
    assert "admission" not in pending
    assert pending["conditions"][0]["status"] == "False"
    assert "insufficient unused quota" in pending["conditions"][0]["message"]


class RecordingPreemption:
    """Says a victim exists in the same queue and offers the lowest-priority holder."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def oracle(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int, priority: int) -> str:
        lower = [r for r in snapshot.holding.get(cq.name, {}).values() if r.priority < priority]
        return PREEMPT if lower else NO_CANDIDATES

    def targets(self, snapshot: Snapshot, entry: Entry) -> Sequence[str]:
        self.asked.append(entry.workload.key)
        holders = sorted(snapshot.holding.get(entry.cluster_queue, {}).values(), key=lambda r: r.priority)
        return [holders[0].key] if holders and holders[0].priority < entry.priority else []


def test_preemption_hook_chooses_victims_and_the_preemptor_waits_a_cycle() -> None:
    hook = RecordingPreemption()
    core = QueueingCore(preemption=hook)
    _setup(core)
    _wl(core, "low", 4, priority=1)
    core.run_until_idle()
    _wl(core, "high", 4, priority=10)
    first = core.next_cycle()
    decided = [(d.key, d.outcome, d.targets) for d in first.decisions]
    assert decided == [("ns/high", Outcome.PREEMPT, ("ns/low",))]
    core.apply_cycle(first)
    assert core.workload("ns/low").evictions == ["Preempted"]
    core.run_until_idle()
    assert core.workload("ns/high").status == "Admitted"
    assert core.workload("ns/low").status == "Pending"
    # The evicted workload asks too when it comes back: it would need preemption to fit.
    assert hook.asked == ["ns/high", "ns/low"]


class FixedPlacement:
    def __init__(self, result: dict[str, Any] | None) -> None:
        self.result = result
        self.calls: list[tuple[str, int, str]] = []

    def place(self, snapshot: Snapshot, entry: Entry, assignment: Assignment,
              podset_index: int, topology_name: str) -> dict[str, Any] | bool | None:
        self.calls.append((entry.workload.key, podset_index, topology_name))
        return self.result


def test_topology_hook_is_asked_for_topology_flavors_only() -> None:
    placement = {"levels": ["rack"], "domains": [{"values": ["r1"], "count": 1}]}
    hook = FixedPlacement(placement)
    core = QueueingCore(topology=hook)
    _setup(core, topology="default-topology")
    _wl(core, "a", 1)
    core.run_until_idle()
    assert hook.calls == [("ns/a", 0, "default-topology")]
    assert core.workload("ns/a").assignment is not None
    assert core.workload("ns/a").assignment.podsets[0].topology_assignment == placement

    plain = FixedPlacement(placement)
    core = QueueingCore(topology=plain)
    _setup(core)
    _wl(core, "a", 1)
    core.run_until_idle()
    assert plain.calls == []


def test_failed_placement_keeps_the_workload_pending() -> None:
    core = QueueingCore(topology=FixedPlacement(None))
    _setup(core, topology="t")
    _wl(core, "a", 1)
    core.run_until_idle()
    assert core.workload("ns/a").status == "Pending"
    assert "topology placement failed" in core.workload("ns/a").reason


def test_timers_drive_backoff() -> None:
    core = QueueingCore()
    core.apply({"kind": "AdmissionCheck", "metadata": {"name": "chk"}})
    _setup(core, admissionChecksStrategy={"admissionChecks": [{"name": "chk"}]})
    _wl(core, "a", 1)
    core.run_until_idle()
    assert core.set_check_state("ns/a", "chk", "Retry")
    deadline = core.next_deadline()
    assert deadline == core.now + 60
    core.fire_timers(deadline - 1)
    core.run_until_idle()
    assert core.workload("ns/a").status == "Pending"
    core.fire_timers(deadline)
    core.run_until_idle()
    assert core.workload("ns/a").status == "QuotaReserved"


def test_an_entry_needing_preemption_holds_capacity_within_its_cycle() -> None:
    core = QueueingCore()
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}})
    for name, nominal in (("a", 4), ("b", 1)):
        core.apply({"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
            "cohortName": "co", "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]}})
        core.apply({"kind": "LocalQueue", "metadata": {"name": name, "namespace": "ns"},
                    "spec": {"clusterQueue": name}})

    def wl(name: str, queue: str, cpu: int) -> None:
        core.apply({"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
            "queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}})

    wl("b-running", "b", 4)  # b borrows 3 of a's quota
    core.run_until_idle()
    wl("a-needs-its-quota", "a", 4)
    wl("b-more", "b", 1)
    decisions = {d.key: d for d in core.next_cycle().decisions}
    # a's head would need preemption (no candidates): it holds a's nominal quota for this
    # cycle, so b cannot borrow the last free CPU under it.
    assert decisions["ns/a-needs-its-quota"].outcome == Outcome.PENDING
    assert decisions["ns/b-more"].outcome == Outcome.PENDING
    pending = decisions["ns/b-more"].pending
    assert pending is not None and pending.kind is Pending.NO_LONGER_FITS


def test_take_changes_reports_what_to_write() -> None:
    core = QueueingCore()
    _setup(core, cpu=2)
    _wl(core, "a", 2)
    _wl(core, "b", 2)
    core.run_until_idle()
    assert core.take_changes().written == {"ns/a", "ns/b"}
    core.run_until_idle()
    assert core.take_changes().written == set()  # nothing new: nothing to write
    core.finish("ns/a")
    core.run_until_idle()
    assert core.take_changes().written == {"ns/a", "ns/b"}


def _drained(core: QueueingCore, stop: str) -> dict[str, tuple[str, str, str]]:
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "stopPolicy": stop,
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}})
    core.run_until_idle()
    status = workload_status(core.workload("ns/a"), core.now)
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def test_a_drained_workload_waits_with_requeued_false_until_its_queue_runs_again() -> None:
    # Kueue: Evicted and Requeued carry ClusterQueueStopped while stopped; on restart the
    # workload controller sets Requeued True (ClusterQueueRestarted).
    core = QueueingCore()
    _setup(core)
    _wl(core, "a", 3)
    core.run_until_idle()
    conds = _drained(core, "HoldAndDrain")
    assert conds["Evicted"] == ("True", "ClusterQueueStopped", "The ClusterQueue is stopped")
    assert conds["Requeued"] == ("False", "ClusterQueueStopped", "The ClusterQueue is stopped")
    assert conds["QuotaReserved"][0] == "False"
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {  # full again: it waits
        "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}})
    core.run_until_idle()
    status = workload_status(core.workload("ns/a"), core.now)
    conds = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    assert conds["Requeued"] == ("True", "ClusterQueueRestarted",
                                 "The ClusterQueue was restarted after being stopped")
    assert conds["Evicted"][:2] == ("True", "ClusterQueueStopped")


def _cohort_member(name: str, nominal: int, **spec: Any) -> dict[str, Any]:
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "cohortName": "co", "namespaceSelector": {}, **spec,
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]}}


def overlapping_preemptors() -> QueueingCore:
    """x and y each reclaim their 2 CPUs from the one workload borrowing all 4."""
    core = QueueingCore()
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}})
    reclaim = {"preemption": {"reclaimWithinCohort": "Any"}}
    for obj in (_cohort_member("borrower", 0), _cohort_member("x", 2, **reclaim),
                _cohort_member("y", 2, **reclaim)):
        core.apply(obj)
        name = obj["metadata"]["name"]
        core.apply({"kind": "LocalQueue", "metadata": {"name": name, "namespace": "ns"},
                    "spec": {"clusterQueue": name}})

    def wl(name: str, queue: str, cpu: int) -> None:
        core.apply({"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
            "queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}})

    wl("victim", "borrower", 4)
    core.run_until_idle()
    wl("x-wl", "x", 2)
    wl("y-wl", "y", 2)
    return core


def test_a_preemptor_whose_targets_another_took_is_a_preemption_skip_of_its_queue() -> None:
    result = overlapping_preemptors().next_cycle()
    decisions = {d.key: d for d in result.decisions}
    assert decisions["ns/x-wl"].outcome == Outcome.PREEMPT and decisions["ns/x-wl"].targets == ("ns/victim",)
    skipped = decisions["ns/y-wl"].pending
    assert skipped is not None and skipped.kind is Pending.OVERLAPPING_TARGETS
    assert result.preemption_skips == {"y": 1}
