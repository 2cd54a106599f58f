"""A reservation that may soon be taken back settles unpublished (``QueueingCore.publish_wait``).

The manager writes a reservation only once ``publish_wait`` says 0; until then a preemption
withdraws it unseen. Only reservations some workload may preempt settle: in a queue that
preempts within itself and has queued a higher priority before, or borrowing where a
sibling may reclaim.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.settings import IMMEDIATE, TUNED
from pykueue.manager.core.workload_state import ADMITTED, PENDING

SETTLE = 0.3


def _core(within: str = "LowerPriority", reclaim: str = "Never", settle: float = SETTLE,
          fair_sharing: bool = False) -> QueueingCore:
    config = CoreConfig(scheduling=replace(IMMEDIATE, publish_settle_s=settle), withdraw_unpublished=True,
                        fair_sharing=("LessThanOrEqualToFinalShare",) if fair_sharing else None)
    core = QueueingCore(config, now=100.0)
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "f"}})
    for name, policy in (("a", {"withinClusterQueue": within, "reclaimWithinCohort": reclaim}),
                         ("b", {"withinClusterQueue": "Never", "reclaimWithinCohort": reclaim})):
        core.apply({"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
            "namespaceSelector": {}, "cohortName": "co", "preemption": policy,
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}})
        core.apply({"kind": "LocalQueue", "metadata": {"name": f"lq-{name}", "namespace": "default"},
                    "spec": {"clusterQueue": name}})
    return core


def _wl(name: str, cq: str, cpu: int, priority: int) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"queueName": f"lq-{cq}", "priority": priority,
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                         {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}


def _admit(core: QueueingCore, name: str, cq: str, cpu: int, priority: int) -> str:
    core.apply_workload(_wl(name, cq, cpu, priority))
    core.run_until_idle()
    key = f"default/{name}"
    rec = core.workload(key)
    assert rec is not None and rec.status == ADMITTED
    return key


def test_below_a_priority_seen_in_its_queue_it_settles_then_publishes() -> None:
    core = _core()
    high = _admit(core, "high", "a", 1, 10)
    assert core.publish_wait(high) == 0.0  # nothing above it was ever queued there
    core.publish(high)
    core.finish(high)
    low = _admit(core, "low", "a", 1, 0)
    assert core.publish_wait(low) == pytest.approx(SETTLE)
    core.advance_clock(100.0 + SETTLE / 2)
    assert core.publish_wait(low) == pytest.approx(SETTLE / 2)
    core.advance_clock(100.0 + SETTLE)
    assert core.publish_wait(low) == 0.0
    assert core.publish(low)
    assert core.publish_wait(low) == 0.0  # published: nothing left to settle


def test_a_preemption_within_the_settle_window_withdraws_it_unseen() -> None:
    core = _core()
    core.apply_workload(_wl("early-high", "a", 1, 10))  # a higher priority was queued here once
    core.run_until_idle()
    core.publish("default/early-high")
    core.finish("default/early-high")
    core.publish(_admit(core, "sibling", "b", 4, 0))  # no room to borrow
    low = _admit(core, "low", "a", 4, 0)
    assert core.publish_wait(low) > 0
    core.apply_workload(_wl("high", "a", 4, 10))
    core.run_until_idle()
    rec = core.workload(low)
    assert rec is not None and rec.status == PENDING and not rec.evictions  # taken back, never evicted
    high = core.workload("default/high")
    assert high is not None and high.status == ADMITTED


@pytest.mark.parametrize("within", ["Never"])
def test_a_queue_that_never_preempts_within_itself_does_not_hold_it(within: str) -> None:
    core = _core(within=within)
    _admit(core, "high", "a", 1, 10)
    low = _admit(core, "low", "a", 1, 0)
    assert core.publish_wait(low) == 0.0


def test_borrowing_settles_only_where_a_sibling_may_reclaim() -> None:
    for reclaim, fair, expect in (("Never", False, False), ("Any", False, True), ("Never", True, True)):
        core = _core(within="Never", reclaim=reclaim, fair_sharing=fair)
        within_quota = _admit(core, "own", "b", 4, 0)
        borrowing = _admit(core, "borrower", "b", 2, 0)
        assert core.publish_wait(within_quota) == 0.0, (reclaim, fair)
        assert (core.publish_wait(borrowing) > 0) is expect, (reclaim, fair)


def test_simulate_and_the_manager_publish_at_once_by_default() -> None:
    assert IMMEDIATE.publish_settle_s == TUNED.publish_settle_s == 0.0  # measured, off (settings.py)
    core = _core(settle=0.0)
    _admit(core, "high", "a", 1, 10)
    assert core.publish_wait(_admit(core, "low", "a", 1, 0)) == 0.0
