"""Evictions against the time a workload holds its quota past its run, in simulated time.

Kueue's generator configs create each class of workload at a fixed interval per queue,
and the higher-priority ones may preempt lower ones in their queue. Whether they have to
depends on timing: a large workload that gives its quota back before the next one is
created leaves a gap, lower-priority workloads waiting in the queue fill it, and the next
large one preempts them; the same ones, every time, since the oldest go first. If it
holds the quota until the next one is there (its run plus the latency of admission,
start and finish is at least the creation interval), the next one takes the quota as it
is freed and nothing is evicted.

This runs the scheduling core alone over one ``kueue_perf`` config (no API, no writes:
every reservation is seen at once, as Kueue's rules assume), finishing each workload
``latency`` after its run, and reports the evictions for each latency. ``kueue_perf``
measures the real latencies; this shows what the count would be with each.

``--quick`` runs the config's first cohort at two latencies. The last line printed is the
JSON result.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import platform
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.settings import IMMEDIATE, TUNED
from pykueue.manager.core.tas_hook import TasPlacer
from pykueue.manager.core.workload_state import ADMITTED, WorkloadView

from .kueue_perf_config import (
    CLASS_LABEL,
    RUNNING_TIME_LABEL,
    ConfigError,
    GeneratorConfig,
    QueuePlan,
    flavor_object,
    load_config,
    queue_plans,
    topology_objects,
    workload_name,
    workload_object,
)
from .webhook_latency import percentile

CONFIGS = Path(__file__).parent / "configs" / "kueue_perf"
LATENCIES_MS = (0, 50, 100, 150, 200, 300, 500, 1000)
QUICK_LATENCIES_MS = (0, 300)
SETTLE_MS = 300  # the settle time measured (the manager's is off: core/settings.py)


@dataclass(order=True)
class _Event:
    at_ms: int
    seq: int
    key: str = field(compare=False)
    obj: dict[str, Any] | None = field(compare=False, default=None)  # set for a creation
    admission: int = field(compare=False, default=0)  # for a finish: which admission it ends
    publish: bool = field(compare=False, default=False)  # that admission's publication, not its end


def _record(core: QueueingCore, key: str) -> WorkloadView:
    rec = core.workload(key)
    assert rec is not None, key  # the run never deletes a workload
    return rec


def _finish(core: QueueingCore, key: str, now_ms: int, latency_ms: int, seq: int, admission: int) -> _Event:
    """The end of a published admission: its run time and the latency after it."""
    run_ms = int(_record(core, key).wl.source["metadata"]["labels"][RUNNING_TIME_LABEL])
    return _Event(now_ms + run_ms + latency_ms, seq, key, admission=admission)


def _creations(plans: list[QueuePlan]) -> list[_Event]:
    """Each workload at the time ``kueue_perf``'s generator creates it: every set of a
    queue creates one workload per interval, the first after one interval; a backlog set
    (``createBeforeStart``) all at time 0, there when the core starts."""
    events: list[_Event] = []
    for plan in plans:
        for set_idx, wset in enumerate(plan.queues.workloads_sets):
            for n in range(wset.count):
                for ti, template in enumerate(wset.workloads):
                    step = n * len(wset.workloads) + ti + 1
                    name = workload_name(template, set_idx, n, ti)
                    obj = workload_object(template, name, plan.name, plan.name)
                    key = f"{plan.name}/{name}"
                    at_ms = 0 if wset.before_start else step * wset.creation_interval_ms
                    events.append(_Event(at_ms, len(events), key, obj))
    return events


def simulate(config: GeneratorConfig, plans: list[QueuePlan], latency_ms: int,
             requeue_batch_ms: int = 0, settle_ms: int = 0) -> dict[str, Any]:
    """Run every workload of ``plans`` through the core; each finishes ``latency_ms`` after
    its run time (counted from each admission's publication). With ``requeue_batch_ms``,
    parked workloads are requeued in batches as the manager does: that long, or longer for a
    cohort tree of many ClusterQueues or parked shapes by the manager's own per-queue and
    per-group periods (0: at once, as simulate does). With ``settle_ms``, a reservation the
    core says may soon be taken back (``QueueingCore.publish_wait``) is published that long
    after it was made, as the manager writes it, and its job starts then; a preemption
    before that withdraws it (counted in ``withdrawn``, not in ``evictions``)."""
    started = time.process_time()
    tas: TasPlacer | None = None
    if config.topology is not None:
        # The config's nodes, Ready as kwok reports them; placement as the manager runs it.
        tas = TasPlacer()
        topology, nodes = topology_objects(config)
        tas.apply(topology)
        ready = [{"type": "Ready", "status": "True"}]
        for node in nodes:
            tas.apply({**node, "status": {**node["status"], "conditions": ready}})
    batch_s = requeue_batch_ms / 1000
    scheduling = replace(TUNED, requeue_batch_s=batch_s) if batch_s else IMMEDIATE
    scheduling = replace(scheduling, publish_settle_s=settle_ms / 1000)
    core_config = CoreConfig(scheduling=scheduling, withdraw_unpublished=True)
    core = QueueingCore(core_config, now=0.0, topology=tas)
    core.apply(flavor_object(config))
    for plan in plans:
        for obj in plan.objects(config.flavor.name):
            if obj["kind"] != "Namespace":
                core.apply(obj)
    events = _creations(plans)
    heapq.heapify(events)
    seq = len(events)
    created: dict[str, int] = {}
    first_admitted: dict[str, int] = {}
    admissions: dict[str, int] = {}
    end_ms = finished = withdrawn = 0
    evicted_at_ms: list[int] = []  # when each eviction was decided
    seen_evictions: dict[str, int] = {}
    while events or core.next_deadline() is not None:
        due = core.next_deadline()
        if due is not None and (not events or due * 1000 < events[0].at_ms):
            core.fire_timers(due)  # a requeue batch ends before the next event
            now_ms = math.ceil(due * 1000)
        else:
            now_ms = events[0].at_ms
            core.fire_timers(now_ms / 1000)
        while events and events[0].at_ms == now_ms:
            ev = heapq.heappop(events)
            if ev.obj is not None:
                core.apply_workload(ev.obj)
                created[ev.key] = now_ms
            elif ev.publish:
                if ev.admission != admissions.get(ev.key):
                    continue
                if _record(core, ev.key).status != ADMITTED:
                    withdrawn += 1  # taken back before it was published
                    continue
                core.publish(ev.key)
                seq += 1
                heapq.heappush(events, _finish(core, ev.key, now_ms, latency_ms, seq, ev.admission))
            elif ev.admission == admissions.get(ev.key) and _record(core, ev.key).status == ADMITTED:
                core.finish(ev.key)  # not when evicted since: that admission ended already
                end_ms, finished = now_ms, finished + 1
        for d in core.run_until_idle():
            for target in d.targets:  # a published reservation taken back is an eviction
                count = len(_record(core, target).evictions)
                if count > seen_evictions.get(target, 0):
                    evicted_at_ms.append(now_ms)
                seen_evictions[target] = count
            rec = core.workload(d.key)
            if d.outcome != "Admit" or rec is None or rec.status != ADMITTED:
                continue
            admissions[d.key] = admissions.get(d.key, 0) + 1
            first_admitted.setdefault(d.key, now_ms)
            seq += 1
            wait_ms = math.ceil(core.publish_wait(d.key) * 1000)
            if wait_ms > 0:
                heapq.heappush(events, _Event(now_ms + wait_ms, seq, d.key, admission=admissions[d.key],
                                              publish=True))
                continue
            core.publish(d.key)
            heapq.heappush(events, _finish(core, d.key, now_ms, latency_ms, seq, admissions[d.key]))
    per_workload = {k: len(r.evictions) for k, r in core.all_workloads().items()}
    tta: dict[str, list[int]] = {}
    for key, at in first_admitted.items():
        cls = _record(core, key).wl.source["metadata"]["labels"][CLASS_LABEL]
        tta.setdefault(cls, []).append(at - created[key])
    return {
        "latency_ms": latency_ms, "requeue_batch_ms": requeue_batch_ms,
        "settle_ms": settle_ms,
        "evictions": sum(per_workload.values()),
        "withdrawn": withdrawn,
        "evicted_workloads": sum(1 for n in per_workload.values() if n),
        "most_evictions_of_one": max(per_workload.values(), default=0),
        # When, from the first creation, the evictions came (a start-up wave or all along).
        "evicted_at_s": {f"p{int(q * 100)}": round(percentile(evicted_at_ms, q) / 1000, 2)
                         for q in (0.1, 0.5, 0.9)} if evicted_at_ms else None,
        "finished": finished,
        "end_s": round(end_ms / 1000, 3),
        "tta_ms": {c: round(sum(v) / len(v)) for c, v in sorted(tta.items())},
        "core_cpu_s": round(time.process_time() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="baseline",
                        help="a kueue_perf config name or file (default baseline)")
    parser.add_argument("--quick", action="store_true", help="the first cohort only, latencies 0 and 300 ms")
    parser.add_argument("--latency-ms", type=int, action="append", default=None,
                        help="a latency to run (repeatable; default 0-1000 ms in eight steps)")
    parser.add_argument("--settle-ms", type=int, action="append", default=None,
                        help="how long a contestable reservation stays unpublished (repeatable; "
                             f"default 0 and {SETTLE_MS} ms)")
    parser.add_argument("--requeue-batch-ms", type=int, default=0,
                        help="requeue parked workloads in batches of this period, as the manager "
                             "does (0, the default: at once)")
    args = parser.parse_args(argv)
    path = Path(args.config) if args.config.endswith((".yaml", ".yml")) else CONFIGS / f"{args.config}.yaml"
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"eviction_latency: {exc}", file=sys.stderr)
        return 2
    plans = queue_plans(config)
    if args.quick:
        plans = [p for p in plans if p.cohort == plans[0].cohort]
    latencies = args.latency_ms or (QUICK_LATENCIES_MS if args.quick else LATENCIES_MS)
    settles = args.settle_ms or [0, SETTLE_MS]
    if any(v < 0 for v in (*latencies, *settles)) or args.requeue_batch_ms < 0:
        print("eviction_latency: --latency-ms, --settle-ms and --requeue-batch-ms must not be negative",
              file=sys.stderr)
        return 2
    runs = []
    for settle in settles:
        for latency in latencies:
            run = simulate(config, plans, latency, args.requeue_batch_ms, settle)
            runs.append(run)
            print(f"settle {settle} ms, latency {latency} ms: {run['evictions']} evictions of "
                  f"{run['evicted_workloads']} workloads (at most {run['most_evictions_of_one']} of one), "
                  f"{run['withdrawn']} withdrawn, evicted at {run['evicted_at_s']}, "
                  f"last finish at {run['end_s']} s, "
                  f"core CPU {run['core_cpu_s']} s",
                  file=sys.stderr)
    workloads = sum(ws.count * len(ws.workloads) for p in plans for ws in p.queues.workloads_sets)
    metrics = {"config": path.stem, "workloads": workloads, "runs": runs}
    env = {"python": platform.python_version(), "machine": platform.machine(), "quick": args.quick}
    print(json.dumps({"benchmark": "eviction_latency", "metrics": metrics, "env": env}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
