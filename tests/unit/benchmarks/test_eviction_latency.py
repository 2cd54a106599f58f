"""The core alone over a small kueue_perf shape: evictions against the hold-over latency."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.eviction_latency import main, simulate
from benchmarks.kueue_perf_config import parse_config, queue_plans


def _shape() -> dict[str, Any]:
    """The baseline's queue shape and rates (its queues ask for more than their quota), fewer workloads."""
    def wset(count: int, interval: int, cls: str, run_ms: int, prio: int, cpu: int) -> dict[str, Any]:
        return {"count": count, "creationIntervalMs": interval, "workloads": [
            {"className": cls, "runtimeMs": run_ms, "priority": prio, "request": cpu}]}
    return {"cohorts": [{"className": "cohort", "count": 1, "queuesSets": [{
        "className": "cq", "count": 2, "nominalQuota": 20, "borrowingLimit": 100,
        "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
        "workloadsSets": [wset(70, 100, "small", 200, 50, 1), wset(20, 500, "medium", 500, 100, 5),
                          wset(8, 1200, "large", 1000, 200, 20)]}]}]}


def test_large_workloads_leaving_gaps_evict_the_same_waiting_ones_each_time() -> None:
    config = parse_config(_shape())
    run = simulate(config, queue_plans(config), latency_ms=0)
    assert run["finished"] == 2 * (70 + 20 + 8)
    # Each large one after the first preempts the medium ones that filled its predecessor's gap.
    assert run["most_evictions_of_one"] >= 5
    assert run["evictions"] >= 3 * run["evicted_workloads"]
    assert run["tta_ms"]["large"] == 0


def test_holding_quota_until_the_next_one_comes_evicts_each_at_most_once() -> None:
    config = parse_config(_shape())
    run = simulate(config, queue_plans(config), latency_ms=300)  # 1,000 + 300 ms >= the 1,200 ms interval
    assert run["finished"] == 2 * (70 + 20 + 8)
    assert run["most_evictions_of_one"] <= 1
    assert run["tta_ms"]["large"] > 0  # the next large one waits for the quota instead
    # What is left is the first large ones' wave, when they find the quota filled.
    assert run["evicted_at_s"] == {"p10": 1.2, "p50": 1.2, "p90": 1.2}


def test_eviction_times_show_gaps_refilled_all_along() -> None:
    """Without the hold-over, each large one (every 1.2 s) evicts what filled its
    predecessor's gap: the evictions spread over the whole run (the last large at 9.6 s)."""
    config = parse_config(_shape())
    times = simulate(config, queue_plans(config), latency_ms=0)["evicted_at_s"]
    assert times["p10"] <= 2.4 and times["p90"] >= 8.4


def test_settling_reservations_withdraws_the_gap_fillers_instead_of_evicting_them() -> None:
    """Published only after the manager's settle time, the medium ones that fill a large
    one's gap are taken back unseen when the next large one comes: far fewer evictions,
    none of the same workload twice, every workload still run."""
    config = parse_config(_shape())
    at_once = simulate(config, queue_plans(config), latency_ms=0)
    settled = simulate(config, queue_plans(config), latency_ms=0, settle_ms=300)
    assert settled["finished"] == at_once["finished"] == 2 * (70 + 20 + 8)
    assert at_once["withdrawn"] == 0 and settled["withdrawn"] > 0
    assert settled["evictions"] * 3 <= at_once["evictions"]
    assert settled["most_evictions_of_one"] <= 1
    assert settled["settle_ms"] == 300


def test_cli_prints_the_json_line_last(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--latency-ms", "0"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith('{"benchmark": "eviction_latency"') and '"latency_ms": 0' in last


def test_cli_rejects_an_unknown_config_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", "no-such-config"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("eviction_latency: ") and "\n" not in err


def test_a_topology_config_places_every_admission_on_its_nodes() -> None:
    """With a topology the core runs the TAS placer over the config's nodes, as the manager
    does: a workload whose pod is larger than any node never admits, though its quota fits."""
    shape = _shape()
    shape["topology"] = {"name": "default-topology", "levels": [
        {"name": "rack", "count": 2, "nodeLabel": "cloud.provider.com/topology-rack"},
        {"name": "node", "count": 2, "nodeLabel": "kubernetes.io/hostname", "capacity": {"cpu": "8"}}]}
    shape["resourceFlavor"] = {"name": "tas-flavor", "nodeLabel": "tas-node-group",
                               "topologyName": "default-topology"}
    sets = shape["cohorts"][0]["queuesSets"][0]["workloadsSets"]
    for wset in sets:
        wset["workloads"][0].update(tasConstraint="required", tasLevel="cloud.provider.com/topology-rack")
    run = simulate(parse_config(shape), queue_plans(parse_config(shape)), latency_ms=300)
    # A large one's single 20-CPU pod fits no 8-CPU node: only small and medium ones run.
    assert run["finished"] == 2 * (70 + 20)
    assert "large" not in run["tta_ms"] and run["core_cpu_s"] >= 0


def test_requeue_batches_delay_parked_workloads_until_their_timer() -> None:
    """With the manager's batched requeue, workloads parked when the quota was full come back
    only when the batch timer fires, which the run's clock reaches even with no event due."""
    config = parse_config(_shape())
    at_once = simulate(config, queue_plans(config), latency_ms=300)
    batched = simulate(config, queue_plans(config), latency_ms=300, requeue_batch_ms=1000)
    assert batched["finished"] == at_once["finished"] == 2 * (70 + 20 + 8)
    assert batched["requeue_batch_ms"] == 1000
    assert batched["tta_ms"]["small"] > at_once["tta_ms"]["small"]
    assert batched["end_s"] > at_once["end_s"]
