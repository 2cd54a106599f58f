"""A deep queue's admission rate in the scheduling core alone, with and without followers.

Runs the ``deep-queue`` config (kubernetes-sigs/kueue#14477: one ClusterQueue with 540
pending TAS workloads within its nominal quota, beside 40 shallow queues that borrow) through
the core on a clock that each cycle advances by the CPU time the cycle took (decided and
applied), so the core's own speed sets the pace: one core, no API, every reservation seen at
once. Workloads are created at the generator's times and finish their run time after each
admission. Run twice: ``followers`` 0 (Kueue's one head per ClusterQueue per cycle) and the
manager's setting (``settings.FOLLOWERS_PER_CYCLE``). The core runs the config's
``fairSharing`` (on for ``deep-queue``), with Kueue's default preemption strategies.

Reported per run: the deep queue's admissions per minute (from its first creation to its
last first admission), cycles per minute (cycles over the run until the deep queue was
drained), p50/p90 wait (creation to first admission) of the deep and the shallow queues, and
the ratios of the two runs. This measures the core's mechanism, not Kueue: ``kueue_perf
--config deep-queue --compare`` runs both managers on a cluster. ``--quick`` uses 108 deep
workloads and 8 shallow queues. The last line printed is the JSON result.
"""

from __future__ import annotations

import argparse
import heapq
import json
import platform
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

from pykueue.manager.core.assignment import Outcome
from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.settings import FOLLOWERS_PER_CYCLE, TUNED
from pykueue.manager.core.tas_hook import TasPlacer
from pykueue.manager.core.workload_state import ADMITTED

from .eviction_latency import CONFIGS, _creations
from .kueue_perf_config import (
    RUNNING_TIME_LABEL,
    GeneratorConfig,
    QueuePlan,
    flavor_object,
    load_config,
    queue_plans,
    topology_objects,
)
from .kueue_perf_managers import FAIR_SHARING_STRATEGIES
from .webhook_latency import percentile

DEEP_CLASS = "deep"


@dataclass(order=True)
class _Finish:
    at_s: float
    seq: int
    key: str = field(compare=False)
    admission: int = field(compare=False)


def _quick(config: GeneratorConfig) -> GeneratorConfig:
    """A fifth of the deep queue and of the shallow queues."""
    cohort = config.cohorts[0]
    sets = []
    for qs in cohort.queues_sets:
        if qs.class_name == DEEP_CLASS:
            fifth = tuple(replace(ws, count=ws.count // 5) for ws in qs.workloads_sets)
            qs = replace(qs, workloads_sets=fifth)
        else:
            qs = replace(qs, count=max(1, qs.count // 5))
        sets.append(qs)
    return replace(config, cohorts=(replace(cohort, queues_sets=tuple(sets)),))


def simulate(config: GeneratorConfig, plans: list[QueuePlan], followers: int) -> dict[str, Any]:
    tas = TasPlacer()
    topology, nodes = topology_objects(config)
    tas.apply(topology)
    ready = [{"type": "Ready", "status": "True"}]
    for node in nodes:
        tas.apply({**node, "status": {**node["status"], "conditions": ready}})
    fair = FAIR_SHARING_STRATEGIES if config.fair_sharing else None  # the config's fairSharing
    scheduling = replace(TUNED, followers_per_cycle=followers)
    core = QueueingCore(CoreConfig(scheduling=scheduling, fair_sharing=fair), now=0.0, topology=tas)
    core.apply(flavor_object(config))
    for plan in plans:
        for obj in plan.objects(config.flavor.name):
            if obj["kind"] != "Namespace":
                core.apply(obj)
    deep_queues = {p.name for p in plans if p.queues.class_name == DEEP_CLASS}
    creations = sorted(_creations(plans))
    finishes: list[_Finish] = []
    created: dict[str, float] = {}
    waits: dict[str, float] = {}
    admissions: dict[str, int] = {}
    deep_total = sum(1 for ev in creations if ev.key.split("/")[0] in deep_queues)
    now = 0.0
    cycles = deep_cycles = 0
    deep_done_at: float | None = None
    i = seq = 0
    while i < len(creations) or finishes or core.next_deadline() is not None:
        while i < len(creations) and creations[i].at_ms / 1000 <= now:
            ev = creations[i]
            assert ev.obj is not None
            core.apply_workload(ev.obj)
            created[ev.key] = ev.at_ms / 1000
            i += 1
        while finishes and finishes[0].at_s <= now:
            fin = heapq.heappop(finishes)
            rec = core.workload(fin.key)
            if fin.admission == admissions.get(fin.key) and rec is not None and rec.status == ADMITTED:
                core.finish(fin.key)
        core.fire_timers(now)
        started = time.process_time()
        result = core.next_cycle()
        progress = core.apply_cycle(result)
        if result.decisions:
            cycles += 1
            deep_cycles += deep_done_at is None
            now += time.process_time() - started
            for d in result.decisions:
                rec = core.workload(d.key)
                if d.outcome != Outcome.ADMIT or rec is None or rec.status != ADMITTED:
                    continue
                admissions[d.key] = admissions.get(d.key, 0) + 1
                waits.setdefault(d.key, now - created[d.key])
                run_s = int(rec.wl.source["metadata"]["labels"][RUNNING_TIME_LABEL]) / 1000
                seq += 1
                heapq.heappush(finishes, _Finish(now + run_s, seq, d.key, admissions[d.key]))
            if deep_done_at is None and sum(1 for k in waits if k.split("/")[0] in deep_queues) == deep_total:
                deep_done_at = now
        if progress:
            continue
        nexts = [t for t in (creations[i].at_ms / 1000 if i < len(creations) else None,
                             finishes[0].at_s if finishes else None, core.next_deadline()) if t is not None]
        if not nexts:
            break
        now = max(now, min(nexts))
    deep_waits = [w for k, w in waits.items() if k.split("/")[0] in deep_queues]
    shallow_waits = [w for k, w in waits.items() if k.split("/")[0] not in deep_queues]
    deep_start = min((t for k, t in created.items() if k.split("/")[0] in deep_queues), default=0.0)
    span_min = max(1e-9, ((deep_done_at or now) - deep_start) / 60)
    return {
        "followers_per_cycle": followers,
        "fair_sharing": core.config.fair_sharing is not None,
        "deep_workloads": deep_total,
        "deep_admitted": len(deep_waits),
        "deep_admissions_per_min": round(len(deep_waits) / span_min, 1),
        "cycles_per_min": round(deep_cycles / span_min, 1),
        "cycles": cycles,
        "deep_wait_p50_s": round(percentile(deep_waits, 0.5), 3),
        "deep_wait_p90_s": round(percentile(deep_waits, 0.9), 3),
        "shallow_wait_p50_s": round(percentile(shallow_waits, 0.5), 3),
        "shallow_wait_p90_s": round(percentile(shallow_waits, 0.9), 3),
        "end_s": round(now, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="108 deep workloads, 8 shallow queues")
    args = parser.parse_args(argv)
    config = load_config(CONFIGS / "deep-queue.yaml")
    if args.quick:
        config = _quick(config)
    plans = queue_plans(config)
    runs = [simulate(config, plans, 0), simulate(config, plans, FOLLOWERS_PER_CYCLE)]
    one, many = runs
    for run in runs:
        print(f"followers {run['followers_per_cycle']}: deep "
              f"{run['deep_admissions_per_min']} admissions/min, {run['cycles_per_min']} cycles/min, "
              f"wait p50 {run['deep_wait_p50_s']} s (shallow {run['shallow_wait_p50_s']} s)", file=sys.stderr)
    ratios = {
        "deep_admissions_per_min": round(many["deep_admissions_per_min"]
                                         / max(1e-9, one["deep_admissions_per_min"]), 2),
        "deep_wait_p50": round(many["deep_wait_p50_s"] / max(1e-9, one["deep_wait_p50_s"]), 3),
        "shallow_wait_p50": round(many["shallow_wait_p50_s"] / max(1e-9, one["shallow_wait_p50_s"]), 3),
    }
    metrics = {"config": "deep-queue", "runs": runs, "ratio_followers_to_one_head": ratios}
    env = {"python": platform.python_version(), "machine": platform.machine(), "quick": args.quick}
    print(json.dumps({"benchmark": "deep_queue", "metrics": metrics, "env": env}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
