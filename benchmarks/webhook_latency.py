"""Job AdmissionReview latency over TLS at fixed rates, from a separate client process.

The server (``make_app`` with in-memory cluster facts, as ``pykueue run`` has them from its
informer stores) runs in a child process; this process opens keep-alive HTTPS connections
and sends ``/mutate-batch-v1-job`` reviews at a fixed rate (open loop: the send schedule
does not wait for answers). Reports p50/p99 per rate and the highest rate whose p99 stays
within the target. Last line: the JSON contract of ``benchmarks``.
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
from pathlib import Path
from typing import Any

import aiohttp

TARGET_P99_MS = 5.0


def _serve(cert_dir: str, port_queue: Any) -> None:
    from aiohttp import web

    from certs.rotation import server_context
    from kube.event_loop import run_main
    from webhook.app import WebhookDeps, make_app

    async def main() -> None:
        context = server_context(Path(cert_dir) / "tls.crt", Path(cert_dir) / "tls.key")
        runner = web.AppRunner(make_app(WebhookDeps()), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port_queue.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    run_main(main())  # the event loop pykueue's servers run on


def _review(i: int) -> bytes:
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


async def _run_rate(url: str, ca: str, rate: float, seconds: float) -> tuple[list[float], int]:
    context = ssl.create_default_context(cafile=ca)
    latencies: list[float] = []
    errors = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=64)) as session:

        async def one(i: int) -> None:
            nonlocal errors
            body = _review(i)
            start = time.perf_counter()
            try:
                async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
                    payload = await resp.json()
                    if resp.status != 200 or not payload["response"]["allowed"]:
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


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    args = parser.parse_args()
    from certs.authority import ensure_bundle
    from certs.rotation import write_pair

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
            url = f"https://127.0.0.1:{port}/mutate-batch-v1-job"
            asyncio.run(_run_rate(url, f"{cert_dir}/ca.crt", 50, 1.0))  # warm-up: TLS sessions, imports
            results = {}
            errors = 0
            for rate in rates:
                lat, err = asyncio.run(_run_rate(url, f"{cert_dir}/ca.crt", rate, seconds))
                errors += err
                results[rate] = (statistics.median(lat), _pct(lat, 0.99), max(lat))
                print(
                    f"rate {rate:>5}/s  p50 {results[rate][0]:.2f} ms  p99 {results[rate][1]:.2f} ms  "
                    f"max {results[rate][2]:.2f} ms  errors {err}"
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
                    "rate": 500,
                    "p50_ms": round(at500[0], 3),
                    "p99_ms": round(at500[1], 3),
                    "errors": errors,
                    "max_sustained_rate_p99_within_target": sustained,
                    "target_p99_ms": TARGET_P99_MS,
                    "by_rate": {
                        str(r): {"p50_ms": round(v[0], 3), "p99_ms": round(v[1], 3)}
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
