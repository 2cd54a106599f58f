"""The metrics page benchmark: its page has every queue's series, and its JSON line its keys."""

from __future__ import annotations

import json

import pytest

from benchmarks.metrics_page import build, main, per_family


def test_every_queue_has_its_admission_and_completion_series() -> None:
    core, metrics, feed = build(quick=True)
    feed.refresh()
    page = metrics.exposition()
    assert len(core.cluster_queues()) == 100
    for name in core.cluster_queues():
        assert f'kueue_admitted_workloads_total{{cluster_queue="{name}"'.encode() in page
        assert f'kueue_finished_workloads_total{{cluster_queue="{name}"'.encode() in page
    sizes = per_family(page)
    assert sizes["kueue_local_queue_execution_time_seconds"] > 0
    assert sum(sizes.values()) <= len(page)


def test_the_last_line_is_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--rounds", "1"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    m = result["metrics"]
    assert result["benchmark"] == "metrics_page"
    assert m["cluster_queues"] == 100 and m["local_queues"] == 100
    assert 0 < m["page_gzip_bytes"] < m["page_bytes"]
    assert {"refresh_cpu_s", "render_cpu_s", "gzip_cpu_s", "served_cpu_s"} <= m.keys()
