"""The running manager's TopologyFeed applies Kueue v0.19.2's node failure rules.

The pure rules are tested in ``tests/unit/tas/test_node_health.py``; here the feed gives
them their facts: the workload's pods bound to the node (from the pod informer) and the
node's readiness and taints (from the node informer). Driven through the feed's event
handler, without any API, over the objects of the TAS scenario
``fail-node-unconstrained-moves-anywhere.yaml`` (5 pods on kwok-node-1).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pykueue.api import keys
from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.config import config_from
from pykueue.manager.core.settings import IMMEDIATE
from pykueue.manager.core.tas import TopologyAssignment
from pykueue.manager.core.tas.node_health import NodeFailureRules
from pykueue.manager.jobs.registry import build_workloads, is_job
from pykueue.manager.runtime.controllers.manager import QueueManager
from pykueue.manager.scenario.loader import load

TAS_SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios" / "tas"
SCENARIO = TAS_SCENARIOS / "fail-node-unconstrained-moves-anywhere.yaml"
FAILED = "kwok-node-1"


class _NoClient:
    """Never called: events are applied without I/O."""


class World:
    def __init__(self, rules: NodeFailureRules | None = None) -> None:
        scenario = load([SCENARIO])
        self.manager = QueueManager(KubeClient(_NoClient()), config_from(scenario.config),
                                    scheduling=IMMEDIATE)
        if rules is not None:
            self.manager.topology.rules = rules
        self.nodes: dict[str, dict[str, Any]] = {}
        for obj in scenario.objects:
            if obj.get("kind") in ("Topology", "Node", "Pod"):
                if obj["kind"] == "Node":
                    self.nodes[obj["metadata"]["name"]] = obj
                self.manager.topology._on_event(EventType.ADDED, obj, None)
            elif is_job(obj):
                for wl in build_workloads(obj):
                    wl = {**wl, "metadata": {**wl["metadata"], "namespace": "default"}}
                    self.key = f"default/{wl['metadata']['name']}"
                    self.manager._core_handler(EventType.ADDED, wl, None)
            else:
                self.manager._core_handler(EventType.ADDED, obj, None)
        self.manager.tas.mark_synced()
        self.manager.core.requeue_inadmissible()
        self.settle()
        self.pods = [self.pod(i) for i in range(5)]
        for pod in self.pods:
            self.manager.topology._on_event(EventType.ADDED, pod, None)

    def pod(self, i: int) -> dict[str, Any]:
        name = self.key.split("/", 1)[1]
        return {"kind": "Pod", "metadata": {"name": f"b-{i}", "namespace": "default",
                                            "annotations": {keys.WORKLOAD_ANNOTATION: name}},
                "spec": {"nodeName": FAILED, "containers": [{"name": "c"}]},
                "status": {"phase": "Running"}}

    def settle(self) -> None:
        self.manager.core.run_until_idle()

    def hosts(self) -> list[str]:
        rec = self.manager.core.workload(self.key)
        assert rec is not None and rec.assignment is not None
        raw = rec.assignment.podsets[0].topology_assignment or {}
        return sorted(host for host, _ in TopologyAssignment.from_any(raw).leaf_values())

    def node_update(self, name: str, *, ready: str = "True",
                    taints: list[dict[str, Any]] | None = None) -> None:
        old = self.nodes[name]
        new = copy.deepcopy(old)
        new["status"]["conditions"] = [{"type": "Ready", "status": ready,
                                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        if taints is not None:
            new.setdefault("spec", {})["taints"] = taints
        self.nodes[name] = new
        self.manager.topology._on_event(EventType.MODIFIED, new, old)
        self.settle()

    def pods_end(self, count: int) -> None:
        for pod in self.pods[:count]:
            self.manager.topology._on_event(EventType.DELETED, pod, None)
        self.pods = self.pods[count:]
        self.settle()


def test_not_ready_node_is_replaced_once_the_pods_are_gone() -> None:
    world = World()
    before = world.hosts()
    assert FAILED in before, before
    world.node_update(FAILED, ready="False")
    assert world.hosts() == before  # its pods still run there: nothing is replaced
    assert world.manager.tas.unhealthy_nodes(world.key) == []
    world.pods_end(4)
    assert world.hosts() == before  # one pod still progressing
    world.pods_end(1)
    after = world.hosts()
    assert FAILED not in after, after
    assert world.manager.core.workload(world.key).status == "Admitted"


def test_untolerated_taint_replaces_once_the_pods_are_gone() -> None:
    world = World()
    before = world.hosts()
    world.node_update(FAILED, taints=[{"key": "maintenance", "effect": "NoExecute"}])
    assert world.hosts() == before
    world.pods_end(5)
    assert FAILED not in world.hosts()


def test_tolerated_taint_keeps_the_node() -> None:
    world = World()
    before = world.hosts()
    world.node_update(FAILED, taints=[{"key": "maintenance", "effect": "PreferNoSchedule"}])
    world.pods_end(5)
    assert world.hosts() == before


def test_without_pod_termination_an_untolerated_taint_replaces_at_once() -> None:
    world = World(NodeFailureRules(pod_termination=False))
    world.node_update(FAILED, taints=[{"key": "maintenance", "effect": "NoSchedule"}])
    assert FAILED not in world.hosts()


def test_replacement_gate_off_never_marks() -> None:
    world = World(NodeFailureRules(replacement=False))
    before = world.hosts()
    world.node_update(FAILED, ready="False")
    world.pods_end(5)
    assert world.hosts() == before
    world.manager.topology._on_event(EventType.DELETED, world.nodes[FAILED], None)
    world.settle()
    assert world.hosts() == before


def test_nodes_lost_before_the_workloads_were_read_are_judged_at_sync() -> None:
    # The node went NotReady and the pods ended before the manager read the Workload: the
    # events found no workload on it, so lead() judges the watched nodes once synced.
    world = World()
    world.pods_end(5)
    down = copy.deepcopy(world.nodes[FAILED])
    down["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    world.manager.topology._nodes[FAILED] = down  # seen, but judged with no workload placed
    assert FAILED in world.hosts()
    world.manager.topology.judge_nodes()
    world.settle()
    assert FAILED not in world.hosts()


def test_fixed_time_rule_waits_for_the_delay_then_replaces() -> None:
    # TASReplaceNodeOnPodTermination off: a NotReady node is lost after the delay, its pods
    # running or not (the recheck timer judges it again; called here directly).
    world = World(NodeFailureRules(pod_termination=False))
    before = world.hosts()
    down = copy.deepcopy(world.nodes[FAILED])
    down["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                     "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}]
    world.manager.topology._on_event(EventType.MODIFIED, down, world.nodes[FAILED])
    world.settle()
    assert world.hosts() == before  # within the delay
    down["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:00Z"
    world.manager.topology._recheck(FAILED)
    world.settle()
    assert FAILED not in world.hosts()
