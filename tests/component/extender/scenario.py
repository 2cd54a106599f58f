"""The cluster the extender tests run against, built from the hand-written fixtures.

Five nodes in two blocks (hostname topology, block/rack labels), one Job workload
``team-a/job-sample-job-3f2a1`` whose PodSet ``main`` (4 pods, required block) is
assigned 2 pods to block-1-rack-1-node-1, 1 to block-1-rack-1-node-2 and 1 to
block-1-rack-2-node-1; block-1-rack-2-node-2 and block-2-rack-1-node-1 are outside it.
Pods ``sample-job-{0..3}-mz7kq`` exist, unbound.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from .memory_cluster import MemoryCluster

FIXTURES = Path(__file__).parent / "fixtures"
NAMESPACE = "team-a"
WORKLOAD = "job-sample-job-3f2a1"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"

N11 = "block-1-rack-1-node-1"
N12 = "block-1-rack-1-node-2"
N21 = "block-1-rack-2-node-1"
N22 = "block-1-rack-2-node-2"  # block-1, not assigned
B2 = "block-2-rack-1-node-1"  # block-2, not assigned
ALL_NODES = [N11, N12, N21, N22, B2]


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def node(name: str) -> dict[str, Any]:
    n: dict[str, Any] = load("node_template.json")
    block, rack = name.split("-node-")[0].rsplit("-rack-", 1)
    labels = n["metadata"]["labels"]
    n["metadata"]["name"] = name
    n["metadata"]["uid"] = f"uid-{name}"
    labels["kubernetes.io/hostname"] = name
    labels[BLOCK] = block
    labels[RACK] = f"rack-{rack}"
    return n


def pod(index: int, *, node_name: str | None = None, phase: str = "Pending") -> dict[str, Any]:
    p: dict[str, Any] = load("pod_managed.json")
    meta = p["metadata"]
    meta["name"] = f"sample-job-{index}-mz7kq"
    meta["uid"] = f"uid-pod-{index}"
    meta["labels"]["batch.kubernetes.io/job-completion-index"] = str(index)
    if node_name:
        p["spec"]["nodeName"] = node_name
    p["status"]["phase"] = phase
    return p


def plain_pod(name: str) -> dict[str, Any]:
    """A pod nobody queued: no Kueue labels or annotations."""
    p = pod(0)
    p["metadata"] = {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}", "labels": {"app": "web"}}
    return p


def build_cluster() -> MemoryCluster:
    cluster = MemoryCluster()
    for name in ALL_NODES:
        cluster.add_node(node(name))
    cluster.add_workload(load("workload.json"))
    cluster.flavors["tas-flavor"] = load("resourceflavor.json")
    cluster.topologies["default"] = load("topology.json")
    for i in range(4):
        cluster.add_pod(pod(i))
    return cluster


def bind_pod(cluster: MemoryCluster, index: int, node_name: str) -> None:
    cluster.pods[(NAMESPACE, f"sample-job-{index}-mz7kq")]["spec"]["nodeName"] = node_name


def names_args(p: dict[str, Any], names: list[str] | None = None) -> dict[str, Any]:
    args: dict[str, Any] = load("args_node_names.json")
    args["Pod"] = copy.deepcopy(p)
    if names is not None:
        args["NodeNames"] = names
    return args


def binding_args(index: int, node_name: str) -> dict[str, str]:
    return {
        "PodName": f"sample-job-{index}-mz7kq",
        "PodNamespace": NAMESPACE,
        "PodUID": f"uid-pod-{index}",
        "Node": node_name,
    }


def assignment_of(cluster: MemoryCluster) -> dict[str, int]:
    """hostname -> count, decoded from the stored Workload."""
    from pykueue.manager.core.tas.assignment import decode_v1beta2

    wl = cluster.workloads[(NAMESPACE, WORKLOAD)]
    raw = wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    return {d.values[-1]: d.count for d in decode_v1beta2(raw).domains}
