"""The extender's replacement snapshot counts usage across flavors sharing nodes.

As Kueue v0.19.2's TASHandleOverlappingFlavors (pkg/cache/scheduler/snapshot_test.go:
"overlapping flavors differing only in taints share the usage of their node (#10659)" and
"overlapping flavors selecting disjoint nodes take only their own usage").
"""

from __future__ import annotations

from typing import Any

from pykueue.extender.replacement_plan import PlanInputs, build_snapshot
from pykueue.manager.core.tas import PodSetRequest

HOST = "kubernetes.io/hostname"
TOPOLOGY = {"kind": "Topology", "metadata": {"name": "topology"}, "spec": {"levels": [{"nodeLabel": HOST}]}}


def flavor(name: str, zone: str) -> dict[str, Any]:
    return {"kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": {"zone": zone}, "topologyName": "topology"}}


def node(name: str, zone: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {HOST: name, "zone": zone}},
            "status": {"allocatable": {"cpu": "2", "pods": "10"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def workload(name: str, flavor_name: str, host: str) -> dict[str, Any]:
    one = {"domainCount": 1, "valuesPerLevel": [{"universal": host}], "podCounts": {"universal": 1}}
    ta = {"levels": [HOST], "slices": [one]}
    podset = {"name": "main", "count": 1,
              "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}}
    return {"kind": "Workload", "metadata": {"name": name, "namespace": "default"},
            "spec": {"podSets": [podset]},
            "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": flavor_name}, "count": 1, "topologyAssignment": ta}]}}}


def fits_one_cpu(inputs: PlanInputs) -> bool:
    podset = {"name": "main", "count": 1,
              "template": {"metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": HOST}},
                           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}
    return bool(build_snapshot(inputs).place([PodSetRequest.from_podset(podset)]))


def test_usage_of_another_flavor_on_a_shared_node_counts() -> None:
    shared = PlanInputs(flavor("tas-dedicated", "a"), TOPOLOGY, [node("x1", "a")], [],
                        [workload("w", "tas-shared", "x1")])
    assert not fits_one_cpu(shared)


def test_flavors_on_disjoint_nodes_take_only_their_own_usage() -> None:
    disjoint = PlanInputs(flavor("tas-zone-b", "b"), TOPOLOGY, [node("x1", "a"), node("x2", "b")], [],
                          [workload("w", "tas-zone-a", "x1")])
    assert fits_one_cpu(disjoint)
