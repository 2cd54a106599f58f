"""Dashboard server time with 15,000 Workloads and 1,000 ClusterQueues, no cluster.

The core is built in-process from the same synthetic listing as the ``what_if`` benchmark
(10 cohorts of 100 ClusterQueues; per queue 10 admitted and 5 pending Workloads, every one
evaluated) and served by the dashboard's real aiohttp application on loopback, with an
authenticator and authorizer that accept everyone (the reviews are cached in production, so
they are not what is measured here).

* ``page``: the main page's data after a change of the core, i.e. the four requests the page
  makes (cohort tree, pending and admitted workloads, LocalQueues; first page of each) with
  the index rebuilt for the new revision, from request to the last byte received.
* ``update``: one live update: a workload finishes and another is admitted (the core's own
  work is not timed), then the server notices the change, rebuilds the index and sends the
  event with the totals, and the page refetches what it shows; from the change to the last
  byte of the refetch.
* ``poll``: the idle change check the server runs four times a second while pages listen.

The process is left as ``pykueue run`` leaves it (the cyclic collector on): a full collection
over this heap takes hundreds of milliseconds and lands in whatever request allocates at that
moment, so ``gc_full_collections`` and ``gc_longest_full_ms`` are reported beside the p99.
``--gc-freeze`` moves the built core out of the collector's reach first (``gc.freeze()``), to
show the dashboard's own cost apart from the process's collections.

Reported as median and p99 in milliseconds (target: p99 <= 100 ms). ``--quick`` uses 100
queues and 1,500 Workloads.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

import aiohttp

from benchmarks.what_if import NOW, listing
from pykueue.manager.core.workload_state import PENDING
from pykueue.manager.runtime.dashboard import view
from pykueue.manager.runtime.dashboard.changes import ChangeFeed
from pykueue.manager.runtime.dashboard.server import make_app, start
from pykueue.manager.runtime.visibility.auth import AuthorizationDecision, RequestAttributes, UserInfo
from pykueue.manager.scenario.cluster_snapshot import apply_snapshot, snapshot_scenario
from pykueue.manager.scenario.explain import explain_record
from pykueue.manager.scenario.runner import Simulation

TARGET_P99_MS = 100.0
PAGE = ("/api/clusterqueues?page=0", "/api/workloads?state=pending&page=0",
        "/api/workloads?state=admitted&page=0", "/api/localqueues?page=0")


class _Everyone:
    async def authenticate(self, token: str) -> UserInfo | None:
        return UserInfo("benchmark")

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> AuthorizationDecision:
        return AuthorizationDecision(True)


def build(cohorts: int, queues: int) -> Simulation:
    data = listing(cohorts, queues)
    scenario = snapshot_scenario(data)
    sim = Simulation(scenario, start=NOW, evaluate_each=True)
    apply_snapshot(sim, scenario.objects)
    return sim


def _ms(samples: list[float], quantile: float) -> float:
    ordered = sorted(samples)
    return round(1000 * ordered[min(len(ordered) - 1, int(quantile * len(ordered)))], 2)


async def _fetch_page(session: aiohttp.ClientSession, base: str) -> int:
    bodies = await asyncio.gather(*(_get(session, base + path) for path in PAGE))
    return sum(len(b) for b in bodies)


async def _get(session: aiohttp.ClientSession, url: str) -> bytes:
    async with session.get(url, headers={"Authorization": "Bearer x"}) as r:
        body = await r.read()
        if r.status != 200:
            raise RuntimeError(f"{url}: {r.status} {body[:200]!r}")
        return body


def _next_change(sim: Simulation) -> None:
    """A workload finishes and the core admits what fits: the change the update carries."""
    running = next(r for r in sim.core.all_workloads().values() if r.holds_quota)
    sim.core.finish(running.key)
    sim.core.run_until_idle()


class _FullCollections:
    """Counts and times the collector's full (generation 2) passes: over a heap holding
    15,000 workloads one takes hundreds of milliseconds, whoever happens to allocate."""

    def __init__(self) -> None:
        self.count = 0
        self.longest_s = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.count += 1
            self.longest_s = max(self.longest_s, time.perf_counter() - self._started)


async def measure(sim: Simulation, rounds: int) -> dict[str, Any]:
    collections = _FullCollections()
    gc.callbacks.append(collections)
    try:
        metrics = await _measure(sim, rounds)
    finally:
        gc.callbacks.remove(collections)
    metrics["gc_full_collections"] = collections.count
    metrics["gc_longest_full_ms"] = round(1000 * collections.longest_s, 1)
    return metrics


async def _measure(sim: Simulation, rounds: int) -> dict[str, Any]:
    feed = ChangeFeed(sim.core)
    everyone = _Everyone()
    runner, port = await start(make_app(feed, everyone, everyone, explain_record), "127.0.0.1", 0)
    base = f"http://127.0.0.1:{port}"
    page_s: list[float] = []
    update_s: list[float] = []
    poll_s: list[float] = []
    size = 0
    try:
        async with aiohttp.ClientSession() as session:
            await _fetch_page(session, base)  # warm up connections
            for _ in range(rounds):
                _next_change(sim)
                feed.expire()  # the page's first request must see the change, as after a pause
                started = time.perf_counter()
                size = await _fetch_page(session, base)
                page_s.append(time.perf_counter() - started)

                _next_change(sim)
                started = time.perf_counter()
                feed.check()  # the poller's look that wakes the event streams
                revision, index = feed.index()  # what each stream sends
                event = json.dumps(view.change_summary(sim.core, index, revision))
                await _fetch_page(session, base)
                update_s.append(time.perf_counter() - started)

                started = time.perf_counter()
                feed.check()
                poll_s.append(time.perf_counter() - started)
            pending = next(r.key for r in sim.core.all_workloads().values() if r.status == PENDING)
            ns, name = pending.split("/")
            started = time.perf_counter()
            await _get(session, f"{base}/api/workloads/{ns}/{name}")
            detail_ms = round(1000 * (time.perf_counter() - started), 2)
    finally:
        await runner.cleanup()
    metrics = {
        "page_p50_ms": _ms(page_s, 0.5), "page_p99_ms": _ms(page_s, 0.99),
        "update_p50_ms": _ms(update_s, 0.5), "update_p99_ms": _ms(update_s, 0.99),
        "poll_p50_ms": _ms(poll_s, 0.5), "poll_p99_ms": _ms(poll_s, 0.99),
        "page_median_ms": round(1000 * statistics.median(page_s), 2),
        "workload_page_ms": detail_ms, "page_bytes": size, "event_bytes": len(event),
        "target_p99_ms": TARGET_P99_MS, "rounds": rounds,
    }
    metrics["within_target"] = max(metrics["page_p99_ms"], metrics["update_p99_ms"]) <= TARGET_P99_MS
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 queues, 1,500 workloads")
    parser.add_argument("--rounds", type=int, default=None, help="measurements of each kind")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() once the core is built, as a long-running process could after its "
                             "informers synced: full collections then skip the core's objects")
    args = parser.parse_args(argv)
    cohorts, queues = (2, 50) if args.quick else (10, 100)
    rounds = args.rounds or (20 if args.quick else 100)
    started = time.perf_counter()
    sim = build(cohorts, queues)
    if args.gc_freeze:
        gc.collect()
        gc.freeze()
    print(f"core built in {time.perf_counter() - started:.1f} s: {len(sim.core.all_workloads())} workloads, "
          f"{len(sim.core.cluster_queues())} ClusterQueues", file=sys.stderr)
    metrics = asyncio.run(measure(sim, rounds))
    metrics.update(workloads=len(sim.core.all_workloads()), cluster_queues=len(sim.core.cluster_queues()))
    print(f"page p50 {metrics['page_p50_ms']} ms, p99 {metrics['page_p99_ms']} ms; update p50 "
          f"{metrics['update_p50_ms']} ms, p99 {metrics['update_p99_ms']} ms; idle poll p50 "
          f"{metrics['poll_p50_ms']} ms; {metrics['gc_full_collections']} full collections "
          f"(longest {metrics['gc_longest_full_ms']} ms)", file=sys.stderr)
    # Server times scale with what else runs on the machine: the load says how busy it was.
    env = {"python": platform.python_version(), "machine": platform.machine(), "quick": args.quick,
           "cohorts": cohorts, "cluster_queues": cohorts * queues, "cpus": os.cpu_count(),
           "load_average_1m": round(os.getloadavg()[0], 2), "gc_freeze": args.gc_freeze}
    print(json.dumps({"benchmark": "dashboard", "metrics": metrics, "env": env}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
