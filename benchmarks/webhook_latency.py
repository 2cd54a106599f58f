"""Webhook latency over TLS at fixed rates, from a separate client process.

The server (``make_app`` with in-memory cluster facts, as ``pykueue run`` has them from its
informer stores) runs in a child process; this process opens keep-alive HTTPS connections
and sends reviews at a fixed rate (open loop: the send schedule does not wait for answers):
Job AdmissionReviews to ``/mutate-batch-v1-job`` by default, or with ``--review convert``
ConversionReviews of an admitted Workload from ``v1beta2`` to ``v1beta1`` to ``/convert``,
which kube-apiserver sends for every Workload write while it keeps a ``v1beta1`` watch cache.
Reports p50/p99 per rate, the server's CPU milliseconds per review, and the highest rate
whose p99 stays within the target. Last line: the JSON contract of ``benchmarks``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import ssl
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.kueue_perf_managers import process_cpu_s
from pykueue.api.conversion import V1BETA1, V1BETA2

TARGET_P99_MS = 5.0


def _serve(cert_dir: str, port_queue: Any) -> None:
    from pykueue.certs.rotation import server_context
    from pykueue.kube.event_loop import run_main
    from pykueue.webhook.app import WebhookDeps, make_app
    from pykueue.webhook.server import serve_webhook

    async def main() -> None:
        context = server_context(Path(cert_dir) / "tls.crt", Path(cert_dir) / "tls.key")
        # As the webhook serves: its limits (connections, deadlines, requests in flight) included.
        listener = await serve_webhook(make_app(WebhookDeps()), "127.0.0.1", 0, context)
        port_queue.put(listener.port)
        await asyncio.Event().wait()

    run_main(main())  # the event loop pykueue's servers run on


def _admission_review(i: int) -> bytes:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"job-{i}",
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "suspend": False,
            "parallelism": 1,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            },
        },
    }
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": str(uuid.uuid4()),
                "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
                "operation": "CREATE",
                "namespace": "default",
                "object": job,
            },
        }
    ).encode()


def _workload(i: int) -> dict[str, Any]:
    """An admitted Workload of a two-pod Job as pykueue stores it (v1beta2)."""
    condition = {"status": "True", "lastTransitionTime": "2026-11-28T12:00:00Z", "observedGeneration": 1}
    return {
        "apiVersion": V1BETA2, "kind": "Workload",
        "metadata": {"name": f"job-sample-{i}-1a2b3", "namespace": "team-a", "uid": str(uuid.uuid4()),
                     "resourceVersion": str(1000 + i), "generation": 1,
                     "labels": {"kueue.x-k8s.io/job-uid": str(uuid.uuid4())},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"sample-{i}",
                                          "uid": str(uuid.uuid4()), "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"queueName": "user-queue", "priority": 100, "active": True,
                 "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                      "name": "high"},
                 "podSets": [{"name": "main", "count": 2, "template": {"spec": {
                     "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "1", "memory": "200Mi"}}}]}}}]},
        "status": {
            "conditions": [{**condition, "type": "QuotaReserved", "reason": "QuotaReserved",
                            "message": "Quota reserved in ClusterQueue cluster-queue"},
                           {**condition, "type": "Admitted", "reason": "Admitted",
                            "message": "The workload is admitted"}],
            "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [{
                "name": "main", "count": 2, "flavors": {"cpu": "default-flavor", "memory": "default-flavor"},
                "resourceUsage": {"cpu": "2", "memory": "400Mi"}}]},
        },
    }


def _conversion_review(i: int) -> bytes:
    return json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": str(uuid.uuid4()), "desiredAPIVersion": V1BETA1,
                    "objects": [_workload(i)]},
    }).encode()


@dataclass(frozen=True)
class ReviewKind:
    path: str
    body: Callable[[int], bytes]
    accepted: Callable[[dict[str, Any]], bool]


REVIEWS = {
    "job": ReviewKind("/mutate-batch-v1-job", _admission_review,
                      lambda answer: bool(answer["response"]["allowed"])),
    "convert": ReviewKind("/convert", _conversion_review,
                          lambda answer: answer["response"]["result"]["status"] == "Success"
                          and answer["response"]["convertedObjects"][0]["apiVersion"] == V1BETA1),
}


async def _run_rate(url: str, ca: str, rate: float, seconds: float,
                    review: ReviewKind) -> tuple[list[float], int]:
    context = ssl.create_default_context(cafile=ca)
    latencies: list[float] = []
    errors = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=64)) as session:

        async def one(i: int) -> None:
            nonlocal errors
            body = review.body(i)
            start = time.perf_counter()
            try:
                async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
                    payload = await resp.json()
                    if resp.status != 200 or not review.accepted(payload):
                        errors += 1
            except (aiohttp.ClientError, OSError, ValueError, KeyError):
                errors += 1
            latencies.append((time.perf_counter() - start) * 1000)

        tasks = []
        begin = time.perf_counter()
        total = int(rate * seconds)
        for i in range(total):
            delay = begin + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
    return latencies, errors


def percentile(values: Sequence[float], q: float) -> float:
    """The sample at ``q`` of the sorted values (nearest rank below); 0 for none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--review", choices=sorted(REVIEWS), default="job",
                        help="job: Job AdmissionReviews (default); convert: Workload ConversionReviews")
    args = parser.parse_args()
    review = REVIEWS[args.review]
    from pykueue.certs.authority import ensure_bundle
    from pykueue.certs.rotation import write_pair

    seconds = 2.0 if args.quick else 5.0
    rates = (100, 250, 500) if args.quick else (100, 250, 500, 750, 1000, 1500)
    with tempfile.TemporaryDirectory() as cert_dir:
        bundle, _ = ensure_bundle(None, ["localhost"], ["127.0.0.1"])
        write_pair(Path(cert_dir), bundle)
        ctx = multiprocessing.get_context("spawn")
        ports: Any = ctx.Queue()
        server = ctx.Process(target=_serve, args=(cert_dir, ports), daemon=True)
        server.start()
        try:
            port = ports.get(timeout=30)
            url = f"https://127.0.0.1:{port}{review.path}"
            # warm-up: TLS sessions, imports
            asyncio.run(_run_rate(url, f"{cert_dir}/ca.crt", 50, 1.0, review))
            results = {}
            cpu_ms: dict[int, float] = {}
            errors = 0
            for rate in rates:
                cpu_before = process_cpu_s(server.pid) if server.pid is not None else 0.0
                lat, err = asyncio.run(_run_rate(url, f"{cert_dir}/ca.crt", rate, seconds, review))
                if server.pid is not None:
                    cpu_ms[rate] = (process_cpu_s(server.pid) - cpu_before) * 1000 / len(lat)
                errors += err
                results[rate] = (statistics.median(lat), percentile(lat, 0.99), max(lat))
                print(
                    f"rate {rate:>5}/s  p50 {results[rate][0]:.2f} ms  p99 {results[rate][1]:.2f} ms  "
                    f"max {results[rate][2]:.2f} ms  server CPU {cpu_ms.get(rate, float('nan')):.2f} ms "
                    f"per review  errors {err}"
                )
        finally:
            server.terminate()
            server.join(5)
    sustained = max((r for r, (_, p99, _) in results.items() if p99 <= TARGET_P99_MS), default=0)
    at500 = results.get(500, (float("nan"), float("nan"), float("nan")))
    print(
        json.dumps(
            {
                "benchmark": "webhook_latency",
                "metrics": {
                    "review": args.review,
                    "rate": 500,
                    "p50_ms": round(at500[0], 3),
                    "p99_ms": round(at500[1], 3),
                    "errors": errors,
                    "max_sustained_rate_p99_within_target": sustained,
                    "target_p99_ms": TARGET_P99_MS,
                    "by_rate": {
                        str(r): {"p50_ms": round(v[0], 3), "p99_ms": round(v[1], 3),
                                 "server_cpu_ms_per_review": round(cpu_ms.get(r, float("nan")), 3)}
                        for r, v in results.items()
                    },
                },
                "env": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "machine": platform.machine(),
                },
            }
        )
    )


if __name__ == "__main__":
    main()
