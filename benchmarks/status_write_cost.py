"""What one Workload status write costs kube-apiserver, by how it is sent.

A manager's admission is one write of the Workload's status subresource; on two shared
cores kube-apiserver's CPU for those writes sets the pace of ``kueue_perf`` at 300/500.
This benchmark writes the same admission (the status ``kueue_perf_floor`` writes) to fresh
Workloads in four ways, by as many concurrent writers as pykueue's manager has:

- ``merge``: a JSON merge patch of the status with the base's ``resourceVersion`` (pykueue);
- ``put``: the whole object with its new status, a PUT of the status subresource;
- ``json``: a JSON patch, a ``test`` of the ``resourceVersion`` and an ``add`` of the status;
- ``apply``: a server-side apply of the status (Kueue's way, forced, as its own field manager).

Each round creates the Workloads (not measured), then times the writes of every method in
turn (the order rotates per round) and reads kube-apiserver's and etcd's CPU around them.
The dev cluster's pykueue is stopped for the run (its controllers would write those
Workloads too) and brought back after. Last line: the JSON contract of ``benchmarks``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.dev_lock import DevClusterUnavailable, holding_dev_cluster
from benchmarks.kueue_perf_floor import admission_patch
from benchmarks.kueue_perf_managers import process_cpu_s
from benchmarks.webhook_latency import percentile
from pykueue.api.wire import JSON
from pykueue.kube import resources as res
from pykueue.kube.client import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, ApiError, KubeClient, connect
from pykueue.manager.runtime.controllers.manager import STATUS_WRITERS

METHODS = ("merge", "put", "json", "apply")
NAMESPACE = "status-write-cost"
QUEUE, FLAVOR = "status-write-cost", "default-flavor"
FIELD_MANAGER = "status-write-cost"
_CLIENT_QPS, _CLIENT_BURST = 5000.0, 5000  # the apiserver, not the client, is measured


def workload(i: int) -> JSON:
    """A Workload of ``kueue_perf``'s shape: one pod of one CPU."""
    return {"apiVersion": res.WORKLOADS.api_version, "kind": "Workload",
            "metadata": {"name": f"w-{i}", "namespace": NAMESPACE},
            "spec": {"queueName": QUEUE, "priority": 100, "podSets": [{
                "name": "main", "count": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def write_request(method: str, obj: JSON, now: float) -> tuple[str, JSON | list[JSON], str, dict[str, str]]:
    """HTTP verb, body, content type and query that admit ``obj`` (a stored Workload) by
    ``method``; every one of them fails with 409 on a stale ``resourceVersion`` but apply,
    which, as Kueue sends it, takes the fields it owns by force."""
    patch = admission_patch(obj, FLAVOR, now)
    status, rv = patch["status"], patch["metadata"]["resourceVersion"]
    if method == "merge":
        return "PATCH", patch, MERGE_PATCH, {}
    if method == "put":
        return "PUT", {**obj, "status": status}, "application/json", {}
    if method == "json":
        return "PATCH", [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
                         {"op": "add", "path": "/status", "value": status}], JSON_PATCH, {}
    if method == "apply":
        meta = obj["metadata"]
        return "PATCH", {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                         "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                         "status": status}, APPLY_PATCH, {"fieldManager": FIELD_MANAGER, "force": "true"}
    raise ValueError(f"unknown method {method!r}; one of {', '.join(METHODS)}")


def body_bytes(method: str, obj: JSON) -> int:
    return len(json.dumps(write_request(method, obj, 0.0)[1], separators=(",", ":")))


async def _pool(items: Sequence[Any], workers: int, work: Any) -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def run() -> None:
        while not queue.empty():
            await work(queue.get_nowait())

    await asyncio.gather(*(run() for _ in range(workers)))


async def _create(client: KubeClient, n: int, offset: int) -> list[JSON]:
    made: list[JSON] = []

    async def one(i: int) -> None:
        made.append(await client.create(res.WORKLOADS.collection_path(NAMESPACE), workload(i)))

    await _pool(range(offset, offset + n), STATUS_WRITERS, one)
    return made


async def _write_all(client: KubeClient, method: str, objs: list[JSON]) -> list[float]:
    latencies: list[float] = []

    async def one(obj: JSON) -> None:
        verb, body, content_type, query = write_request(method, obj, time.time())
        path = res.WORKLOADS.object_path(obj["metadata"]["name"], NAMESPACE, "status")
        started = time.perf_counter()
        await client.request(verb, path, body=body, content_type=content_type, query=query or None)
        latencies.append(time.perf_counter() - started)

    await _pool(objs, STATUS_WRITERS, one)
    return latencies


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: process_cpu_s(pid) for name, pid in pids.items()}


async def measure(client: KubeClient, pids: dict[str, int], n: int, rounds: int) -> dict[str, Any]:
    samples: dict[str, list[dict[str, float]]] = {m: [] for m in METHODS}
    for r in range(rounds):
        order = METHODS[r % len(METHODS):] + METHODS[:r % len(METHODS)]
        objs = await _create(client, n * len(METHODS), r * n * len(METHODS))
        for k, method in enumerate(order):
            batch = objs[k * n:(k + 1) * n]
            before = _cpu(pids)
            started = time.perf_counter()
            latencies = await _write_all(client, method, batch)
            wall = time.perf_counter() - started
            after = _cpu(pids)
            sample = {f"{name}_cpu_ms_per_write": (after[name] - before[name]) * 1000 / n for name in pids}
            sample.update(writes_per_s=n / wall, p50_ms=percentile(latencies, 0.5) * 1000,
                          p99_ms=percentile(latencies, 0.99) * 1000)
            samples[method].append(sample)
            print(f"round {r + 1} {method:>5}: " + ", ".join(f"{key} {v:.2f}" for key, v in sample.items()),
                  file=sys.stderr, flush=True)
        await client.request("DELETE", res.WORKLOADS.collection_path(NAMESPACE))
    template = objs[0]
    by_method: dict[str, Any] = {}
    for method, runs in samples.items():
        by_method[method] = {key: round(statistics.median(s[key] for s in runs), 3) for key in runs[0]}
        by_method[method]["body_bytes"] = body_bytes(method, template)
    base = by_method["merge"].get("kube_apiserver_cpu_ms_per_write") or 0.0
    for method in METHODS:
        cost = by_method[method].get("kube_apiserver_cpu_ms_per_write")
        by_method[method]["apiserver_cpu_vs_merge"] = round(cost / base, 3) if cost and base else None
    return {"writes_per_method": n, "rounds": rounds, "writers": STATUS_WRITERS, "by_method": by_method}


async def _ensure_namespace(client: KubeClient) -> None:
    try:
        await client.create(res.NAMESPACES.collection_path(), {"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": NAMESPACE}})
    except ApiError as exc:
        if not exc.already_exists:
            raise


async def _run(kubeconfig: Path, record: dict[str, Any] | None, pids: dict[str, int],
               n: int, rounds: int) -> dict[str, Any]:
    from benchmarks.kueue_perf import take_over

    client = await connect(str(kubeconfig), qps=_CLIENT_QPS, burst=_CLIENT_BURST)
    try:
        await take_over(client, record)
        await _ensure_namespace(client)
        await client.request("DELETE", res.WORKLOADS.collection_path(NAMESPACE))
        return await measure(client, pids, n, rounds)
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.status_write_cost",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer writes and one round")
    parser.add_argument("--writes", type=int, default=None, help="writes per method and round (default 2000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 3)")
    args = parser.parse_args(argv)
    n = args.writes if args.writes is not None else 300 if args.quick else 2000
    rounds = args.rounds if args.rounds is not None else 1 if args.quick else 3
    if n < 1 or rounds < 1:
        parser.error("--writes and --rounds must be at least 1")
    from benchmarks.kueue_perf import dev_cluster, restore_dev_cluster

    try:
        with holding_dev_cluster("status_write_cost"):
            kubeconfig, processes = dev_cluster()  # outside the event loop: it runs its own
            pids = {name.replace("-", "_"): int(processes[name]["pid"])
                    for name in ("kube-apiserver", "etcd") if name in processes}
            try:
                metrics = asyncio.run(_run(kubeconfig, processes.get("pykueue"), pids, n, rounds))
            finally:
                restore_dev_cluster()
    except DevClusterUnavailable as exc:
        print(f"status_write_cost: {exc}", file=sys.stderr)
        return 1
    env = {"python": platform.python_version(), "machine": platform.machine(), "system": platform.system()}
    print(json.dumps({"benchmark": "status_write_cost", "metrics": metrics, "env": env}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
