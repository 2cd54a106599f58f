"""The dashboard benchmark's quick mode runs and ends with the contract's JSON line."""

from __future__ import annotations

import json

import pytest

from benchmarks import dashboard


def test_quick_mode_ends_with_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert dashboard.main(["--quick", "--rounds", "2"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    result = json.loads(last)
    assert result["benchmark"] == "dashboard" and set(result) == {"benchmark", "metrics", "env"}
    metrics = result["metrics"]
    for key in ("page_p50_ms", "page_p99_ms", "update_p50_ms", "update_p99_ms", "poll_p50_ms"):
        assert isinstance(metrics[key], float) and metrics[key] > 0
    assert metrics["workloads"] == 1500 and metrics["cluster_queues"] == 100
    assert metrics["page_bytes"] > 0 and metrics["target_p99_ms"] == 100.0
    assert result["env"]["quick"] is True
