"""Reading minimalkueue's log: cycle phases, pending writes, victims and attempt lags."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from benchmarks import kueue_log

T0 = datetime(2026, 12, 2, 0, 0, 0, tzinfo=UTC)


def zap(at_s: float, logger: str, msg: str, **fields: object) -> str:
    ts = (T0 + timedelta(seconds=at_s)).isoformat().replace("+00:00", "Z")
    tail = f"\t{json.dumps(fields)}" if fields else ""
    return f"{ts}\tLEVEL(-2)\t{logger}\tscheduler/scheduler.go:1\t{msg}{tail}\n"


def wl(name: str, ns: str = "cq-0") -> dict[str, str]:
    return {"name": name, "namespace": ns}


def cycle(n: int, start: float, heads: float, nominated: float, requeues: list[tuple[float, str]],
          done: float | None,
          attempts: tuple[tuple[float, str], ...] = ()) -> list[str]:
    lines = [zap(start, "scheduler", "Scheduling cycle starts", schedulingCycle=n),
             zap(heads, "scheduler", "Obtained heads", schedulingCycle=n, headCount=len(attempts) or 1),
             zap(nominated, "scheduler", "Nomination done", schedulingCycle=n)]
    lines += [zap(t, "scheduler", "Attempting to schedule workload", schedulingCycle=n, workload=wl(name))
              for t, name in attempts]
    lines += [zap(t, "scheduler", "Workload re-queued", schedulingCycle=n, workload=wl("x-0-0-0"),
                  status=status) for t, status in requeues]
    if done is not None:
        lines.append(zap(done, "scheduler", "Workload processing done", schedulingCycle=n, duration="1s"))
    return lines


LOG = [
    "2026-12-02T00:00:00Z\tINFO\tsetup\tmain.go:1\tStart minimalkueue\n",
    zap(0.0, "workload-reconciler", "Workload create event", workload=wl("large-a-6-0-0")),
    zap(0.0, "workload-reconciler", "Workload create event", workload=wl("small-a-0-0-0")),
    *cycle(1, 0.1, 0.2, 0.3, [], 0.4, attempts=((0.35, "small-a-0-0-0"),)),
    zap(0.38, "scheduler", "Workload assumed in the cache", schedulingCycle=1, workload=wl("small-a-0-0-0")),
    # Two heads re-queued not nominated, each followed by its pending-status patch; one
    # nominated but not admitted, which writes nothing.
    *cycle(2, 0.5, 0.5, 0.6, [(0.7, ""), (1.7, "skipped"), (2.6, "nominated")], 2.7,
           attempts=((0.65, "large-a-6-0-0"),)),
    zap(2.8, "scheduler", "Preempted", schedulingCycle=3, reason="InCohortReclamation",
        targetWorkload=wl("small-a-0-0-0")),
    zap(3.0, "scheduler", "Workload assumed in the cache", schedulingCycle=3, workload=wl("large-a-6-0-0")),
    zap(10.0, "workload-reconciler", "Workload create event", workload=wl("small-a-0-1-0")),
    *cycle(3, 2.8, 2.8, 2.9, [], 3.0),
    *cycle(4, 40.0, 40.0, 40.1, [(40.2, "")], 40.3, attempts=((40.15, "small-a-0-1-0"),)),
    # The log ends inside a cycle: its re-queues count nowhere.
    *cycle(5, 41.0, 41.0, 41.1, [(41.2, "")], None),
    "a line cut short\n",
]


def test_the_loop_time_is_split_by_phase_and_pending_requeues_are_counted() -> None:
    s = kueue_log.summarize(LOG)
    assert s["cycles"] == 5 and s["span_s"] == pytest.approx(41.1)
    assert s["phases_s"] == {"waiting_for_heads": 0.1, "snapshot_and_nomination": 0.5,
                             "entries": 0.5, "requeue_and_pending_writes": 2.1}
    assert s["pending_requeues"] == 3
    assert s["ms_per_pending_requeue"] == pytest.approx(2100 / 3, abs=0.1)
    assert s["ms_per_pending_requeue_first_30s"] == 1000.0  # cycle 2 only
    assert s["cycle_s_p50"] == 0.3 and s["longest_cycles_s"] == [2.2, 0.3, 0.3, 0.2]
    assert s["preempted"] == {"InCohortReclamation": 1}
    assert s["assumed_by_class"] == {"1": {"small-a": 1}, "5": {"large-a": 1, "small-a": 1}}


def test_first_attempts_are_timed_from_creation_per_class_and_window() -> None:
    lags = kueue_log.summarize(LOG)["first_attempt_s"]
    assert lags == {"large-a": {"0-10": {"n": 1, "p50": 0.65, "p90": 0.65}},
                    "small-a": {"0-10": {"n": 1, "p50": 0.35, "p90": 0.35},
                                "10-60": {"n": 1, "p50": 30.15, "p90": 30.15}}}


def test_the_cli_prints_one_json_line_or_a_one_line_error(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "minimalkueue.log"
    log.write_text("".join(LOG))
    assert kueue_log.main([str(log)]) == 0
    assert json.loads(capsys.readouterr().out)["cycles"] == 5
    assert kueue_log.main([str(tmp_path / "missing.log")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kueue_log: ") and "missing.log" in err and err.count("\n") == 1
    assert kueue_log.main([]) == 2
