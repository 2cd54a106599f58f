"""``kueue_perf --compare`` (pykueue's manager, then Kueue's minimalkueue) on the quick config.

A comparison takes a dev cluster over (it stops the cluster's pykueue: one manager at a
time), so it runs on a private dev cluster of its own (``PYKUEUE_DEV_STATE``), never the
shared one the other e2e tests use, and stops it at the end. One round at Kueue's harness
limits (50/100; minimalkueue built with one token bucket for all its requests, as pykueue
has: a few seconds on top of the minimalkueue ``make test`` builds), with the floor (a
stand-in that admits on sight) before them; it checks the JSON line's shape (the
recorder's percentiles, admission rates and each manager's scheduling cycles included; no
timings asserted), that both managers admitted and finished every workload, and that the
floor did so with one patch each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.kueue_perf_results import ENTRY_KEYS
from pykueue.devcluster import kueue_build
from pykueue.devcluster.paths import STATE_ENV

from .conftest import REPO

QUICK_WORKLOADS = 384  # benchmarks/configs/kueue_perf/quick.yaml


def test_compare_runs_the_floor_and_both_managers_and_reports_each_run_and_the_ratios(tmp_path: Path) -> None:
    env = {**os.environ, STATE_ENV: str(tmp_path / "dev")}
    out = tmp_path / "result.json"
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.kueue_perf", "--config", "quick", "--compare", "--floor",
             "--qps", "50", "--burst", "100", "--output", str(out)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    finally:
        subprocess.run([sys.executable, "-m", "pykueue.devcluster", "down"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(line) == {"benchmark", "metrics", "env"} and line["benchmark"] == "kueue_perf"
    m = line["metrics"]
    for key in ("config", "qps", "wall_s", "usage_pct", "tta_ms", "manager_cpu_s", "manager_peak_rss_mb"):
        assert key in m, key
    assert m["manager"] == "own" and m["qps"] == 50 and m["burst"] == 100  # the pykueue run
    runs = m["runs"]
    assert [r["manager"] for r in runs] == ["pykueue", "kueue"]
    assert runs[1]["version"] == kueue_build.pinned() == m["kueue_version"]
    for run in runs:
        assert list(run)[:len(ENTRY_KEYS)] == list(ENTRY_KEYS)
        assert (run["qps"], run["burst"]) == (50, 100)
        assert run["workloads"] == run["admitted_ever"] == run["finished"] == QUICK_WORKLOADS, run
        assert run["still_pending"] == 0 and run["still_admitted"] == 0 and run["errors"] == []
        assert set(run["tta_ms"]) == {"small", "medium", "large"}
        for key in ("tta_p50_ms", "tta_p90_ms", "never_admitted", "admissions_per_min"):
            assert set(run[key]) == {"small", "medium", "large"}, (key, run[key])
        assert sum(run["never_admitted"].values()) == 0  # every workload was admitted
        assert isinstance(run["scheduling_cycles"], int) and run["scheduling_cycles"] > 0
        assert run["cycles_per_min"] is not None and run["fair_sharing"] is False
        assert run["wall_s"] > 0 and run["manager_cpu_s"] > 0 and run["manager_peak_rss_mb"] > 0
        assert 0 < run["usage_pct"] <= 600 and 0 < run["admitted_usage_pct"] <= 100
        assert run["api_requests"] > 0 and run["evictions"] >= 0
        assert run["client_limiter"] == "shared"
        assert run["preemptions_decided"] >= 0
    # Only pykueue takes reservations back unpublished; they are part of what it decided.
    assert 0 <= runs[0]["withdrawn_reservations"] <= runs[0]["preemptions_decided"]
    assert runs[1]["withdrawn_reservations"] is None
    assert runs[0]["wall_s"] == m["wall_s"] and runs[0]["tta_ms"] == m["tta_ms"]
    ratio = m["compare"]["50/100"]["ratio"]
    assert ratio["wall"] == round(runs[0]["wall_s"] / runs[1]["wall_s"], 3)
    assert set(ratio["tta"]) == {"small", "medium", "large"}
    for name in ("tta_p50", "tta_p90", "admissions_per_min"):
        assert set(ratio[name]) == {"small", "medium", "large"}, name
    assert "cycles_per_min" in ratio and "scheduling_cycles" in ratio
    for manager in ("pykueue", "kueue"):
        medians = m["compare"]["50/100"][manager]
        for key in ("tta_p50_ms", "tta_p90_ms", "never_admitted", "admissions_per_min"):
            assert set(medians[key]) == {"small", "medium", "large"}, (manager, key)
        assert medians["cycles_per_min"] is not None and medians["scheduling_cycles"] is not None
    (floor,) = m["floor_runs"]
    assert floor["manager"] == "floor" and floor["evictions"] == 0 and floor["errors"] == []
    assert floor["workloads"] == floor["admitted_ever"] == floor["finished"] == QUICK_WORKLOADS, floor
    assert floor["api_requests_by_verb"].get("patch") == QUICK_WORKLOADS  # one admission write each
    over = m["floor"]["50/100"]
    assert over["pykueue_over_floor"]["wall"] == round(runs[0]["wall_s"] / floor["wall_s"], 3)
    assert set(over["kueue_over_floor"]["tta"]) == {"small", "medium", "large"}
    saved = json.loads(out.read_text())
    assert set(saved["timelines"]) == {"floor 50/100", "pykueue 50/100", "kueue 50/100"}
