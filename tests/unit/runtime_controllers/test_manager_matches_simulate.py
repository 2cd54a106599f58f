"""The running manager places topology-aware workloads exactly as ``simulate`` does.

Every TAS scenario whose steps the running system can replay (objects, then lost nodes and
admission check verdicts) goes both ways: through ``Simulation``, and through the manager's
own event handlers (``TopologyFeed`` for Topologies, Nodes and Pods; ``QueueManager`` for
the rest, with Workloads as the job reconciler creates them and check states as a check
controller writes them), without any API. The topology assignment of every admitted
workload must be the same. Fair-sharing and stop-policy scenarios without steps are replayed
the same way, and every workload must end with the same status, evictions and flavors.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.config import config_from
from pykueue.manager.core.settings import IMMEDIATE
from pykueue.manager.core.status import workload_status
from pykueue.manager.jobs.registry import build_workloads, is_job
from pykueue.manager.runtime.controllers.manager import QueueManager
from pykueue.manager.scenario.loader import Scenario, load
from pykueue.manager.scenario.runner import Simulation

TAS_SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios" / "tas"
REPLAYABLE_STEPS = {"failNode", "checkState"}
FEED_KINDS = {"Topology", "Node", "Pod"}


class _NoClient:
    """Never called: events are applied without I/O."""


def _replayable(path: Path) -> bool:
    scenario = load([path])
    return all(next(iter(step)) in REPLAYABLE_STEPS for step in scenario.steps)


SCENARIOS = [p for p in sorted(TAS_SCENARIOS.glob("*.yaml")) if _replayable(p)]


def _assignments(core: Any) -> dict[str, list[Any]]:
    return {key: [p.topology_assignment for p in rec.assignment.podsets]
            for key, rec in sorted(core.all_workloads().items())
            if rec.holds_quota and rec.assignment is not None}


def _manager_run(scenario: Scenario) -> QueueManager:
    # Requeues at once, as simulate does: no timers to wait for.
    manager = QueueManager(KubeClient(_NoClient()), config_from(scenario.config), scheduling=IMMEDIATE)
    nodes: dict[str, dict[str, Any]] = {}
    jobs: dict[str, list[str]] = {}  # job ns/name -> its Workloads' keys

    def feed(obj: dict[str, Any], event: EventType = EventType.ADDED) -> None:
        if obj.get("kind") in FEED_KINDS:
            if obj.get("kind") == "Node":
                nodes[str(obj["metadata"]["name"])] = obj
            manager.topology._on_event(event, obj, None)
        elif is_job(obj):
            meta = obj["metadata"]
            namespace = meta.get("namespace") or "default"
            for wl in build_workloads(obj):  # what the job reconciler creates
                jobs.setdefault(f"{namespace}/{meta['name']}", []).append(
                    f"{namespace}/{wl['metadata']['name']}")
                feed({**wl, "metadata": {**wl["metadata"], "namespace": namespace}})
        else:
            manager._core_handler(event, _served(obj), None)

    def check_controller(ref: str, check: str, state: str) -> None:
        """The admission check's controller sets its state on the Workload as we wrote it."""
        for key in jobs.get(ref, [ref]):
            rec = manager.core.workload(key)
            delayed, unhealthy = manager.tas.status_fields(key)
            written = {"kind": "Workload", "metadata": dict(rec.wl.source["metadata"]),
                       "spec": rec.wl.source["spec"],
                       "status": workload_status(rec, manager.core.now, delayed_topology=delayed,
                                                 unhealthy_nodes=unhealthy)}
            manager._follow_others(written)
            changed = copy.deepcopy(written)
            for entry in changed["status"].get("admissionChecks") or ():
                if entry["name"] == check:
                    entry["state"] = state
            manager._core_handler(EventType.MODIFIED, changed, written)

    def settle() -> None:
        """Cycle until idle; the jobs of evicted workloads stop at once (no pods here)."""
        manager.core.run_until_idle()
        while stopping := manager.core.take_stopping():
            for key in sorted(stopping):
                manager.core.job_stopped(key)
            manager.core.run_until_idle()

    for obj in scenario.objects:
        feed(obj)
    manager.tas.mark_synced()  # lead(): informers synced
    manager.core.requeue_inadmissible()
    settle()
    for step in scenario.steps:
        (kind, arg), = step.items()
        if kind == "failNode":
            feed(nodes[str(arg)], EventType.DELETED)
        elif kind == "checkState":
            check_controller(str(arg["workload"]), str(arg["check"]), str(arg["state"]))
        settle()
    return manager


def _served(obj: dict[str, Any]) -> dict[str, Any]:
    """A scenario's AdmissionCheck without a status has a running controller; in the manager
    (as in Kueue) that controller says so with the Active condition."""
    if obj.get("kind") != "AdmissionCheck" or (obj.get("status") or {}).get("conditions"):
        return obj
    active = {"type": "Active", "status": "True", "reason": "Active", "message": "served"}
    return {**obj, "status": {"conditions": [active]}}


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_running_manager_places_as_simulate_does(path: Path) -> None:
    scenario = load([path])
    simulation = Simulation(scenario)
    simulation.run()

    async def replay() -> QueueManager:  # the handlers run on the event loop, as in the manager
        return _manager_run(scenario)

    manager = asyncio.run(replay())
    assert _assignments(manager.core) == _assignments(simulation.core)


def test_most_tas_scenarios_are_replayed() -> None:
    assert len(SCENARIOS) >= 40, len(SCENARIOS)


# Fair-sharing order and stopped queues read at start-up go through the same core path
# in the manager as in simulate: every such scenario without steps must end alike.
ROOT = TAS_SCENARIOS.parent
DECISION_SCENARIOS = [p for p in sorted([*(ROOT / "fair-sharing").glob("*.yaml"),
                                         *ROOT.glob("stop-policy-*.yaml")]) if not load([p]).steps]


def _decisions(core: Any) -> dict[str, Any]:
    return {key: (rec.status, rec.cluster_queue, list(rec.evictions),
                  [(p.name, p.count, p.flavors) for p in rec.assignment.podsets] if rec.assignment else [])
            for key, rec in sorted(core.all_workloads().items())}


@pytest.mark.parametrize("path", DECISION_SCENARIOS, ids=[p.stem for p in DECISION_SCENARIOS])
def test_the_running_manager_decides_as_simulate_does(path: Path) -> None:
    scenario = load([path])
    simulation = Simulation(scenario)
    simulation.run()

    async def replay() -> QueueManager:
        return _manager_run(scenario)

    manager = asyncio.run(replay())
    assert _decisions(manager.core) == _decisions(simulation.core)


def test_decision_scenarios_are_replayed() -> None:
    assert len(DECISION_SCENARIOS) >= 20, len(DECISION_SCENARIOS)
