"""A preemption that would evict running jobs waits ``preemption_patience_s`` first.

Waiting, the preemptor holds the room it needs (no lower priority takes what is freed) and
gets it when a job finishes; once the wait is over it preempts by Kueue's rules, choosing
from what still runs then. Reservations not yet written are taken back at once, and with
the patience off (the simulation's settings) nothing changes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.settings import IMMEDIATE
from pykueue.manager.core.workload_state import ADMITTED, PENDING

PATIENCE = 0.5
T0 = 100.0


def _core(patience: float = PATIENCE) -> QueueingCore:
    config = CoreConfig(scheduling=replace(IMMEDIATE, preemption_patience_s=patience), withdraw_unpublished=True)
    core = QueueingCore(config, now=T0)
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "f"}})
    core.apply({"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}})
    core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "default"},
                "spec": {"clusterQueue": "cq"}})
    return core


def _wl(name: str, cpu: int, priority: int) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"queueName": "lq", "priority": priority,
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                         {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}


def _status(core: QueueingCore, name: str) -> str:
    rec = core.workload(f"default/{name}")
    assert rec is not None
    return rec.status


def _running(core: QueueingCore, *names_cpu: tuple[str, int]) -> None:
    """Admitted and written (a job started): taking one back is an eviction."""
    for name, cpu in names_cpu:
        core.apply_workload(_wl(name, cpu, 0))
    core.run_until_idle()
    for name, _ in names_cpu:
        assert _status(core, name) == ADMITTED
        core.publish(f"default/{name}")


def test_a_job_finishing_within_the_patience_gives_its_room_and_nothing_is_evicted() -> None:
    core = _core()
    _running(core, ("low-1", 2), ("low-2", 2))
    core.apply_workload(_wl("high", 2, 10))
    core.run_until_idle()
    assert _status(core, "high") == PENDING
    assert _status(core, "low-1") == ADMITTED and _status(core, "low-2") == ADMITTED  # not evicted
    # A low-priority arrival does not take what the waiting preemptor will need.
    core.advance_clock(T0 + 0.1)
    core.finish("default/low-2")
    core.apply_workload(_wl("later-low", 2, 0))
    core.run_until_idle()
    assert _status(core, "high") == ADMITTED and _status(core, "later-low") == PENDING
    for name in ("low-1", "low-2"):
        rec = core.workload(f"default/{name}")
        assert rec is not None and not rec.evictions, name


def test_once_the_patience_is_over_it_preempts_and_a_timer_says_when() -> None:
    core = _core()
    _running(core, ("low-1", 2), ("low-2", 2))
    core.apply_workload(_wl("high", 2, 10))
    core.run_until_idle()
    assert _status(core, "high") == PENDING
    assert core.next_deadline() == T0 + PATIENCE
    core.fire_timers(T0 + PATIENCE / 2)
    core.run_until_idle()
    assert _status(core, "low-1") == ADMITTED and _status(core, "low-2") == ADMITTED
    assert core.fire_timers(T0 + PATIENCE) == 1
    core.run_until_idle()
    evicted = [n for n in ("low-1", "low-2") if (r := core.workload(f"default/{n}")) is not None and r.evictions]
    assert len(evicted) == 1  # one victim frees the room, by Kueue's order (most recent first)
    assert core.next_deadline() is None  # the wait is over: no timer is left


def test_reservations_not_yet_written_are_taken_back_without_waiting() -> None:
    core = _core()
    core.apply_workload(_wl("low", 4, 0))
    core.run_until_idle()
    assert _status(core, "low") == ADMITTED  # reserved, not written
    core.apply_workload(_wl("high", 4, 10))
    core.run_until_idle()
    assert _status(core, "high") == ADMITTED
    rec = core.workload("default/low")
    assert rec is not None and rec.status == PENDING and not rec.evictions


def test_with_no_patience_it_preempts_at_once() -> None:
    core = _core(patience=0.0)
    _running(core, ("low-1", 2), ("low-2", 2))
    core.apply_workload(_wl("high", 2, 10))
    core.run_until_idle()
    assert sum(1 for n in ("low-1", "low-2") if (r := core.workload(f"default/{n}")) and r.evictions) == 1
    assert core.next_deadline() is None
