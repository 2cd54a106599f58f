"""TAS scheduler extender: filter latency at 5,000 nodes, and kube-scheduler throughput.

``python -m benchmarks.extender_latency [--quick]``

A managed pod (its PodSet assigned 4 pods on each of 64 nodes) is filtered against every
node, as kube-scheduler does with ``percentageOfNodesToScore: 100``: once with node names
only (``nodeCacheCapable: true``, the shipped configuration; these are the headline
figures) and once with full Node objects (``false``). Latency is the client-side round
trip of one request at a time. The cluster behind the extender is an in-memory port, so
the figures are the extender's own cost, not the apiserver's.

Scheduler throughput is measured on a private dev cluster of real binaries (its own state
directory, started and stopped by this run, so a shared dev cluster is not disturbed):
``N`` plain pods (300; 100 with ``--quick``) are created in a fresh namespace and the rate
is ``N / (last pod seen bound - first create)``, watched through the API. *Without*: the
dev cluster's default kube-scheduler. *With*: a second kube-scheduler running the shipped
``pykueue-tas-scheduler`` configuration (same client rate limits) wired to ``pykueue
extender`` in a subprocess on loopback, so every pod goes through the configured verbs
(filter and bind). The pods are unmanaged (no Workload), i.e. the wiring's fixed cost per
pod. Rounds alternate (without, with, with, without; twice, once with ``--quick``) and each mode's
figure is the median of its rounds; ``sched_ratio`` is with / without. Each *with* round
also records the CPU seconds of the extender and the second kube-scheduler (``/proc``),
summarised as the median milliseconds per pod. This part needs
the dev-cluster binaries (``pykueue dev build``); ``--no-cluster`` skips it. A full run
takes about 1.5 minutes here (2 cores). The last line printed is the JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client as kube_client
from kubernetes_asyncio import config as kube_config

from benchmarks.kueue_perf_managers import process_cpu_s
from pykueue.api import keys
from pykueue.certs.rotation import require_client_certificates, server_context
from pykueue.devcluster.paths import STATE_ENV
from pykueue.devcluster.tas_scheduler import extender_pki, start_extender, start_tas_scheduler
from pykueue.extender.app import ExtenderDeps, make_app
from pykueue.extender.server import serve
from pykueue.manager.core.tas.assignment import DomainAssignment, TopologyAssignment, encode_v1beta2

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


async def run(quick: bool, pki: Path) -> dict[str, Any]:
    """Filter latency over mutual TLS with the caller authorized, as the shipped wiring runs."""
    cluster = StaticCluster()
    serving_crt, serving_key, tls = extender_pki(pki)
    server_tls = server_context(serving_crt, serving_key)
    require_client_certificates(server_tls, tls.ca_file.read_bytes())
    deps = ExtenderDeps(port=cluster, freeze_gc=True, allowed_clients=frozenset({TAS_SCHEDULER}),
                        scheduler_name=TAS_SCHEDULER)
    server = await serve(make_app(deps), "127.0.0.1", 0, server_tls)
    port = server.port
    pod = make_pod(1_000_000, None)
    names = [n["metadata"]["name"] for n in cluster.nodes]
    bodies = {
        "node_names": json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode(),
        "full_nodes": json.dumps({"Pod": pod, "Nodes": {"items": cluster.nodes}, "NodeNames": None}).encode(),
    }
    counts = {"node_names": 100 if quick else 1000, "full_nodes": 10 if quick else 100}
    results: dict[str, Any] = {}
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls.context())) as session:
            for mode, body in bodies.items():
                samples = await measure(session, f"https://127.0.0.1:{port}/filter", body, counts[mode])
                results[mode] = {
                    "requests": len(samples),
                    "body_bytes": len(body),
                    "p50_ms": round(statistics.median(samples), 3),
                    "p99_ms": round(percentile(samples, 0.99), 3),
                }
    finally:
        await server.stop()
    return results


# -- scheduler throughput on a private dev cluster ---------------------------------------
REPO = Path(__file__).resolve().parents[1]
SCHED_PODS = 300
SCHED_PODS_QUICK = 100
WARMUP_PODS = 10
CREATE_CONCURRENCY = 32
ROUND_DEADLINE_S = 60.0
CLEANUP_DEADLINE_S = 60.0
CLUSTER_DEADLINE_S = 240.0
DEFAULT_SCHEDULER = "default-scheduler"
TAS_SCHEDULER = "pykueue-tas-scheduler"
# The private cluster's own TAS scheduler serves the shipped profile; this run's has its own.
BENCH_PROFILE = "pykueue-tas-scheduler-bench"
MODES = {"without": DEFAULT_SCHEDULER, "with": BENCH_PROFILE}


@contextlib.contextmanager
def private_cluster() -> Iterator[Path]:
    """A dev cluster in its own temporary state directory; yields its admin kubeconfig.

    ``PYKUEUE_DEV_STATE`` is also set in this process while the cluster runs, so the
    helpers that start the extender and the second scheduler find this cluster.
    """
    parent = Path(tempfile.mkdtemp(prefix="pykueue-bench-"))
    env = {**os.environ, STATE_ENV: str(parent / "dev")}
    previous = os.environ.get(STATE_ENV)
    os.environ[STATE_ENV] = env[STATE_ENV]
    try:
        up = subprocess.run([sys.executable, "-m", "pykueue.devcluster", "up"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=CLUSTER_DEADLINE_S, check=False)
        if up.returncode != 0:
            raise RuntimeError(f"private dev cluster did not start: {up.stderr[-2000:]}")
        last = up.stdout.strip().splitlines()[-1]
        yield Path(last.split(": ", 1)[1])
    finally:
        subprocess.run([sys.executable, "-m", "pykueue.devcluster", "down"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=CLUSTER_DEADLINE_S, check=False)
        if previous is None:
            os.environ.pop(STATE_ENV, None)
        else:
            os.environ[STATE_ENV] = previous
        shutil.rmtree(parent, ignore_errors=True)


def bench_pod(name: str, scheduler: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "sched-bench"}},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
        },
    }


async def _poll(what: str, check: Any, deadline_s: float) -> None:
    """Bounded poll of an async predicate (start-up and clean-up only, never measured)."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > deadline_s:
            raise TimeoutError(f"timed out after {deadline_s:.0f}s waiting for {what}")
        await asyncio.sleep(0.2)


async def _raw(call: Any, *args: Any, **kwargs: Any) -> Any:
    response = await call(*args, _preload_content=False, **kwargs)
    return json.loads(await response.read())


async def sched_round(api: kube_client.ApiClient, mode: str, count: int,
                      watched: dict[str, int] | None = None) -> dict[str, Any]:
    """Create ``count`` pods for the mode's scheduler; the time until the last is bound, and
    the CPU seconds each ``watched`` process (name -> pid) spent meanwhile."""
    core = kube_client.CoreV1Api(api)
    namespace = f"sched-bench-{mode}-{uuid.uuid4().hex[:6]}"
    await _raw(core.create_namespace, {"metadata": {"name": namespace}})

    async def has_service_account() -> bool:
        listed = await _raw(core.list_namespaced_service_account, namespace)
        return any(sa["metadata"]["name"] == "default" for sa in listed.get("items") or [])

    await _poll(f"ServiceAccount {namespace}/default", has_service_account, 30.0)
    bound: dict[str, tuple[float, str]] = {}
    # Watch from the resourceVersion of an empty list taken before the first create, so no
    # bind is missed; the apiserver may end a watch early, which resumes where it stopped.
    version = str((await _raw(core.list_namespaced_pod, namespace))["metadata"]["resourceVersion"])

    async def watch() -> None:
        nonlocal version
        while True:
            stream: Any = await core.list_namespaced_pod(
                namespace, watch=True, resource_version=version, allow_watch_bookmarks=True,
                timeout_seconds=int(ROUND_DEADLINE_S) + 30, _preload_content=False)
            async with stream:
                async for line in stream.content:
                    event = json.loads(line)
                    pod = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise RuntimeError(f"watch of {namespace} failed: {pod.get('message')}")
                    meta = pod.get("metadata") or {}
                    version = str(meta.get("resourceVersion") or version)
                    node = (pod.get("spec") or {}).get("nodeName")
                    name = str(meta.get("name"))
                    if node and name not in bound:
                        bound[name] = (time.perf_counter(), node)
                        if len(bound) == count:
                            return

    gate = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def create(i: int) -> None:
        async with gate:
            await _raw(core.create_namespaced_pod, namespace, bench_pod(f"p-{i}", MODES[mode]))

    watcher = asyncio.create_task(watch())
    cpu_before = {name: process_cpu_s(pid) for name, pid in (watched or {}).items()}
    started = time.perf_counter()
    try:
        await asyncio.gather(*(create(i) for i in range(count)))
        created = time.perf_counter() - started
        done, _ = await asyncio.wait([watcher], timeout=ROUND_DEADLINE_S)
        if watcher in done:
            watcher.result()  # a broken watch is an error, not a slow scheduler
        cpu = {f"{name}_cpu_s": round(process_cpu_s(pid) - cpu_before[name], 3)
               for name, pid in (watched or {}).items()}
    finally:
        watcher.cancel()
        await _raw(core.delete_collection_namespaced_pod, namespace, grace_period_seconds=0)

        async def pods_gone() -> bool:
            listed = await _raw(core.list_namespaced_pod, namespace)
            return not listed.get("items")

        await _poll(f"pods of {namespace} to be deleted", pods_gone, CLEANUP_DEADLINE_S)
        await _raw(core.delete_namespace, namespace)
    if len(bound) < count:
        raise RuntimeError(f"{mode}: only {len(bound)}/{count} pods bound within {ROUND_DEADLINE_S:.0f}s")
    seconds = max(t for t, _ in bound.values()) - started
    return {"mode": mode, "pods": count, "seconds": round(seconds, 3),
            "pods_per_s": round(count / seconds, 1), "create_s": round(created, 3),
            "nodes_used": len({node for _, node in bound.values()}), **cpu}


async def sched_rounds(kubeconfig: Path, count: int, order: list[str],
                       watched: dict[str, int]) -> list[dict[str, Any]]:
    api = await kube_config.new_client_from_config(config_file=str(kubeconfig))
    async with api:
        for mode in MODES:  # warm-up: connections, caches, the extender's node list
            await sched_round(api, mode, WARMUP_PODS)
        return [await sched_round(api, mode, count, watched if mode == "with" else None) for mode in order]


def run_throughput(quick: bool) -> dict[str, Any]:
    count = SCHED_PODS_QUICK if quick else SCHED_PODS
    # ABBA blocks cancel slow drift; the median per mode drops a round disturbed by a
    # neighbour on a shared machine.
    order = ["without", "with", "with", "without"] * (1 if quick else 2)
    with private_cluster() as kubeconfig, tempfile.TemporaryDirectory(prefix="pykueue-bench-") as work:
        extender = start_extender(Path(work), profile=BENCH_PROFILE)
        try:
            assert extender.tls is not None
            scheduler = start_tas_scheduler(Path(work), extender.url, extender.tls, BENCH_PROFILE)
            try:
                watched = {"extender": extender.record.pid, "tas_scheduler": scheduler.record.pid}
                rounds = asyncio.run(sched_rounds(kubeconfig, count, order, watched))
            finally:
                scheduler.stop()
        finally:
            extender.stop()
    per_mode = {mode: round(statistics.median(r["pods_per_s"] for r in rounds if r["mode"] == mode), 1)
                for mode in MODES}
    # The wiring's CPU per pod is steadier than throughput on a busy machine.
    cpu_ms = {f"{name}_cpu_ms_per_pod": round(1000 * statistics.median(
        r[f"{name}_cpu_s"] for r in rounds if r["mode"] == "with") / count, 3)
        for name in ("extender", "tas_scheduler")}
    return {"pods": count, "rounds": rounds, **per_mode, **cpu_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests and pods (smoke run)")
    parser.add_argument("--no-cluster", action="store_true",
                        help="skip the scheduler throughput part (needs the dev-cluster binaries)")
    parser.add_argument("--results", metavar="FILE", default=None,
                        help="also write the summary, filter figures and every round to FILE (JSON)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pykueue-bench-pki-") as pki:
        results = asyncio.run(run(args.quick, Path(pki)))
    for mode, figures in results.items():
        print(json.dumps({"mode": mode, **figures}))
    sched: dict[str, Any] | None = None
    if not args.no_cluster:
        sched = run_throughput(args.quick)
        for figures in sched["rounds"]:
            print(json.dumps(figures))
    with_ = sched["with"] if sched else None
    without = sched["without"] if sched else None
    summary = {
        "benchmark": "extender_latency",
        "metrics": {
            "filter_p50_ms": results["node_names"]["p50_ms"],
            "filter_p99_ms": results["node_names"]["p99_ms"],
            "sched_pods_per_s_with": with_,
            "sched_pods_per_s_without": without,
            "sched_ratio": round(with_ / without, 3) if with_ and without else None,
            "extender_cpu_ms_per_pod": sched["extender_cpu_ms_per_pod"] if sched else None,
            "tas_scheduler_cpu_ms_per_pod": sched["tas_scheduler_cpu_ms_per_pod"] if sched else None,
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
            "sched_pods": sched["pods"] if sched else None,
            "sched_cluster": "private dev cluster, 8 kwok nodes; with = second kube-scheduler "
                             "(pykueue-tas-scheduler profile) + pykueue extender subprocess, unmanaged pods",
            "note": None if sched else "scheduler throughput skipped (--no-cluster)",
        },
    }
    print(json.dumps(summary))
    if args.results:
        record = {**summary, "filter": results, "rounds": sched["rounds"] if sched else []}
        Path(args.results).write_text(json.dumps(record, indent=1) + "\n")

if __name__ == "__main__":
    main()
