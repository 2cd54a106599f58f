"""Kueue's published TAS examples through ``simulate``, with the outcome Kueue gives.

The examples ship queues and jobs but no nodes. Without nodes of the flavor's node group
nothing can be placed; with the dev cluster's eight nodes (two blocks of two racks of two
8-CPU hosts) labelled into that group, each sample job is placed as Kueue would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pykueue.manager.simulate import simulate

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"


def _ex(shared: Path, name: str) -> str:
    return str(shared / "reference" / "examples" / "tas" / name)


def _nodes(tmp_path: Path, group: str | None = "tas-group", gpu_taint: bool = False) -> str:
    docs: list[dict[str, Any]] = []
    for i in range(8):
        labels = {BLOCK: f"b{i // 4}", RACK: f"r{i // 2}", HOST: f"kwok-node-{i}"}
        if group:
            labels["cloud.provider.com/node-group"] = group
        node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": f"kwok-node-{i}", "labels": labels},
                                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                                           "conditions": [{"type": "Ready", "status": "True"}]}}
        if gpu_taint:
            node["spec"] = {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}
        docs.append(node)
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _only(data: dict[str, Any]) -> dict[str, Any]:
    (wl,) = data["workloads"].values()
    return wl


def _hosts(wl: dict[str, Any]) -> dict[str, int]:
    ta = wl["podSets"]["main"]["topologyAssignment"]
    assert ta["levels"] == [BLOCK, RACK, HOST]
    return {d["values"][2]: d["count"] for d in ta["domains"]}


def test_required_rack_sample(shared_dir: Path, tmp_path: Path) -> None:
    wl = _only(simulate([_ex(shared_dir, "sample-queues.yaml"), _nodes(tmp_path),
                         _ex(shared_dir, "sample-job-required.yaml")]))
    assert wl["status"] == "Admitted"
    assert _hosts(wl) == {"kwok-node-0": 8, "kwok-node-1": 2}  # 10 pods in rack r0


def test_preferred_block_sample_spans_two_blocks(shared_dir: Path, tmp_path: Path) -> None:
    wl = _only(simulate([_ex(shared_dir, "sample-queues.yaml"), _nodes(tmp_path),
                         _ex(shared_dir, "sample-job-preferred.yaml")]))
    assert wl["status"] == "Admitted"
    hosts = _hosts(wl)
    assert sum(hosts.values()) == 40
    assert hosts == {f"kwok-node-{i}": 8 for i in range(5)}  # block b0 full, then one host of b1


def test_unconstrained_sample(shared_dir: Path, tmp_path: Path) -> None:
    wl = _only(simulate([_ex(shared_dir, "sample-queues.yaml"), _nodes(tmp_path),
                         _ex(shared_dir, "sample-job-unconstrained.yaml")]))
    assert wl["status"] == "Admitted"
    assert _hosts(wl) == {"kwok-node-0": 6}


def test_samples_wait_without_nodes_of_the_group(shared_dir: Path, tmp_path: Path) -> None:
    data = simulate([_ex(shared_dir, "sample-queues.yaml"), _nodes(tmp_path, group=None),
                     _ex(shared_dir, "sample-job-required.yaml")])
    wl = _only(data)
    assert wl["status"] == "Pending"
    assert "no topology domains at level: cloud.provider.com/topology-rack" in wl["reason"]
    assert data["clusterQueues"]["tas-cluster-queue"]["usage"]["tas-flavor"]["cpu"] == "0"


def test_gpu_queues_tolerate_gpu_taint(shared_dir: Path, tmp_path: Path) -> None:
    # The GPU set-up's flavor tolerates nvidia.com/gpu taints, so tainted GPU nodes still take pods.
    wl = _only(simulate([_ex(shared_dir, "sample-gpu-queues.yaml"), _nodes(tmp_path, gpu_taint=True),
                         _ex(shared_dir, "sample-job-required.yaml")]))
    assert wl["status"] == "Admitted"
    assert sum(_hosts(wl).values()) == 10


def test_all_three_samples_share_the_cluster(shared_dir: Path, tmp_path: Path) -> None:
    data = simulate([_ex(shared_dir, "sample-queues.yaml"), _nodes(tmp_path),
                     _ex(shared_dir, "sample-job-required.yaml"),
                     _ex(shared_dir, "sample-job-preferred.yaml"),
                     _ex(shared_dir, "sample-job-unconstrained.yaml")])
    by_size = {w["podSets"]["main"]["count"]: w for w in data["workloads"].values()}
    # 10 + 40 + 6 = 56 of 64 CPUs: all three fit, on disjoint capacity.
    assert {n: w["status"] for n, w in by_size.items()} == {10: "Admitted", 40: "Admitted", 6: "Admitted"}
    used: dict[str, int] = {}
    for w in by_size.values():
        for host, n in _hosts(w).items():
            used[host] = used.get(host, 0) + n
    assert all(n <= 8 for n in used.values())
    assert data["clusterQueues"]["tas-cluster-queue"]["usage"]["tas-flavor"]["cpu"] == "56"
