"""The manager's ``/metrics`` page at Kueue's large-scale shape, in-process, no cluster.

The ``large-scale`` config's 1,000 ClusterQueues and 1,000 LocalQueues are built in the core,
its first 20 s of Workloads are created and run through the scheduler once, and those admitted
finish, so that every per-queue family Kueue feeds on admission and completion (counters and
their wait-time and execution-time histograms, per ClusterQueue and per LocalQueue) has its
series for each queue, as after the first minute of a ``kueue_perf`` run. Then the page is
scraped as the server does: the state gauges recomputed from the core (``refresh``), the page
rendered, and gzipped as it is for a scraper that accepts gzip.

Reported: page bytes plain and gzipped, lines, the CPU seconds of each step (medians over
``--rounds``; CPU, not wall time, as the machine is shared: on an idle core they are the
wall time of a scrape), and the bytes per family (the five largest). ``--quick`` uses the first cohort
(100 queues). With ``--reference``, the same page through prometheus_client's own renderer
too, for comparison.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import re
import statistics
import sys
import time
from collections import Counter
from typing import Any

from prometheus_client import generate_latest

from pykueue.kube.endpoints import GZIP_LEVEL
from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.settings import IMMEDIATE
from pykueue.manager.core.workload_state import ADMITTED
from pykueue.manager.runtime.metrics import KueueMetrics
from pykueue.manager.runtime.metrics_feed import MetricsFeed

from .eviction_latency import CONFIGS, _creations
from .kueue_perf_config import flavor_object, load_config, queue_plans

CREATED_MS = 20_000
_SERIES = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)")
_SUFFIX = re.compile(r"_(bucket|sum|count)$")


def build(quick: bool) -> tuple[QueueingCore, KueueMetrics, MetricsFeed]:
    config = load_config(CONFIGS / "large-scale.yaml")
    plans = queue_plans(config)
    if quick:
        plans = [p for p in plans if p.cohort == plans[0].cohort]
    core = QueueingCore(CoreConfig(scheduling=IMMEDIATE), now=0.0)
    core.apply(flavor_object(config))
    for plan in plans:
        for obj in plan.objects(config.flavor.name):
            if obj["kind"] != "Namespace":
                core.apply(obj)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    for ev in _creations(plans):
        if ev.at_ms <= CREATED_MS and ev.obj is not None:
            core.apply_workload(ev.obj)
    core.fire_timers(1.0)
    core.run_until_idle()
    feed.observe(core.take_changes(), 1.0)
    for key, rec in list(core.all_workloads().items()):
        if rec.status == ADMITTED:
            core.finish(key)
    core.fire_timers(5.0)
    core.run_until_idle()
    feed.observe(core.take_changes(), 5.0)
    return core, metrics, feed


def per_family(page: bytes) -> Counter[str]:
    sizes: Counter[str] = Counter()
    for line in page.decode().splitlines():
        if line.startswith("#"):
            continue
        m = _SERIES.match(line)
        if m:
            sizes[_SUFFIX.sub("", m.group(1))] += len(line) + 1
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first cohort only (100 queues)")
    parser.add_argument("--rounds", type=int, default=5, help="scrapes to time (default 5)")
    parser.add_argument("--reference", action="store_true", help="time prometheus_client's renderer too")
    args = parser.parse_args(argv)
    core, metrics, feed = build(args.quick)
    refresh_s, render_s, gzip_s = [], [], []
    page = zipped = b""
    for _ in range(max(1, args.rounds)):
        t0 = time.process_time()
        feed.refresh()
        t1 = time.process_time()
        page = metrics.exposition()  # no before_scrape set: the refresh is timed apart
        t2 = time.process_time()
        zipped = gzip.compress(page, compresslevel=GZIP_LEVEL)
        t3 = time.process_time()
        refresh_s.append(t1 - t0)
        render_s.append(t2 - t1)
        gzip_s.append(t3 - t2)
    metrics_out: dict[str, Any] = {
        "cluster_queues": len(core.cluster_queues()),
        "local_queues": len(core.local_queues()),
        "page_bytes": len(page),
        "page_gzip_bytes": len(zipped),
        "page_lines": page.count(b"\n"),
        "refresh_cpu_s": round(statistics.median(refresh_s), 3),
        "render_cpu_s": round(statistics.median(render_s), 3),
        "gzip_cpu_s": round(statistics.median(gzip_s), 3),
        "served_cpu_s": round(statistics.median(a + b + c for a, b, c in zip(refresh_s, render_s, gzip_s,
                                                                          strict=True)), 3),
        "largest_families_bytes": dict(per_family(page).most_common(5)),
    }
    if args.reference:
        t0 = time.process_time()
        reference = generate_latest(metrics.registry)
        metrics_out["reference_render_cpu_s"] = round(time.process_time() - t0, 3)
        metrics_out["reference_page_bytes"] = len(reference)
    print(f"{metrics_out['cluster_queues']} ClusterQueues: page {len(page) / 1e6:.1f} MB "
          f"({len(zipped) / 1e6:.2f} MB gzipped), served in {metrics_out['served_cpu_s']} CPU s",
          file=sys.stderr)
    env = {"python": platform.python_version(), "machine": platform.machine(), "quick": args.quick}
    print(json.dumps({"benchmark": "metrics_page", "metrics": metrics_out, "env": env}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
