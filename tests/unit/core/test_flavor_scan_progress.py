"""Flavor scan progress across cycles (Kueue's LastTriedFlavorIdx and its
FlavorFungibilityPreserveScanProgress gate), driven cycle by cycle.

Kueue's TestScheduleForPreserveFlavorScanProgress: a workload whose quota fits the first TAS
flavor but whose topology does not is requeued with the scan stopped there, so the next cycle
resumes at the second flavor. When the ClusterQueue's generation advances between cycles (a
quota change here, as in Kueue's test; releases do the same), only the gate keeps the
progress: without it the scan starts over at the first flavor every cycle and never gets
past it. The cases without churn are scenario files
(tests/scenarios/kueue/scheduler/scan-progress-*.yaml).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pykueue.manager.core.config import config_from
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.settings import SchedulingSettings
from pykueue.manager.core.workload_state import ADMITTED
from pykueue.manager.scenario.loader import load
from pykueue.manager.scenario.runner import START, Simulation

SCENARIO = (
    Path(__file__).resolve().parents[2]
    / "scenarios"
    / "kueue"
    / "scheduler"
    / "scan-progress-no-generation-churn-gate-enabled.yaml"
)


def _simulation(gate: bool, one_head_a_cycle: bool = False) -> tuple[Simulation, dict[str, Any]]:
    """``one_head_a_cycle``: no followers (Kueue's one head per queue and cycle), so that each
    cycle of the test is one scan of one workload."""
    scenario = load([SCENARIO])
    scenario.config["featureGates"] = {"FlavorFungibilityPreserveScanProgress": gate}
    sim = Simulation(scenario)
    if one_head_a_cycle:
        config = replace(config_from(scenario.config), scheduling=SchedulingSettings(followers_per_cycle=0))
        sim.core = QueueingCore(config, now=START, topology=sim.tas)
    cq: dict[str, Any] = {}
    for obj in scenario.objects:
        if obj.get("kind") == "ClusterQueue":
            cq = obj
        sim.apply(obj)
    return sim, cq


def _flavor(sim: Simulation, key: str) -> str | None:
    rec = sim.core.workload(key)
    if rec is None or rec.status != ADMITTED or rec.assignment is None:
        return None
    return next(iter(rec.assignment.podsets[0].flavors.values()), None)


@pytest.mark.parametrize(("gate", "want"), [(False, None), (True, "tas-flavor-2")])
def test_generation_churn_discards_the_progress_unless_the_gate_keeps_it(
    gate: bool, want: str | None
) -> None:
    sim, cq = _simulation(gate)
    core = sim.core
    for i in range(4):  # Kueue's test drives four cycles
        core.apply_cycle(core.next_cycle())
        churned = copy.deepcopy(cq)
        churned["spec"]["resourceGroups"][0]["flavors"][1]["resources"][0]["nominalQuota"] = (
            "5" if i % 2 == 0 else "4"
        )
        core.apply(churned)  # flavor-2's quota flips: the ClusterQueue's generation advances
        core.requeue_inadmissible()
    assert _flavor(sim, "default/blocker") == "tas-flavor-1"
    assert _flavor(sim, "default/pending") == want


def test_the_progress_is_resumed_in_the_next_cycle_only_after_the_stop() -> None:
    sim, _ = _simulation(True, one_head_a_cycle=True)
    core = sim.core
    first = core.next_cycle()  # the blocker is the only head: admitted on flavor-1
    core.apply_cycle(first)
    second = core.next_cycle()  # pending: quota fits flavor-1, its topology does not
    (decision,) = second.decisions
    assert decision.assignment is not None and decision.assignment.tried == ({"cpu": 0},)
    assert decision.assignment.pending_flavors
    core.apply_cycle(second)
    third = core.next_cycle()  # back at once, resuming after flavor-1
    (decision,) = third.decisions
    assert decision.assignment is not None and decision.assignment.tried == ({"cpu": -1},)
    assert decision.assignment.podsets[0].flavors == {"cpu": "tas-flavor-2"}
