"""The victim order kept across snapshots answers as a fresh search would.

:class:`ClassicalPreemption` keeps each ClusterQueue's holders in victim order between
cycles while the core's version of that queue stays the same. Random steps here change
what the kept order depends on: admissions, finishes, priority changes of admitted
workloads, evictions that hold quota until the job stops, and the job stopping. After
every step, each queue's kept order, and each pending workload's search by the core's own
(long-lived) preemptor, must equal those of a new preemptor on a snapshot that carries no
versions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.preemption import ClassicalPreemption
from pykueue.manager.core.workload_state import PENDING

CQS = ("a", "b", "c")
FR = ("f", "cpu")


def _setup(core: QueueingCore) -> None:
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "f"}})
    for name in CQS:
        core.apply({"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
            "namespaceSelector": {}, "cohortName": "co",
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 3}]}]}]}})
        core.apply({"kind": "LocalQueue", "metadata": {"name": f"lq-{name}", "namespace": "default"},
                    "spec": {"clusterQueue": name}})


def _wl(name: str, cq: str, cpu: int, priority: int) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"queueName": f"lq-{cq}", "priority": priority,
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                         {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}


Step = tuple[str, int, int, int]  # (operation, which, cpu or priority, priority)
steps = st.lists(st.tuples(st.sampled_from(("add", "add", "finish", "reprioritise", "evict", "stopped",
                                            "publish")),
                           st.integers(0, 40), st.integers(1, 4), st.integers(0, 4)), min_size=1, max_size=40)


def _check(core: QueueingCore, kept: ClassicalPreemption) -> None:
    snap = core.snapshot()
    fresh_snap = replace(snap, holding_versions={})
    fresh = ClassicalPreemption()
    for cq in CQS:  # the kept order itself, then the searches built on it
        assert [h[1] for h in kept._memo_for(snap).ordered(cq, frozenset({FR}))] == \
            [h[1] for h in fresh._memo_for(fresh_snap).ordered(cq, frozenset({FR}))]
    for rec in core.all_workloads().values():
        if rec.status != PENDING or rec.cluster_queue is None:
            continue
        request = {FR: sum(ps.requests.get("cpu", 0) * ps.count for ps in rec.wl.podsets)}
        ours = kept.search(snap, rec.cluster_queue, rec.priority, rec.queue_ts, request, frozenset(request))
        theirs = ClassicalPreemption().search(fresh_snap, rec.cluster_queue, rec.priority, rec.queue_ts,
                                              request, frozenset(request))
        assert [(c.key, c.variant) for c in ours] == [(c.key, c.variant) for c in theirs]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps, st.booleans(), st.booleans())
def test_kept_victim_order_answers_as_a_fresh_search(plan: list[Step], hold: bool, withdraw: bool) -> None:
    kept = ClassicalPreemption()
    core = QueueingCore(CoreConfig(hold_quota_until_stopped=hold, withdraw_unpublished=withdraw),
                        preemption=kept)
    _setup(core)
    made: list[str] = []
    for op, which, amount, priority in plan:
        holders = sorted(k for held in core.holders_by_queue().values() for k in held)
        if op == "add":
            name = f"w{len(made)}"
            core.apply_workload(_wl(name, CQS[which % len(CQS)], amount, priority))
            made.append(name)
        elif holders and op == "finish":
            core.finish(holders[which % len(holders)])
        elif holders and op == "reprioritise":
            rec = core.all_workloads()[holders[which % len(holders)]]
            cq = rec.cluster_queue or ""
            cpu = sum(ps.requests.get("cpu", 0) * ps.count for ps in rec.wl.podsets) // 1000 or 1
            core.apply_workload(_wl(rec.wl.name, cq, cpu, amount))
        elif holders and op == "evict":
            core.evict(holders[which % len(holders)], "Preempted")
        elif holders and op == "stopped":
            core.job_stopped(holders[which % len(holders)])
        elif holders and op == "publish":
            core.publish(holders[which % len(holders)])
        _check(core, kept)  # before the cycle: the versions must have followed the step itself
        core.apply_cycle(core.next_cycle())
        _check(core, kept)


def test_unpublished_reservations_come_first_until_published() -> None:
    """Taking back a reservation no write has carried out evicts nothing anyone has seen:
    within a group of candidates it goes before the published ones, and moves back among
    them once published."""
    kept = ClassicalPreemption()
    core = QueueingCore(CoreConfig(withdraw_unpublished=True), preemption=kept)
    _setup(core)
    for i in range(3):
        core.apply_workload(_wl(f"w{i}", "a", 1, 0))
        core.apply_cycle(core.next_cycle())
    core.publish("default/w0")
    core.publish("default/w2")
    _check(core, kept)
    order = [h[1] for h in kept._memo_for(core.snapshot()).ordered("a", frozenset({FR}))]
    assert order == ["default/w1", "default/w2", "default/w0"]  # then the newest first
    core.publish("default/w1")
    _check(core, kept)
