"""Metrics computed from the core: gauges from state, counters and histograms from transitions."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from manager.core.config import CoreConfig, config_from
from manager.core.engine import QueueingCore
from manager.runtime.metrics import KueueMetrics
from manager.runtime.metrics_feed import (
    MetricsFeed,
    cluster_queue_counts,
    eviction_labels,
    local_queue_counts,
)

from .test_queue_status import _objects


def _samples(metrics: KueueMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(metrics: KueueMetrics, metric: str, **labels: str) -> float | None:
    labels.setdefault("replica_role", "standalone")
    return _samples(metrics).get((metric, tuple(sorted(labels.items()))))


def _core(config: dict[str, Any] | None = None, now: float = 1767225600.0) -> QueueingCore:
    core = QueueingCore(config_from(config), now=now)  # 2026-01-01T00:00:00Z, the objects' epoch
    for obj in _objects():
        core.apply(obj)
    return core


def test_gauges_follow_the_queues() -> None:
    core = _core()
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics, cluster_queue_resources=True)
    core.run_until_idle()
    feed.refresh()
    assert _value(metrics, "kueue_pending_workloads", cluster_queue="cq", status="active") == 0
    assert _value(metrics, "kueue_pending_workloads", cluster_queue="cq", status="inadmissible") == 1
    assert _value(metrics, "kueue_admitted_active_workloads", cluster_queue="cq") == 2
    assert _value(metrics, "kueue_reserving_active_workloads", cluster_queue="cq") == 2
    assert _value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="active") == 1
    assert _value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="pending") == 0
    res = {"cohort": "", "cluster_queue": "cq", "flavor": "on-demand", "resource": "cpu"}
    assert _value(metrics, "kueue_cluster_queue_nominal_quota", **res) == 2.0
    assert _value(metrics, "kueue_cluster_queue_resource_usage", **res) == 2.0
    assert _value(metrics, "kueue_cluster_queue_borrowing_limit", **res) == float("inf")
    lq = {"name": "lq", "namespace": "ns"}
    assert _value(metrics, "kueue_local_queue_admitted_active_workloads", **lq) == 2
    assert _value(metrics, "kueue_local_queue_pending_workloads", status="inadmissible", **lq) == 1
    usage = {"flavor": "on-demand", "resource": "cpu", **lq}
    assert _value(metrics, "kueue_local_queue_resource_usage", **usage) == 2.0
    assert _value(metrics, "kueue_local_queue_status", active="True", **lq) == 1

    core.finish("ns/w0")
    core.finish("ns/w1")
    core.run_until_idle()
    core.finish("ns/w2")
    feed.refresh()
    assert _value(metrics, "kueue_admitted_active_workloads", cluster_queue="cq") == 0
    assert _value(metrics, "kueue_pending_workloads", cluster_queue="cq", status="inadmissible") == 0
    assert _value(metrics, "kueue_finished_workloads", cluster_queue="cq") == 3
    assert _value(metrics, "kueue_cluster_queue_resource_usage", **res) == 0.0


def test_counts_agree_with_the_queue_heaps() -> None:
    core = _core()
    counts = cluster_queue_counts(core)["cq"]
    assert (counts.active, counts.inadmissible, counts.reserving) == (3, 0, 0)
    core.run_until_idle()
    lq_counts, usage = local_queue_counts(core)
    assert lq_counts["ns/lq"].inadmissible == 1 and lq_counts["ns/lq"].admitted == 2
    assert usage["ns/lq"] == {("on-demand", "cpu"): 2000}


def test_deleted_queue_series_disappear() -> None:
    core = _core()
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.refresh()
    assert _value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="active") == 1
    core.delete("ClusterQueue", None, "cq")
    core.delete("LocalQueue", "ns", "lq")
    feed.refresh()
    assert not [k for k in _samples(metrics) if ("cluster_queue", "cq") in k[1] or ("name", "lq") in k[1]]


def test_admissions_and_wait_times_are_counted_once() -> None:
    core = _core()
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.baseline()
    core.now += 10.0
    core.run_until_idle()
    feed.observe(core.take_changes(), core.now)
    feed.observe(core.take_changes(), core.now)  # nothing new: nothing counted twice
    labels = {"cluster_queue": "cq", "priority_class": ""}
    assert _value(metrics, "kueue_quota_reserved_workloads_total", **labels) == 2
    assert _value(metrics, "kueue_admitted_workloads_total", **labels) == 2
    assert _value(metrics, "kueue_local_queue_admitted_workloads_total", name="lq", namespace="ns",
                  priority_class="") == 2
    # w0 was created at the epoch, w1 a second later; both admitted 10 s after the epoch.
    assert _value(metrics, "kueue_admission_wait_time_seconds_sum", **labels) == 19.0
    assert _value(metrics, "kueue_admission_wait_time_seconds_bucket", le="10.0", **labels) == 2
    assert _value(metrics, "kueue_admission_checks_wait_time_seconds_sum", **labels) == 0.0

    core.now += 5.0
    assert core.set_pods_ready("ns/w0")
    assert feed.observe((), core.now) == {"ns/w0"}
    assert feed.observe((), core.now) == set()
    assert _value(metrics, "kueue_ready_wait_time_seconds_sum", **labels) == 15.0
    assert _value(metrics, "kueue_admitted_until_ready_wait_time_seconds_sum", **labels) == 5.0
    assert _value(metrics, "kueue_local_queue_ready_wait_time_seconds_count", name="lq", namespace="ns",
                  priority_class="") == 1

    core.now += 20.0
    core.finish("ns/w0")
    core.run_until_idle()  # w2 gets the freed quota
    feed.observe(core.take_changes(), core.now)
    assert _value(metrics, "kueue_finished_workloads_total", **labels) == 1
    assert _value(metrics, "kueue_execution_time_seconds_sum", **labels) == 25.0
    assert _value(metrics, "kueue_admitted_workloads_total", **labels) == 3


def test_restart_baseline_counts_nothing_already_admitted() -> None:
    core = _core()
    core.run_until_idle()
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.baseline()
    feed.observe(core.take_changes(), core.now)
    assert _value(metrics, "kueue_admitted_workloads_total", cluster_queue="cq", priority_class="") is None


def test_evictions_and_unique_evictions() -> None:
    config = {"waitForPodsReady": {"timeout": "10s", "requeuingStrategy": {"backoffBaseSeconds": 1}}}
    core = _core(config)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.baseline()
    core.run_until_idle()
    feed.observe(core.take_changes(), core.now)
    for _ in range(2):  # two PodsReady timeouts of the same workloads
        core.fire_timers(core.now + 11)
        core.run_until_idle()
        feed.observe(core.take_changes(), core.now)
        core.fire_timers(core.now + 30)  # backoff over: readmitted
        core.run_until_idle()
        feed.observe(core.take_changes(), core.now)
    labels = {"cluster_queue": "cq", "reason": "PodsReadyTimeout", "priority_class": ""}
    total = _value(metrics, "kueue_evicted_workloads_total", underlying_cause="", **labels)
    once = _value(metrics, "kueue_evicted_workloads_once_total", underlying_cause="WaitForStart", **labels)
    assert total is not None and once is not None
    assert total > once >= 2  # the same workloads evicted again are counted once per reason
    assert _value(metrics, "kueue_local_queue_evicted_workloads_total", name="lq", namespace="ns",
                  underlying_cause="", **{k: v for k, v in labels.items() if k != "cluster_queue"}) == total


def test_eviction_labels() -> None:
    assert eviction_labels("Preempted") == ("Preempted", "")
    limit = "RequeuingLimitExceeded"
    assert eviction_labels(f"DeactivatedDueTo{limit}") == ("Deactivated", limit)
    assert eviction_labels("PodsReadyTimeout") == ("PodsReadyTimeout", "")
    assert eviction_labels("PodsReadyTimeout", unique=True) == ("PodsReadyTimeout", "WaitForStart")


def test_a_finish_touched_from_outside_the_decisions_is_counted_and_a_deletion_forgotten() -> None:
    core = _core()
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    core.run_until_idle()
    feed.observe(core.take_changes(), core.now)
    core.finish("ns/w0")
    core.take_changes()  # another writer's Finished: nothing of ours to write
    assert feed.observe((), core.now) == set()
    labels = {"cluster_queue": "cq", "priority_class": ""}
    assert _value(metrics, "kueue_finished_workloads_total", **labels) is None  # not told yet
    feed.touch("ns/w0")
    feed.touch("ns/never-seen")  # nothing to count or forget: not remembered
    feed.observe((), core.now)
    assert _value(metrics, "kueue_finished_workloads_total", **labels) == 1
    core.delete("Workload", "ns", "w0")
    feed.touch("ns/w0")
    feed.observe((), core.now)
    assert "ns/w0" not in feed._seen and not feed._touched


def test_a_withdrawn_reservation_is_counted_once_when_admitted_again() -> None:
    """The manager takes back a victim whose admission it never wrote (as if never admitted):
    admissions are counted when their write starts, so its later admission counts once."""
    core = QueueingCore(CoreConfig(withdraw_unpublished=True), now=1767225600.0)
    for obj in _objects():
        if obj["kind"] == "ClusterQueue":
            obj["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
        if obj["kind"] != "Workload":
            core.apply(obj)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    low = _workload("low", cpu=2, priority=0)
    core.apply(low)
    core.run_until_idle()
    assert feed.observe(core.take_changes(), core.now) == set()
    assert core.workloads["ns/low"].holds_quota
    assert _value(metrics, "kueue_admitted_workloads_total", cluster_queue="cq", priority_class="") is None
    core.apply(_workload("high", cpu=2, priority=10))
    core.run_until_idle()  # low, never written, is taken back; high takes its room
    feed.observe(core.take_changes(), core.now)
    assert not core.workloads["ns/low"].holds_quota and core.workloads["ns/low"].evictions == []
    # Not an eviction or a preemption to Kueue's counters, but the scheduler's count has it.
    withdrawn = metrics.registry.get_sample_value("pykueue_withdrawn_reservations_total",
                                                  {"cluster_queue": "cq"})
    assert withdrawn == 1
    assert _value(metrics, "kueue_preempted_workloads_total", preempting_cluster_queue="cq",
                  reason="InClusterQueue") is None
    for key in ("ns/high", "ns/low"):
        if core.publish(key):
            feed.published(key, core.now)
    assert _value(metrics, "kueue_admitted_workloads_total", cluster_queue="cq", priority_class="") == 1
    core.finish("ns/high")
    core.run_until_idle()
    feed.observe(core.take_changes(), core.now)
    assert core.publish("ns/low")
    feed.published("ns/low", core.now)
    assert not core.publish("ns/low")  # a second write of the same reservation publishes nothing
    assert _value(metrics, "kueue_admitted_workloads_total", cluster_queue="cq", priority_class="") == 2
    assert _value(metrics, "kueue_quota_reserved_workloads_total", cluster_queue="cq", priority_class="") == 2
    assert _value(metrics, "kueue_evicted_workloads_total", cluster_queue="cq", reason="Preempted",
                  underlying_cause="", priority_class="") is None


def _workload(name: str, cpu: int, priority: int) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"queueName": "lq", "priority": priority, "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}]}}
