"""Classical preemption: recorded reasons, the oracle's answers and the hook contract."""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.hooks import NO_CANDIDATES, PREEMPT, RECLAIM
from pykueue.manager.core.preemption import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    ClassicalPreemption,
)
from pykueue.manager.core.settings import SchedulingSettings


def _cq(name: str, nominal: int, preemption: dict[str, Any], cohort: str = "co") -> dict[str, Any]:
    return {
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "cohortName": cohort,
            "preemption": preemption,
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": nominal}]}],
                }
            ],
        },
    }


def _wl(name: str, cq: str, cpu: int, priority: int) -> dict[str, Any]:
    return {
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": f"lq-{cq}",
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}
                    },
                }
            ],
        },
    }


def _preempted(core: QueueingCore) -> dict[str, str]:
    """Workload key -> the reason of its latest preemption."""
    return {k: r for k in core.all_workloads() if (r := core.preempted_reason(k)) is not None}


def _core(*cqs: dict[str, Any], config: CoreConfig | None = None) -> QueueingCore:
    core = QueueingCore(config)
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "f"}})
    for cq in cqs:
        core.apply(cq)
        name = cq["metadata"]["name"]
        core.apply(
            {
                "kind": "LocalQueue",
                "metadata": {"name": f"lq-{name}", "namespace": "default"},
                "spec": {"clusterQueue": name},
            }
        )
    return core


def test_default_hook_is_classical() -> None:
    assert isinstance(QueueingCore().preemption, ClassicalPreemption)


def test_in_cluster_queue_reason_and_readmission() -> None:
    core = _core(_cq("a", 4, {"withinClusterQueue": "LowerPriority"}))
    core.apply(_wl("low", "a", 4, 0))
    core.run_until_idle()
    core.apply(_wl("high", "a", 4, 9))
    core.run_until_idle()
    assert _preempted(core) == {"default/low": IN_CLUSTER_QUEUE}
    assert core.workload("default/low").evictions == ["Preempted"]
    assert core.workload("default/high").holds_quota


def test_reclamation_reason() -> None:
    core = _core(_cq("a", 4, {"reclaimWithinCohort": "Any"}), _cq("b", 4, {}))
    core.apply(_wl("borrower", "b", 8, 5))
    core.run_until_idle()
    core.apply(_wl("owner", "a", 4, 0))
    core.run_until_idle()
    assert _preempted(core) == {"default/borrower": IN_COHORT_RECLAMATION}


def test_reclaim_while_borrowing_reason() -> None:
    pol = {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}
    core = _core(_cq("a", 2, pol), _cq("b", 4, {}), _cq("c", 2, {}))
    core.apply(_wl("c-borrow", "c", 6, 0))
    core.apply(_wl("b-own", "b", 2, 0))
    core.run_until_idle()
    core.apply(_wl("big", "a", 4, 10))
    core.run_until_idle()
    assert _preempted(core) == {"default/c-borrow": IN_COHORT_RECLAIM_WHILE_BORROWING}


def test_oracle_answers() -> None:
    core = _core(
        _cq("a", 4, {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}), _cq("b", 4, {})
    )
    core.apply(_wl("a-low", "a", 2, 0))
    core.apply(_wl("b-borrow", "b", 6, 0))
    core.run_until_idle()
    hook = ClassicalPreemption()
    snap = core.snapshot()
    cq = core.cluster_queues()["a"]
    fr = ("f", "cpu")
    assert hook.oracle(snap, cq, fr, 2000, 5) == RECLAIM  # the borrower alone makes room
    assert hook.oracle(snap, cq, fr, 4000, 5) == PREEMPT  # needs the own workload too
    # Equal priority: the own workload is no candidate, and reclaiming alone would leave the
    # preemptor borrowing, which reclamation without borrowWithinCohort does not allow.
    assert hook.oracle(snap, cq, fr, 4000, 0) == NO_CANDIDATES
    assert hook.oracle(snap, core.cluster_queues()["b"], fr, 2000, 5) == NO_CANDIDATES  # b has no policy
    assert core.usage_at(core.quota_tree().cluster_queues["a"])[fr] == 2000  # the oracle charged a copy


def test_victim_status_has_evicted_and_preempted_conditions() -> None:
    from pykueue.manager.core.status import workload_status

    core = _core(_cq("a", 4, {"reclaimWithinCohort": "Any"}), _cq("b", 4, {}))
    core.apply(_wl("borrower", "b", 8, 5))
    core.run_until_idle()
    core.apply(_wl("owner", "a", 4, 0))
    core.run_until_idle()
    conds = {
        c["type"]: c for c in workload_status(core.workload("default/borrower"), core.now)["conditions"]
    }
    assert conds["Evicted"]["status"] == "True" and conds["Evicted"]["reason"] == "Preempted"
    assert conds["Preempted"]["status"] == "True" and conds["Preempted"]["reason"] == IN_COHORT_RECLAMATION
    assert "preemptor path: /co/a; preemptee path: /co/b" in conds["Preempted"]["message"]
    assert conds["Requeued"]["reason"] == "Preempted"
    # Once the victim holds quota again, both conditions flip to False with reason QuotaReserved.
    core.finish("default/owner")
    core.run_until_idle()
    conds = {
        c["type"]: c for c in workload_status(core.workload("default/borrower"), core.now)["conditions"]
    }
    assert conds["Evicted"]["status"] == "False" and conds["Evicted"]["reason"] == "QuotaReserved"
    assert conds["Preempted"]["message"].startswith("Previously: Preempted to accommodate")


def test_policies_that_preempt_in_a_ring_keep_preempting_as_kueue_does() -> None:
    """Three policies can hand quota round in a ring: each admission makes the next
    preemption legal. Kueue v0.19.2's minimalkueue, given these objects on a live control
    plane, preempted in this order without end (one step a second, its requeue batch); the
    core does the same rather than stopping on a victim Kueue would take. The order rests on
    that batch: the quota a victim frees reaches the parked workloads of the cohort one
    batch later, so the preemptor, requeued at once, gets it first (PrioritizePreemptorWorkloads
    is off, as in Kueue v0.19.2)."""
    core = _core(
        _cq("cq0", 3, {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}),
        _cq("cq1", 1, {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                       "borrowWithinCohort": {"policy": "LowerPriority"}}),
        _cq("cq2", 0, {"withinClusterQueue": "Never", "reclaimWithinCohort": "LowerPriority",
                       "borrowWithinCohort": {"policy": "LowerPriority"}}),
        config=CoreConfig(scheduling=SchedulingSettings(requeue_batch_s=1.0)),  # Kueue's requeue batch
    )
    assert not core.config.prioritize_preemptors
    for wl in (_wl("w0", "cq1", 4, 1), _wl("w1", "cq2", 4, 2), _wl("w2", "cq1", 1, 0)):
        core.apply(wl)
    preemptions: list[tuple[str, str, str]] = []
    for _ in range(10):
        preemptions += [(d.key, t, d.target_reasons[t]) for d in core.run_until_idle(max_cycles=40)
                        for t in d.targets]
        due = core.next_deadline()
        assert due is not None
        core.fire_timers(due)
    ring = [("default/w2", "default/w1", IN_COHORT_RECLAMATION),
            ("default/w0", "default/w2", IN_CLUSTER_QUEUE),
            ("default/w1", "default/w0", IN_COHORT_RECLAIM_WHILE_BORROWING)]
    assert len(preemptions) >= 9
    assert preemptions == [ring[i % 3] for i in range(len(preemptions))]
