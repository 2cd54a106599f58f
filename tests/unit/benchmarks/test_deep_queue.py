"""The deep-queue config and its core-alone benchmark: the shape of the result, no timings."""

from __future__ import annotations

import json

import pytest

from benchmarks.deep_queue import main
from benchmarks.eviction_latency import CONFIGS
from benchmarks.kueue_perf_config import load_config, queue_plans, topology_objects


def test_the_config_is_kueue_14477s_shape() -> None:
    config = load_config(CONFIGS / "deep-queue.yaml")
    _, nodes = topology_objects(config)
    assert 1_250 <= len(nodes) <= 1_350
    assert config.topology is not None
    assert [lv.name for lv in config.topology.levels] == ["block", "rack", "host"]
    plans = queue_plans(config)
    assert len({p.cohort for p in plans}) == 1
    deep = [p for p in plans if p.queues.class_name == "deep"]
    assert len(deep) == 1 and len(plans) > 1
    sets = deep[0].queues.workloads_sets
    pending = sum(ws.count for ws in sets)
    asked = sum(ws.count * t.pod_count * float(t.request) for ws in sets for t in ws.workloads)
    assert pending >= 536 and asked <= float(deep[0].queues.nominal_quota)  # all fit its nominal quota
    assert all(float(p.queues.borrowing_limit) > 0 for p in plans if p not in deep)  # the siblings borrow


def test_both_runs_admit_the_whole_deep_queue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    one, many = result["metrics"]["runs"]
    assert (one["followers_per_cycle"], many["followers_per_cycle"] > 0) == (0, True)
    for run in (one, many):
        assert run["deep_admitted"] == run["deep_workloads"] > 0
        assert run["fair_sharing"] is True  # the config's switch reaches the core
        assert {"deep_admissions_per_min", "cycles_per_min", "deep_wait_p50_s", "deep_wait_p90_s",
                "shallow_wait_p50_s", "shallow_wait_p90_s"} <= run.keys()
    assert set(result["metrics"]["ratio_followers_to_one_head"]) == {
        "deep_admissions_per_min", "deep_wait_p50", "shallow_wait_p50"}
