"""Configuration ``metrics.customLabels`` (Kueue v0.19.2, gate CustomMetricLabels): object
labels and annotations promoted to ``custom_*`` metric labels."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.manager.core.config import ConfigError
from pykueue.manager.runtime.custom_labels import UNTRACKED, custom_label_errors, custom_labels_from
from pykueue.manager.runtime.metrics import FAMILIES, KueueMetrics, family_sources
from pykueue.manager.runtime.metrics_feed import MetricsFeed

from .test_metrics_feed import _core, _samples, _value

ON = {"CustomMetricLabels": True}


def _config(*entries: dict[str, Any], gates: dict[str, bool] | None = None) -> dict[str, Any]:
    return {"metrics": {"customLabels": list(entries)}, "featureGates": ON if gates is None else gates}


def _label_names(metrics: KueueMetrics, family: str) -> set[str]:
    return {k for (name, labels) in _samples(metrics) if name.startswith(family) for k, _ in labels}


def test_off_without_the_gate_or_entries() -> None:
    assert custom_labels_from({}) is None
    assert custom_labels_from(_config({"name": "team"}, gates={})) is None  # alpha, off by default
    assert custom_labels_from(_config()) is None


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"name": "9team"}], 'metrics.customLabels[0].name: Invalid value: "9team": must match'),
        ([{"name": "team"}, {"name": "team"}], 'metrics.customLabels[1].name: Duplicate value: "team"'),
        ([{"name": "a", "sourceLabelKey": "x", "sourceAnnotationKey": "y"}], "mutually exclusive"),
        (
            [{"name": "a", "sourceLabelKey": "bad key!"}],
            "metrics.customLabels[0].sourceLabelKey: Invalid value",
        ),
        ([{"name": "a", "sourceKind": "Workload"}], "must not be empty when sourceKind is 'Workload'"),
        (
            [{"name": "a", "sourceKind": "Workload", "trackedValues": [str(i) for i in range(13)]}],
            "must not be greater than 12 when sourceKind is 'Workload'",
        ),
        ([{"name": "a", "trackedValues": ["x", "x"]}], "must not contain duplicates"),
        ([{"name": "a", "sourceKind": "Pod"}], "unknown source kind: Pod"),
        (
            [{"name": f"l{i}"} for i in range(7)],
            "too many custom labels for source kind ClusterQueue: found 7, expected <= 6",
        ),
        (
            [
                {"name": f"l{i}", "sourceKind": k}
                for i, k in enumerate(
                    ["Cohort"] * 6 + ["LocalQueue"] * 6 + ["ClusterQueue"] * 6 + ["Workload"] * 3
                )
            ],
            "found 3, expected <= 2",
        ),
    ],
)
def test_invalid_sections_stop_the_start_whatever_the_gate(
    entries: list[dict[str, Any]], message: str
) -> None:
    assert any(message in str(e) for e in custom_label_errors(_config(*entries))), custom_label_errors(
        _config(*entries)
    )
    with pytest.raises(ConfigError, match=message.split(":")[-1].strip()[:20].replace("(", r"\(")):
        custom_labels_from(_config(*entries, gates={}))


def test_families_carry_kueue_s_sources() -> None:
    by_name = {f.name: family_sources(f) for f in FAMILIES}
    assert by_name["kueue_pending_workloads"] == ("ClusterQueue",)
    assert by_name["kueue_preempted_workloads_total"] == ("ClusterQueue",)
    assert by_name["kueue_admitted_active_workloads"] == ("ClusterQueue", "Workload")
    assert by_name["kueue_local_queue_pending_workloads"] == ("LocalQueue",)
    assert by_name["kueue_workload_creation_latency_seconds"] == ("LocalQueue",)
    assert by_name["kueue_cohort_subtree_quota"] == ("Cohort",)
    assert by_name["kueue_cohort_subtree_admitted_active_workloads"] == ("ClusterQueue",)
    for name in (
        "kueue_admission_attempts_total",
        "multikueue_workloads_dispatched_total",
        "kueue_build_info",
    ):
        assert by_name[name] == ()


def test_cluster_queue_and_local_queue_values_follow_their_objects() -> None:
    custom = custom_labels_from(
        _config(
            {"name": "team"},
            {"name": "cost", "sourceAnnotationKey": "example.com/cost-center", "trackedValues": ["a", "b"]},
            {"name": "lq_tier", "sourceKind": "LocalQueue", "sourceLabelKey": "tier"},
        )
    )
    metrics = KueueMetrics(custom=custom)
    core = _core()
    feed = MetricsFeed(core, metrics)
    metrics.custom_source("ClusterQueue", "cq", {"team": "ml"}, {"example.com/cost-center": "z"})
    metrics.custom_source("LocalQueue", "ns/lq", {"tier": "gold"}, None)
    core.run_until_idle()
    feed.refresh()
    cq = {"cluster_queue": "cq", "custom_team": "ml", "custom_cost": UNTRACKED}
    assert _value(metrics, "kueue_admitted_active_workloads", **cq) == 2
    assert _value(metrics, "kueue_pending_workloads", status="inadmissible", **cq) == 1
    lq = {"name": "lq", "namespace": "ns", "custom_lq_tier": "gold"}
    assert _value(metrics, "kueue_local_queue_admitted_active_workloads", **lq) == 2
    assert "custom_team" not in _label_names(metrics, "kueue_local_queue_pending_workloads")
    assert "custom_lq_tier" not in _label_names(metrics, "kueue_pending_workloads")
    # A relabelled ClusterQueue loses its old series; the next scrape shows the new values.
    metrics.custom_source("ClusterQueue", "cq", {"team": "infra"}, {"example.com/cost-center": "a"})
    feed.refresh()
    assert _value(metrics, "kueue_admitted_active_workloads", **cq) is None
    assert (
        _value(
            metrics,
            "kueue_admitted_active_workloads",
            cluster_queue="cq",
            custom_team="infra",
            custom_cost="a",
        )
        == 2
    )


def test_admitted_active_workloads_split_by_workload_values() -> None:
    custom = custom_labels_from(_config({"name": "app", "sourceKind": "Workload", "trackedValues": ["web"]}))
    metrics = KueueMetrics(custom=custom)
    core = _core()
    for key, app in (("ns/w0", "web"), ("ns/w1", "batch")):
        rec = core.workload(key)
        assert rec is not None
        rec.wl.source.setdefault("metadata", {})["labels"] = {"app": app}
    feed = MetricsFeed(core, metrics)
    core.run_until_idle()
    feed.refresh()
    assert _value(metrics, "kueue_admitted_active_workloads", cluster_queue="cq", custom_app="web") == 1
    assert _value(metrics, "kueue_admitted_active_workloads", cluster_queue="cq", custom_app=UNTRACKED) == 1
    assert _value(metrics, "kueue_reserving_active_workloads", cluster_queue="cq") == 2  # no Workload labels


def test_creation_latency_carries_the_local_queue_s_values() -> None:
    metrics = KueueMetrics(custom=custom_labels_from(_config({"name": "tier", "sourceKind": "LocalQueue"})))
    metrics.custom_source("LocalQueue", "ns/lq", {"tier": "gold"}, None)
    metrics.workload_creation_latency("Job", 0.5, "ns/lq")
    metrics.workload_creation_latency("Job", 0.5, "ns/unknown")
    samples = _samples(metrics)
    count = "kueue_workload_creation_latency_seconds_count"
    assert (
        samples[(count, (("custom_tier", "gold"), ("job_kind", "Job"), ("replica_role", "standalone")))] == 1
    )
    assert samples[(count, (("custom_tier", ""), ("job_kind", "Job"), ("replica_role", "standalone")))] == 1


def test_without_custom_labels_nothing_changes() -> None:
    metrics = KueueMetrics()
    metrics.custom_source("ClusterQueue", "cq", {"team": "ml"}, None)
    metrics.report_active("cq", 1, 1)
    assert _value(metrics, "kueue_admitted_active_workloads", cluster_queue="cq") == 1
