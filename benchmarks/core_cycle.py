"""Scheduling-core throughput on Kueue's large-scale generator, in simulated time.

The set-up follows Kueue's scheduler performance test (large-scale configuration):
10 cohorts x 100 ClusterQueues (nominal 20 CPU, borrowingLimit 100 each), 50 workloads
per queue in three classes created at fixed intervals -- small (35 @ 60 ms, 1 CPU, runs
150 ms, priority 50), medium (11 @ 300 ms, 5 CPU, 350 ms, 100), large (4 @ 700 ms,
20 CPU, 700 ms, 200). There is no cluster: creation and completion are events on a
simulated clock and the core runs cycles until idle after each batch of simultaneous
events. Throughput is measured on the wall clock: decisions (an entry admitted or
left pending in a cycle) per second of CPU spent in the core.

The same generator runs twice: classical scheduling (the ``decisions_per_s``, ``wall_s``
and ``peak_rss_mb`` keys), then with the Configuration's ``fairSharing`` on (admission
by dominant resource share, fair-sharing preemption), reported as ``fair_sharing_*``.
Both evaluate every head (equivalence hashing off), so decisions/s is the speed of one
evaluation. A third, classical run with Kueue's default equivalence hashing (one NoFit
verdict parks the queued workloads of the same shape) reports ``equivalence_*``: fewer
decisions for the same admissions.

``--quick`` runs 2 cohorts x 20 queues. The last line printed is the JSON result.
"""

from __future__ import annotations

import argparse
import heapq
import json
import platform
import resource
import sys
import time
from typing import Any

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.fair_sharing import DEFAULT_STRATEGIES
from pykueue.manager.core.workload_state import ADMITTED

CLASSES = (  # name, per queue, interval ms, cpu, runtime ms, priority
    ("small", 35, 60, 1, 150, 50),
    ("medium", 11, 300, 5, 350, 100),
    ("large", 4, 700, 20, 700, 200),
)


def _setup(core: QueueingCore, cohorts: int, queues: int) -> list[str]:
    core.apply({"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}})
    names = []
    for c in range(cohorts):
        for q in range(queues):
            name = f"cq-{c}-{q}"
            names.append(name)
            core.apply({"kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
                "cohortName": f"cohort-{c}", "namespaceSelector": {},
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "rf", "resources": [
                    {"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}]}]}]}})
            core.apply({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": name},
                        "spec": {"clusterQueue": name}})
    return names


def _workload(ns: str, name: str, cpu: int, priority: int, created_s: float) -> dict[str, Any]:
    return {"kind": "Workload", "metadata": {"name": name, "namespace": ns},
            "spec": {"queueName": "lq", "priority": priority, "podSets": [{
                "name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}


def run(cohorts: int, queues: int, fair_sharing: bool = False, equivalence: bool = False) -> dict[str, Any]:
    config = CoreConfig(fair_sharing=DEFAULT_STRATEGIES if fair_sharing else None,
                        equivalence_hashing=equivalence)
    core = QueueingCore(config, now=0.0)
    names = _setup(core, cohorts, queues)
    events: list[tuple[int, int, str, str]] = []  # (ms, order, kind, key)
    runtime: dict[str, int] = {}
    created: dict[str, int] = {}
    seq = 0
    for ns in names:
        for cls, count, interval, _cpu, run_ms, _prio in CLASSES:
            for i in range(count):
                seq += 1
                key = f"{ns}/{cls}-{i}"
                heapq.heappush(events, ((i + 1) * interval, seq, "create", key))
                runtime[key] = run_ms
    spec = {c[0]: c for c in CLASSES}
    decisions = admitted = cycles = 0
    tta: dict[str, list[int]] = {c[0]: [] for c in CLASSES}
    core_s = 0.0
    wall0 = time.perf_counter()
    while events:
        now_ms = events[0][0]
        t0 = time.perf_counter()
        core.fire_timers(now_ms / 1000)
        while events and events[0][0] == now_ms:
            _, _, kind, key = heapq.heappop(events)
            if kind == "create":
                ns, name = key.split("/")
                _, _, _, cpu, _, prio = spec[name.split("-")[0]]
                core.apply_workload(_workload(ns, name, cpu, prio, now_ms / 1000))
                created[key] = now_ms
            else:
                core.finish(key)
        out = core.run_until_idle()
        core_s += time.perf_counter() - t0
        decisions += len(out)
        cycles += 1
        for d in out:
            if d.outcome == "Admit":
                rec = core.workload(d.key)
                if rec.status == ADMITTED:
                    admitted += 1
                    tta[d.key.split("/")[1].split("-")[0]].append(now_ms - created[d.key])
                    seq += 1
                    heapq.heappush(events, (now_ms + runtime[d.key], seq, "finish", d.key))
    wall = time.perf_counter() - wall0
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "decisions_per_s": round(decisions / core_s, 1) if core_s else 0.0,
        "admissions_per_s": round(admitted / core_s, 1) if core_s else 0.0,
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(rss_kb / 1024, 1),
        "decisions": decisions,
        "admitted": admitted,
        "workloads": len(created),
        "event_batches": cycles,
        "core_s": round(core_s, 3),
        "simulated_s": round(max(created.values(), default=0) / 1000, 3),
        "tta_ms": {k: round(sum(v) / len(v), 1) if v else None for k, v in tta.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 cohorts x 20 queues")
    args = parser.parse_args(argv)
    cohorts, queues = (2, 20) if args.quick else (10, 100)
    metrics = run(cohorts, queues)  # first, so peak_rss_mb is the classical run's
    fair = run(cohorts, queues, fair_sharing=True)
    equivalence = run(cohorts, queues, equivalence=True)
    for label, m in (("classical", metrics), ("fair sharing", fair), ("equivalence hashing", equivalence)):
        print(f"{label}: {m['workloads']} workloads, {m['admitted']} admitted, {m['decisions']} decisions "
              f"in {m['core_s']} s of core time ({m['decisions_per_s']} decisions/s)", file=sys.stderr)
    for key in ("decisions_per_s", "admissions_per_s", "wall_s", "decisions", "admitted", "core_s", "tta_ms"):
        metrics[f"fair_sharing_{key}"] = fair[key]
    metrics["fair_sharing_peak_rss_mb"] = fair["peak_rss_mb"]
    for key in ("decisions_per_s", "admissions_per_s", "decisions", "admitted", "core_s", "tta_ms"):
        metrics[f"equivalence_{key}"] = equivalence[key]
    env = {"python": platform.python_version(), "machine": platform.machine(),
           "cohorts": cohorts, "cluster_queues": cohorts * queues, "quick": args.quick}
    print(json.dumps({"benchmark": "core_cycle", "metrics": metrics, "env": env}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
