"""Filter latency of the TAS scheduler extender with 5,000 nodes, served on loopback.

``python -m benchmarks.extender_latency [--quick]``

A managed pod (its PodSet assigned 4 pods on each of 64 nodes) is filtered against every
node, as kube-scheduler does with ``percentageOfNodesToScore: 100``: once with node names
only (``nodeCacheCapable: true``, the shipped configuration; these are the headline
figures) and once with full Node objects (``false``). Latency is the client-side round
trip of one request at a time. The cluster behind the extender is an in-memory port, so
the figures are the extender's own cost, not the apiserver's.

Scheduler throughput with and without the extender needs the dev cluster's real
kube-scheduler and is left null here. The last line printed is the JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import platform
import statistics
import time
from typing import Any

import aiohttp
from aiohttp import web

from api import keys
from extender.app import ExtenderDeps, make_app
from manager.core.tas.assignment import DomainAssignment, TopologyAssignment, encode_v1beta2

NODES = 5000
ASSIGNED_NODES = 64
PODS_PER_NODE = 4
NAMESPACE = "bench"
WORKLOAD = "job-bench-0"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"


def host(i: int) -> str:
    return f"block-{i // 500}-rack-{(i // 25) % 20}-node-{i % 25}"


def make_node(i: int) -> dict[str, Any]:
    name = host(i)
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                keys.HOSTNAME_LABEL: name,
                BLOCK: f"block-{i // 500}",
                RACK: f"rack-{(i // 25) % 20}",
                "node.kubernetes.io/instance-type": "tas-node",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.{i // 250}.{i % 250}.0/24"},
        "status": {
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"},
            ],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 250}.{i % 250}"},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.34.1", "operatingSystem": "linux", "architecture": "amd64"},
        },
    }


def make_pod(i: int, node_name: str | None) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": f"bench-{i}",
            "namespace": NAMESPACE,
            "uid": f"pod-uid-{i}",
            "labels": {keys.PODSET: "main", keys.TAS_LABEL: "true",
                       "batch.kubernetes.io/job-completion-index": str(i)},
            "annotations": {keys.WORKLOAD_ANNOTATION: WORKLOAD},
        },
        "spec": {
            "nodeName": node_name,
            "schedulerName": "pykueue-tas-scheduler",
            "containers": [{"name": "w", "image": "agnhost", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }


class StaticCluster:
    """A read-mostly in-memory cluster; bindings only append."""

    def __init__(self) -> None:
        self.nodes = [make_node(i) for i in range(NODES)]
        assigned = [host(i * (NODES // ASSIGNED_NODES)) for i in range(ASSIGNED_NODES)]
        assignment = TopologyAssignment(
            (keys.HOSTNAME_LABEL,), tuple(DomainAssignment((h,), PODS_PER_NODE) for h in sorted(assigned))
        )
        self.workload = {
            "apiVersion": keys.API_VERSION,
            "kind": "Workload",
            "metadata": {"name": WORKLOAD, "namespace": NAMESPACE, "resourceVersion": "7"},
            "spec": {"podSets": [{"name": "main", "count": ASSIGNED_NODES * PODS_PER_NODE}]},
            "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
                {"name": "main", "count": ASSIGNED_NODES * PODS_PER_NODE,
                 "topologyAssignment": encode_v1beta2(assignment)}]}},
        }
        # Half the pods already run, spread over the assigned nodes.
        self.pods = [make_pod(i, assigned[i % ASSIGNED_NODES] if i % 2 else None)
                     for i in range(ASSIGNED_NODES * PODS_PER_NODE)]

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return next((copy.deepcopy(p) for p in self.pods if p["metadata"]["name"] == name), None)

    async def get_node(self, name: str) -> dict[str, Any] | None:
        return next((n for n in self.nodes if n["metadata"]["name"] == name), None)

    async def get_workload(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.workload if name == WORKLOAD else None

    async def list_podset_pods(self, namespace: str, workload: str, podset: str) -> list[dict[str, Any]]:
        return self.pods

    async def list_pods_on_node(self, node: str) -> list[dict[str, Any]]:
        return [p for p in self.pods if p["spec"]["nodeName"] == node]

    async def list_nodes(self) -> list[dict[str, Any]]:
        return self.nodes

    async def list_bound_pods(self) -> list[dict[str, Any]]:
        return [p for p in self.pods if p["spec"]["nodeName"]]

    async def list_workloads(self) -> list[dict[str, Any]]:
        return [self.workload]

    async def get_resource_flavor(self, name: str) -> dict[str, Any] | None:
        return None

    async def get_topology(self, name: str) -> dict[str, Any] | None:
        return None

    async def post_binding(self, namespace: str, name: str, uid: str, node: str) -> None:
        return None

    async def patch_workload_annotations(
        self, namespace: str, name: str, resource_version: str, annotations: dict[str, str | None]
    ) -> dict[str, Any]:
        return self.workload

    async def update_workload_status(self, workload: dict[str, Any]) -> dict[str, Any]:
        return workload


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(session: aiohttp.ClientSession, url: str, body: bytes, n: int) -> list[float]:
    headers = {"Content-Type": "application/json"}
    for _ in range(3):  # warm the node cache and the connection
        async with session.post(url, data=body, headers=headers) as resp:
            reply = await resp.json()
            assert resp.status == 200 and not reply["Error"], reply
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        async with session.post(url, data=body, headers=headers) as resp:
            await resp.read()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def run(quick: bool) -> dict[str, Any]:
    cluster = StaticCluster()
    runner = web.AppRunner(make_app(ExtenderDeps(port=cluster, freeze_gc=True)), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    pod = make_pod(1_000_000, None)
    names = [n["metadata"]["name"] for n in cluster.nodes]
    bodies = {
        "node_names": json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode(),
        "full_nodes": json.dumps({"Pod": pod, "Nodes": {"items": cluster.nodes}, "NodeNames": None}).encode(),
    }
    counts = {"node_names": 100 if quick else 1000, "full_nodes": 10 if quick else 100}
    results: dict[str, Any] = {}
    try:
        async with aiohttp.ClientSession() as session:
            for mode, body in bodies.items():
                samples = await measure(session, f"http://127.0.0.1:{port}/filter", body, counts[mode])
                results[mode] = {
                    "requests": len(samples),
                    "body_bytes": len(body),
                    "p50_ms": round(statistics.median(samples), 3),
                    "p99_ms": round(percentile(samples, 0.99), 3),
                }
    finally:
        await runner.cleanup()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (smoke run)")
    args = parser.parse_args()
    results = asyncio.run(run(args.quick))
    for mode, figures in results.items():
        print(json.dumps({"mode": mode, **figures}))
    summary = {
        "benchmark": "extender_latency",
        "metrics": {
            "filter_p50_ms": results["node_names"]["p50_ms"],
            "filter_p99_ms": results["node_names"]["p99_ms"],
            "sched_pods_per_s_with": None,
            "sched_pods_per_s_without": None,
        },
        "env": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "nodes": NODES,
            "quick": args.quick,
            "filter_mode": "nodeCacheCapable=true (names); full-Node figures on the line above",
            "full_nodes_p50_ms": results["full_nodes"]["p50_ms"],
            "full_nodes_p99_ms": results["full_nodes"]["p99_ms"],
            "note": "scheduler throughput needs the dev cluster's kube-scheduler; not measured here",
        },
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
