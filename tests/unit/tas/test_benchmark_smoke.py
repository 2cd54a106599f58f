"""The TAS benchmark's simulation loop on a tiny cluster, where 'finish the oldest' must kick in."""

from __future__ import annotations

from benchmarks import tas


def test_tiny_cluster_forces_oldest_workloads_to_finish() -> None:
    metrics = tas.run(0.05, 1, 4, fill=True)
    assert metrics["forced_finishes"] > 0
    assert metrics["placements"] == metrics["workloads"] + metrics["forced_finishes"]
    assert sum(metrics["admitted_by_kind"].values()) == metrics["workloads"]
