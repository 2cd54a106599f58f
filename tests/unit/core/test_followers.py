"""Followers: more than one admission of a ClusterQueue in one cycle (kubernetes-sigs/kueue#14477).

Kueue pops one head per ClusterQueue per cycle; once a head is admitted, the core also tries
the next workloads of its queue in the same cycle, as long as each fits within the queue's
nominal quota with no borrowing and no preemption, and puts the first that does not back
untouched.
"""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.assignment import Outcome
from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.settings import IMMEDIATE, TUNED, SchedulingSettings
from pykueue.manager.core.workload_state import PENDING


def _cq(name: str, cpu: int, cohort: str | None = None, **spec: Any) -> dict[str, Any]:
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "namespaceSelector": {}, **({"cohortName": cohort} if cohort else {}), **spec,
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}}


def _core(followers: int, *queues: dict[str, Any]) -> QueueingCore:
    core = QueueingCore(CoreConfig(scheduling=SchedulingSettings(followers_per_cycle=followers)))
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    for cq in queues:
        core.apply(cq)
        name = cq["metadata"]["name"]
        core.apply({"kind": "LocalQueue", "metadata": {"name": name, "namespace": "ns"},
                    "spec": {"clusterQueue": name}})
    return core


def _wl(core: QueueingCore, name: str, cpu: int, queue: str = "deep", priority: int = 0) -> None:
    core.apply({"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
        "queueName": queue, "priority": priority, "podSets": [{
            "name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}})


def _one_cycle(core: QueueingCore) -> list[str]:
    result = core.next_cycle()
    core.apply_cycle(result)
    return [d.key for d in result.decisions if d.outcome == Outcome.ADMIT]


def test_the_manager_and_the_simulation_both_have_followers() -> None:
    assert TUNED.followers_per_cycle == IMMEDIATE.followers_per_cycle > 0
    assert SchedulingSettings().followers_per_cycle == 0  # Kueue's one head per queue


def test_a_deep_queue_within_its_quota_drains_by_many_admissions_a_cycle() -> None:
    core = _core(15, _cq("deep", 40))
    for i in range(40):
        _wl(core, f"w{i:02}", 1)
    assert _one_cycle(core) == [f"ns/w{i:02}" for i in range(16)]  # the head and 15 followers, in order
    assert _one_cycle(core) == [f"ns/w{i:02}" for i in range(16, 32)]

    kueue = _core(0, _cq("deep", 40))
    for i in range(40):
        _wl(kueue, f"w{i:02}", 1)
    assert _one_cycle(kueue) == ["ns/w00"]  # without followers: one a cycle


def test_a_follower_never_borrows_and_goes_back_untouched() -> None:
    core = _core(15, _cq("deep", 3, cohort="c"), _cq("idle", 10, cohort="c"))
    for i in range(5):
        _wl(core, f"w{i}", 1)
    before = core.workload("ns/w3").pending
    core.take_changes()
    assert _one_cycle(core) == ["ns/w0", "ns/w1", "ns/w2"]
    w3 = core.workload("ns/w3")
    assert w3.status == PENDING and w3.pending == before and not core.pending_queue("deep").is_parked("ns/w3")
    assert "ns/w3" not in core.take_changes().written  # nothing to write: it was not tried
    # As the next head it borrows from the idle queue, as it would have in Kueue's next cycle.
    assert _one_cycle(core) == ["ns/w3"]
    assert core.workload("ns/w3").holds_quota


def test_a_follower_that_does_not_fit_stops_its_queue_for_the_cycle() -> None:
    core = _core(15, _cq("deep", 4))
    _wl(core, "a", 1, priority=3)
    _wl(core, "b", 4, priority=2)  # does not fit after a
    _wl(core, "c", 1, priority=1)  # would fit, but is behind b
    assert _one_cycle(core) == ["ns/a"]
    assert core.workload("ns/c").status == PENDING


def test_a_follower_does_not_preempt() -> None:
    core = _core(15, _cq("deep", 2, preemption={"withinClusterQueue": "LowerPriority"}))
    _wl(core, "low", 1, priority=0)
    assert _one_cycle(core) == ["ns/low"]
    _wl(core, "high1", 1, priority=5)
    _wl(core, "high2", 1, priority=5)
    result = core.next_cycle()
    core.apply_cycle(result)
    # The head takes the free cpu; its follower would need low's: it is left for its own cycle.
    assert [d.key for d in result.decisions] == ["ns/high1"]
    assert result.untried == [("ns/high2", "deep")]
    assert core.workload("ns/low").holds_quota
    preempt = core.next_cycle()
    assert [(d.key, d.outcome, d.targets) for d in preempt.decisions] == [
        ("ns/high2", Outcome.PREEMPT, ("ns/low",))]
