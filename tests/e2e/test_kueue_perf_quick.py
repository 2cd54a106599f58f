"""The scaled-down Kueue scalability run (``kueue_perf --quick``) on the shared dev cluster.

It measures the cluster's own pykueue from outside (``--manager external``): stopping the
shared manager would disturb the other e2e tests. Queue names get a prefix so nothing
clashes with them, and the run deletes its Workloads, LocalQueues and ClusterQueues.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.kueue_perf_config import CLASS_LABEL, CLEANUP_LABEL

from .conftest import REPO, DevCluster

QUICK_WORKLOADS = 384  # benchmarks/configs/kueue_perf/quick.yaml: 2 cohorts x 3 queues x 64


def test_quick_run_admits_and_finishes_everything(dev_cluster: DevCluster, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.kueue_perf", "--quick", "--manager", "external",
         "--prefix", "perfq-", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert line["benchmark"] == "kueue_perf"
    assert set(line) == {"benchmark", "metrics", "env"}
    m = line["metrics"]
    for key in ("config", "qps", "wall_s", "usage_pct", "tta_ms", "manager_cpu_s", "manager_peak_rss_mb"):
        assert key in m, key
    assert m["config"] == "quick" and m["manager"] == "external"
    assert m["workloads"] == QUICK_WORKLOADS
    assert m["admitted_ever"] == QUICK_WORKLOADS
    assert m["finished"] == QUICK_WORKLOADS
    assert m["still_pending"] == 0 and m["still_admitted"] == 0
    assert set(m["tta_ms"]) == {"small", "medium", "large"}
    assert all(v >= 0 for v in m["tta_ms"].values())
    assert 0 < m["usage_pct"] <= 600  # borrowing lets a queue use up to 6x its nominal quota
    assert 0 < m["admitted_usage_pct"] <= 100  # of all queues' quota together
    assert m["wall_s"] > 0 and m["manager_cpu_s"] > 0 and m["manager_peak_rss_mb"] > 0
    assert m["errors"] == []
    # The runner's own part of the time a workload stays admitted, measured on every finish.
    assert m["runner_cpu_s"] > 0
    trace = m["preemption_trace"]
    for part in ("finish_late_ms", "finish_write_ms", "finish_echo_ms"):
        p50, p90 = trace[f"{part}_p50"], trace[f"{part}_p90"]
        assert p50 is not None and 0 <= p50 <= p90, (part, trace)
    saved = json.loads(out.read_text())
    assert saved["metrics"]["workloads"] == QUICK_WORKLOADS
    assert saved["timelines"]["pykueue external"], "the admitted/pending timeline was recorded"
    assert [r["manager"] for r in m["runs"]] == ["pykueue"] and m["runs"][0]["mode"] == "external"
    left = dev_cluster.get_json("clusterqueues.kueue.x-k8s.io", "-l", CLEANUP_LABEL)
    assert left["items"] == [], "the run removed its ClusterQueues"
    wls = dev_cluster.get_json("workloads.kueue.x-k8s.io", "-A", "-l", CLASS_LABEL)
    assert wls["items"] == [], "the run removed its Workloads"
