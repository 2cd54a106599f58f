"""Where Kueue's scheduler spends a ``kueue_perf`` run, read from minimalkueue's own log.

``python -m benchmarks.kueue_log LOG`` reads the log of a run made with
``kueue_perf --manager kueue --kueue-log-level 3`` (zap's console lines: time, level,
logger, caller, message, JSON fields) and prints one JSON object:

* ``cycles``, ``span_s`` (first to last scheduler line) and ``phases_s``: the scheduler
  loop's time split into waiting for heads, snapshot and nomination, the entries
  (flavor assignment, preemption, admission), and re-queueing the heads it did not admit
  (``requeue_and_pending_writes``): for each such head Kueue patches the workload's
  pending status inside the cycle, one after another, when the condition changed.
  ``pending_requeues`` counts those heads (re-queued not nominated, skipped or
  preemption-gated: the ones that may write) and ``ms_per_pending_requeue`` is that
  phase's time over them, also for the cycles that started in the first 30 s
  (``ms_per_pending_requeue_first_30s``);
* ``cycle_s_p50`` and ``longest_cycles_s``, the median cycle and the five longest;
* ``preempted``, victims by reason (Kueue's ``Preempted`` lines);
* ``assumed_by_class``: quota reservations (``Workload assumed in the cache``) per class
  in the first 1 and 5 s from the first workload Kueue saw created;
* ``first_attempt_s``: per workload class and window of creation (seconds from the first
  workload Kueue saw created), how long from Kueue seeing a workload created to its first
  scheduling attempt, as ``{"n", "p50", "p90"}``.

The generator names workloads ``<class>-<set>-<round>-<template>``, so the class is the
name without its last three parts.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.webhook_latency import percentile

WINDOWS = ((0.0, 10.0, "0-10"), (10.0, 60.0, "10-60"), (60.0, float("inf"), "60-"))
# Heads re-queued with these statuses get a pending-status patch (if their condition changed).
PENDING_STATUSES = ("", "skipped", "preemptionGated")
ASSUMED_WITHIN_S = (1.0, 5.0)


@dataclass
class Line:
    t: float
    msg: str
    fields: dict[str, Any]


def parse(lines: Iterable[str]) -> Iterator[Line]:
    """The structured lines of a zap console log; anything else (a panic trace, a cut
    line) is skipped."""
    for raw in lines:
        parts = raw.rstrip("\n").split("\t")
        if len(parts) < 5:
            continue
        fields: dict[str, Any] = {}
        msg = parts[-1]
        if msg.startswith("{") and len(parts) >= 6:
            try:
                fields = json.loads(msg)
            except ValueError:
                continue
            msg = parts[-2]
        try:
            t = datetime.fromisoformat(parts[0].replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        yield Line(t, msg, fields)


def workload_class(name: str) -> str:
    parts = name.split("-")
    return "-".join(parts[:-3]) if len(parts) > 3 else name


def _key(fields: dict[str, Any]) -> tuple[str, str] | None:
    ref = fields.get("workload")
    if isinstance(ref, dict) and "name" in ref:
        return str(ref.get("namespace", "")), str(ref["name"])
    return None


@dataclass
class _Cycle:
    start: float | None = None
    heads_at: float | None = None
    nominated: float | None = None
    first_requeue: float | None = None
    done: float | None = None
    requeued: int = 0


@dataclass
class _Reading:
    cycles: dict[int, _Cycle] = field(default_factory=lambda: defaultdict(_Cycle))
    seen: dict[tuple[str, str], float] = field(default_factory=dict)
    tried: dict[tuple[str, str], float] = field(default_factory=dict)
    preempted: Counter[str] = field(default_factory=Counter)
    assumed: list[tuple[float, str]] = field(default_factory=list)
    first: float | None = None
    last: float | None = None

    def add(self, line: Line) -> None:
        key = _key(line.fields)
        if line.msg == "Workload create event" and key is not None:
            self.seen.setdefault(key, line.t)
        cycle_no = line.fields.get("schedulingCycle")
        if not isinstance(cycle_no, int):
            return
        self.first = line.t if self.first is None else self.first
        self.last = line.t
        c = self.cycles[cycle_no]
        if line.msg == "Scheduling cycle starts":
            c.start = line.t
        elif line.msg == "Obtained heads":
            c.heads_at = line.t
        elif line.msg == "Nomination done":
            c.nominated = line.t
        elif line.msg == "Attempting to schedule workload" and key is not None:
            self.tried.setdefault(key, line.t)
        elif line.msg == "Workload re-queued":
            c.first_requeue = line.t if c.first_requeue is None else c.first_requeue
            c.requeued += line.fields.get("status") in PENDING_STATUSES
        elif line.msg == "Workload assumed in the cache" and key is not None:
            self.assumed.append((line.t, workload_class(key[1])))
        elif line.msg == "Preempted":
            self.preempted[str(line.fields.get("reason", "unknown"))] += 1
        elif line.msg == "Workload processing done":
            c.done = line.t


def _span(a: float | None, b: float | None) -> float:
    return b - a if a is not None and b is not None else 0.0


def _quantiles(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": round(percentile(values, 0.5), 2),
            "p90": round(percentile(values, 0.9), 2)}


def _requeues(cycles: list[_Cycle]) -> tuple[int, float | None]:
    """The pending re-queues of the cycles that finished, and the ms their phase took per one."""
    done = [c for c in cycles if c.done is not None]
    n = sum(c.requeued for c in done)
    return n, round(1000 * sum(_span(c.first_requeue, c.done) for c in done) / n, 1) if n else None


def summarize(lines: Iterable[str]) -> dict[str, Any]:
    reading = _Reading()
    for line in parse(lines):
        reading.add(line)
    cycles = list(reading.cycles.values())
    writes_s = sum(_span(c.first_requeue, c.done) for c in cycles)
    entries_s = sum(_span(c.nominated, c.first_requeue if c.first_requeue is not None else c.done)
                    for c in cycles)
    durations = [c.done - c.start for c in cycles if c.start is not None and c.done is not None]
    lags: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    t0 = min(reading.seen.values(), default=0.0)
    start = reading.first if reading.first is not None else 0.0
    early = [c for c in cycles if c.start is not None and c.start - start < 30.0]
    assumed: dict[str, Counter[str]] = {f"{s:g}": Counter() for s in ASSUMED_WITHIN_S}
    for t, cls in reading.assumed:
        for within in ASSUMED_WITHIN_S:
            if t - t0 < within:
                assumed[f"{within:g}"][cls] += 1
    requeues, ms_per_requeue = _requeues(cycles)
    for key, seen in reading.seen.items():
        tried = reading.tried.get(key)
        if tried is None:
            continue
        window = next(label for lo, hi, label in WINDOWS if lo <= seen - t0 < hi)
        lags[workload_class(key[1])][window].append(max(0.0, tried - seen))
    return {
        "cycles": len(cycles),
        "span_s": round(_span(reading.first, reading.last), 1),
        "phases_s": {
            "waiting_for_heads": round(sum(_span(c.start, c.heads_at) for c in cycles), 1),
            "snapshot_and_nomination": round(sum(_span(c.heads_at, c.nominated) for c in cycles), 1),
            "entries": round(entries_s, 1),
            "requeue_and_pending_writes": round(writes_s, 1),
        },
        "pending_requeues": requeues,
        "ms_per_pending_requeue": ms_per_requeue,
        "ms_per_pending_requeue_first_30s": _requeues(early)[1],
        "cycle_s_p50": round(percentile(durations, 0.5), 3),
        "longest_cycles_s": [round(d, 2) for d in sorted(durations, reverse=True)[:5]],
        "preempted": dict(sorted(reading.preempted.items())),
        "assumed_by_class": {w: dict(sorted(c.items())) for w, c in assumed.items()},
        "first_attempt_s": {cls: {w: _quantiles(v) for w, v in sorted(by.items())}
                            for cls, by in sorted(lags.items())},
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.kueue_log MINIMALKUEUE_LOG", file=sys.stderr)
        return 2
    try:
        with Path(args[0]).open(errors="replace") as log:
            print(json.dumps(summarize(log)))
    except OSError as exc:
        print(f"kueue_log: {exc.strerror or exc}: {args[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
