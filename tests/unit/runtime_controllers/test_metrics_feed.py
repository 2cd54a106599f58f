"""Metrics computed from the core: gauges from state, counters and histograms from transitions."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykueue.api import keys
from pykueue.manager.core.changes import CoreChanges
from pykueue.manager.core.config import CoreConfig, config_from
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.runtime.controllers.manager import pods_ready_since
from pykueue.manager.runtime.metrics import KueueMetrics
from pykueue.manager.runtime.metrics_feed import (
    MetricsFeed,
    cluster_queue_counts,
    eviction_labels,
    local_queue_counts,
)

from .core_access import owe_status_writes
from .test_queue_status import _objects


def _samples(metrics: KueueMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _without_writes(core: QueueingCore) -> CoreChanges:
    """The core's PodsReady changes and counts for the feed, not its statuses to write: those
    stay owed for the next ``take_changes``."""
    changes = core.take_changes()
    owe_status_writes(core, *changes.written)
    return replace(changes, written=frozenset())


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
    core.advance_clock(core.now + 10.0)
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
    assert _value(metrics, "kueue_admission_wait_time_seconds_bucket", le="10", **labels) == 2
    assert _value(metrics, "kueue_admission_checks_wait_time_seconds_sum", **labels) == 0.0

    core.advance_clock(core.now + 5.0)
    assert core.set_pods_ready("ns/w0")
    assert feed.observe(_without_writes(core), core.now) == {"ns/w0"}
    assert feed.observe(_without_writes(core), core.now) == set()
    assert _value(metrics, "kueue_ready_wait_time_seconds_sum", **labels) == 15.0
    assert _value(metrics, "kueue_admitted_until_ready_wait_time_seconds_sum", **labels) == 5.0
    assert _value(metrics, "kueue_local_queue_ready_wait_time_seconds_count", name="lq", namespace="ns",
                  priority_class="") == 1

    core.advance_clock(core.now + 20.0)
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
    assert feed.observe(_without_writes(core), core.now) == set()
    labels = {"cluster_queue": "cq", "priority_class": ""}
    assert _value(metrics, "kueue_finished_workloads_total", **labels) is None  # not told yet
    feed.touch("ns/w0")
    feed.touch("ns/never-seen")  # nothing to count or forget: not remembered
    feed.observe(_without_writes(core), core.now)
    assert _value(metrics, "kueue_finished_workloads_total", **labels) == 1
    core.delete("Workload", "ns", "w0")
    feed.touch("ns/w0")
    feed.observe(_without_writes(core), core.now)
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
    assert core.workload("ns/low").holds_quota
    assert _value(metrics, "kueue_admitted_workloads_total", cluster_queue="cq", priority_class="") is None
    core.apply(_workload("high", cpu=2, priority=10))
    core.run_until_idle()  # low, never written, is taken back; high takes its room
    feed.observe(core.take_changes(), core.now)
    assert not core.workload("ns/low").holds_quota and core.workload("ns/low").evictions == []
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


# -- the hierarchy, fair sharing and pods-ready-to-evicted (Kueue v0.19 feeds these too) --------

API = "kueue.x-k8s.io/v1beta2"


def _queue(kind: str, name: str, parent: str | None, cpu: str | None = None,
           weight: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent is not None:
        spec["parentName" if kind == "Cohort" else "cohortName"] = parent
    if cpu is not None:
        spec["resourceGroups"] = [{"coveredResources": ["cpu"], "flavors": [
            {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]
    if kind == "ClusterQueue":
        spec["namespaceSelector"] = {}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _cohort_series(metrics: KueueMetrics, family: str) -> dict[str, dict[str, str | float]]:
    return {dict(labels)["cohort"]: {**dict(labels), "value": value}
            for (name, labels), value in _samples(metrics).items() if name == family}


def test_cohort_info_names_each_cohorts_parent_and_root_and_leaves_cycles_out() -> None:
    core = QueueingCore(now=1767225600.0)
    core.apply({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "on-demand"}})
    for obj in (_queue("Cohort", "org", None), _queue("Cohort", "team", "org"),
                _queue("ClusterQueue", "cq", "team", cpu="2"),
                _queue("ClusterQueue", "solo", "named-only", cpu="1"),  # an implicit cohort
                _queue("Cohort", "a", "b"), _queue("Cohort", "b", "a"), _queue("Cohort", "below", "a")):
        core.apply(obj)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.refresh()
    info = _cohort_series(metrics, "kueue_cohort_info")
    assert {name: (s["parent_cohort"], s["root_cohort"], s["value"]) for name, s in info.items()} == {
        "org": ("", "org", 1.0), "team": ("org", "org", 1.0), "named-only": ("", "named-only", 1.0)}
    assert _value(metrics, "kueue_cluster_queue_info", cluster_queue="cq", parent_cohort="team",
                  root_cohort="org") == 1

    core.apply(_queue("Cohort", "team", None))  # moved out of org: one series, the new one
    core.delete("ClusterQueue", None, "solo")  # named by nothing now: gone
    feed.refresh()
    info = _cohort_series(metrics, "kueue_cohort_info")
    assert {name: (s["parent_cohort"], s["root_cohort"]) for name, s in info.items()} == {
        "org": ("", "org"), "team": ("", "team")}

    off = KueueMetrics()
    MetricsFeed.from_config(core, off, {"featureGates": {"MetricsForCohorts": False}}).refresh()
    assert not _cohort_series(off, "kueue_cohort_info")
    assert not [k for k in _samples(off) if k[0] == "kueue_cluster_queue_info"]


def _fair_core(fair_sharing: bool) -> QueueingCore:
    config = {"fairSharing": {"enable": True}} if fair_sharing else None
    core = QueueingCore(config_from(config), now=1767225600.0)
    core.apply({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "on-demand"}})
    for obj in (_queue("Cohort", "org", None), _queue("Cohort", "left", "org", weight="2"),
                _queue("Cohort", "right", "org"), _queue("ClusterQueue", "busy", "left", cpu="2"),
                _queue("ClusterQueue", "idle", "right", cpu="6")):
        core.apply(obj)
    core.apply({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "busy"}})
    for i in range(5):  # 5 cpu in a subtree whose quota is 2: 3 borrowed
        wl = _workload(f"w{i}", cpu=1, priority=0)
        core.apply(wl)
    core.run_until_idle()
    return core


def test_cohort_weighted_share_is_fed_with_fair_sharing_only() -> None:
    core = _fair_core(fair_sharing=True)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.refresh()
    shares = {name: s["value"] for name, s in _cohort_series(metrics, "kueue_cohort_weighted_share").items()}
    # left borrows 3 cpu of the 8 its parent holds (375 per mille), weight 2; org is the root.
    assert shares == {"org": 0.0, "left": 187.5, "right": 0.0}
    assert shares == core.cohort_shares()

    core.finish("ns/w0")
    core.finish("ns/w1")
    feed.refresh()
    assert _cohort_series(metrics, "kueue_cohort_weighted_share")["left"]["value"] == 62.5  # 1 of 8

    plain = KueueMetrics()
    MetricsFeed(_fair_core(fair_sharing=False), plain).refresh()
    assert not _cohort_series(plain, "kueue_cohort_weighted_share")
    assert _cohort_series(plain, "kueue_cohort_info")  # the hierarchy is there all the same


def _ready_to_evicted(metrics: KueueMetrics, reason: str, cause: str) -> tuple[float | None, float | None]:
    labels = {"cluster_queue": "cq", "reason": reason, "underlying_cause": cause}
    return (_value(metrics, "kueue_pods_ready_to_evicted_time_seconds_count", **labels),
            _value(metrics, "kueue_pods_ready_to_evicted_time_seconds_sum", **labels))


def test_pods_ready_to_evicted_times_an_eviction_from_the_pods_becoming_ready() -> None:
    config = {"waitForPodsReady": {"timeout": "10s", "requeuingStrategy": {"backoffBaseSeconds": 1}}}
    core = QueueingCore(config_from(config), now=1767225600.0)
    objects = _objects()
    for obj in objects:
        if obj["kind"] == "Workload":
            obj["spec"]["maximumExecutionTimeSeconds"] = 60
        core.apply(obj)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    core.run_until_idle()  # w0 and w1 admitted at the epoch
    feed.observe(core.take_changes(), core.now)
    core.fire_timers(core.now + 5)
    assert core.set_pods_ready("ns/w0")  # w1's pods never become ready
    feed.observe(_without_writes(core), core.now)
    core.fire_timers(core.now + 6)  # w1 times out waiting for its pods: nothing to time
    feed.observe(core.take_changes(), core.now)
    assert core.workload("ns/w1").evictions == ["PodsReadyTimeout"]
    assert _ready_to_evicted(metrics, "PodsReadyTimeout", "") == (None, None)

    core.fire_timers(core.now + 49)  # 60 s after its admission w0 runs out of time, 55 s after ready
    feed.observe(core.take_changes(), core.now)
    assert core.workload("ns/w0").evictions == ["DeactivatedDueToMaximumExecutionTimeExceeded"]
    assert _ready_to_evicted(metrics, "Deactivated", "MaximumExecutionTimeExceeded") == (1, 55.0)


def test_pods_ready_before_a_restart_are_timed_from_the_stored_condition() -> None:
    config = {"waitForPodsReady": {"timeout": "10s"}}
    core = QueueingCore(config_from(config), now=1767225600.0 + 100)
    objects = _objects()
    for obj in objects[:3]:
        core.apply(obj)
    stored = objects[3]
    stored["spec"]["maximumExecutionTimeSeconds"] = 120
    stored["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": "1"}}]},
        "conditions": [{"type": t, "status": "True", "reason": t, "message": "",
                        "lastTransitionTime": at} for t, at in (
            ("QuotaReserved", "2026-01-01T00:00:10Z"), ("Admitted", "2026-01-01T00:00:10Z"),
            ("PodsReady", "2026-01-01T00:00:30Z"))]}
    core.apply(stored)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.baseline(ready_since=lambda key: 1767225600.0 + 30 if key == "ns/w0" else None)
    core.fire_timers(1767225600.0 + 130)  # admitted at 10 s, 120 s to run
    feed.observe(core.take_changes(), core.now)
    assert _ready_to_evicted(metrics, "Deactivated", "MaximumExecutionTimeExceeded") == (1, 100.0)


def test_the_manager_reads_when_pods_became_ready_from_the_stored_condition() -> None:
    def stored(status: str) -> dict[str, Any]:
        return {"status": {"conditions": [{"type": "PodsReady", "status": status,
                                           "lastTransitionTime": "2026-01-01T00:00:30Z"}]}}

    assert pods_ready_since(stored("True")) == 1767225600.0 + 30
    assert pods_ready_since(stored("False")) is None
    assert pods_ready_since({"status": {}}) is None


# -- what Kueue v0.19.2 feeds beside: shares, subtrees, pending requests, eviction latency ------


def _series(metrics: KueueMetrics, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple((k, v) for k, v in labels if k != "replica_role"): value
            for (name, labels), value in _samples(metrics).items() if name == family}


def test_cluster_queue_weighted_share_comes_with_the_resource_gauges_under_fair_sharing() -> None:
    core = _fair_core(fair_sharing=True)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics, cluster_queue_resources=True)
    feed.refresh()
    # busy borrows 3 cpu of the 8 its tree can lend (375 per mille), weight 1.
    assert _series(metrics, "kueue_cluster_queue_weighted_share") == {
        (("cluster_queue", "busy"), ("cohort", "left")): 375.0,
        (("cluster_queue", "idle"), ("cohort", "right")): 0.0}

    core.apply(_queue("ClusterQueue", "busy", "right", cpu="2", weight="0"))  # moved; borrows at weight 0
    feed.refresh()
    shares = _series(metrics, "kueue_cluster_queue_weighted_share")
    assert set(shares) == {(("cluster_queue", "busy"), ("cohort", "right")),
                           (("cluster_queue", "idle"), ("cohort", "right"))}
    assert math.isnan(shares[(("cluster_queue", "busy"), ("cohort", "right"))])  # Kueue's NaN for +Inf

    without_resources = KueueMetrics()
    MetricsFeed(core, without_resources).refresh()
    plain = KueueMetrics()
    MetricsFeed(_fair_core(fair_sharing=False), plain, cluster_queue_resources=True).refresh()
    for off in (without_resources, plain):
        assert not _series(off, "kueue_cluster_queue_weighted_share")


def test_cluster_queue_resource_pending_sums_what_pending_workloads_ask_for() -> None:
    core = _core()
    for obj in _objects():
        if obj["kind"] == "Workload":
            obj["metadata"]["name"] += "-big"
            obj["spec"]["podSets"][0]["count"] = 2
            obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {
                "cpu": "500m", "memory": "1Gi"}
            core.apply(obj)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics, cluster_queue_resources=True)
    feed.refresh()  # nothing admitted yet: 3 x 1 cpu and 3 x 2 x (0.5 cpu, 1Gi)
    pending = _series(metrics, "kueue_cluster_queue_resource_pending")
    assert pending == {(("cluster_queue", "cq"), ("resource", "cpu")): 6.0,
                       (("cluster_queue", "cq"), ("resource", "memory")): 6.0 * 2**30}
    core.run_until_idle()  # 2 cpu of quota: two of the small ones are admitted
    for key in list(core.all_workloads()):
        if key.endswith("-big"):
            core.delete("Workload", "ns", key.split("/")[1])
    feed.refresh()
    # the memory series goes with the last workload asking for it; cpu, with quota, stays at 0
    assert _series(metrics, "kueue_cluster_queue_resource_pending") == {
        (("cluster_queue", "cq"), ("resource", "cpu")): 1.0}
    core.finish("ns/w0")
    core.run_until_idle()
    feed.refresh()
    assert _series(metrics, "kueue_cluster_queue_resource_pending") == {
        (("cluster_queue", "cq"), ("resource", "cpu")): 0.0}

    off = KueueMetrics()
    MetricsFeed(core, off).refresh()  # only with metrics.enableClusterQueueResources
    assert not _series(off, "kueue_cluster_queue_resource_pending")


def test_cohort_subtree_gauges_sum_each_cohorts_subtree() -> None:
    core = _fair_core(fair_sharing=False)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.refresh()

    def by_cohort(family: str) -> dict[str, float]:
        return {dict(labels)["cohort"]: value for labels, value in _series(metrics, family).items()}

    # org holds busy's 2 cpu and idle's 6; busy runs all five 1-cpu workloads, borrowing 3.
    assert by_cohort("kueue_cohort_subtree_quota") == {"org": 8.0, "left": 2.0, "right": 6.0}
    assert by_cohort("kueue_cohort_subtree_resource_reservations") == {"org": 5.0, "left": 5.0}
    assert by_cohort("kueue_cohort_subtree_admitted_active_workloads") == {"org": 5, "left": 5, "right": 0}
    assert {dict(labels)["flavor"] for labels in _series(metrics, "kueue_cohort_subtree_quota")} == {
        "on-demand"}

    core.finish("ns/w0")
    core.delete("ClusterQueue", None, "idle")  # right is left with nothing: no series above 0
    core.run_until_idle()
    feed.refresh()
    assert by_cohort("kueue_cohort_subtree_quota") == {"org": 2.0, "left": 2.0}
    assert by_cohort("kueue_cohort_subtree_resource_reservations") == {"org": 4.0, "left": 4.0}
    assert by_cohort("kueue_cohort_subtree_admitted_active_workloads") == {"org": 4, "left": 4}


def test_cohort_subtree_admissions_count_in_every_cohort_up_to_the_root() -> None:
    core = _fair_core(fair_sharing=False)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.baseline()  # the five admitted before: not counted
    core.apply(_workload("late", cpu=1, priority=0))
    core.apply(_queue("Cohort", "right", "org"))
    core.finish("ns/w0")
    core.run_until_idle()
    feed.observe(core.take_changes(), core.now)
    assert core.workload("ns/late").status == "Admitted"
    assert _series(metrics, "kueue_cohort_subtree_admitted_workloads_total") == {
        (("cohort", "left"), ("priority_class", "")): 1, (("cohort", "org"), ("priority_class", "")): 1}


def _afs_core(config: dict[str, Any] | None) -> QueueingCore:
    core = QueueingCore(config_from(config), now=1767225600.0)
    for obj in _objects():
        if obj["kind"] == "ClusterQueue":
            obj["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
        core.apply(obj)
    core.apply({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "heavy", "namespace": "ns"},
                "spec": {"clusterQueue": "cq", "fairSharing": {"weight": "0"}}})
    core.run_until_idle()
    return core


def test_local_queue_admission_fair_sharing_usage_under_its_configuration_and_gate() -> None:
    config = {"admissionFairSharing": {"usageHalfLifeTime": "10m", "usageSamplingInterval": "5m"}}
    core = _afs_core(config)
    metrics = KueueMetrics()
    MetricsFeed.from_config(core, metrics, config).refresh()
    usage = _series(metrics, "kueue_local_queue_admission_fair_sharing_usage")
    labels = (("cluster_queue", "cq"), ("name", "lq"), ("namespace", "ns"))
    # Two 1-cpu admissions, each counted at once as a penalty of 1 - 0.5 ** (5 / 10) cpu.
    assert usage[labels] == pytest.approx(2 * (1 - 0.5 ** 0.5))
    assert usage[labels] == core.local_queue_usage("ns/lq")
    assert usage[(("cluster_queue", "cq"), ("name", "heavy"), ("namespace", "ns"))] == math.inf  # weight 0

    for off_config in ({**config, "featureGates": {"AdmissionFairSharing": False}},
                       {**config, "metrics": {"localQueueMetrics": {"enable": False}}}):
        off = KueueMetrics()
        MetricsFeed.from_config(core, off, off_config).refresh()
        assert not _series(off, "kueue_local_queue_admission_fair_sharing_usage")
    without = KueueMetrics()
    MetricsFeed.from_config(_afs_core(None), without, {}).refresh()
    assert not _series(without, "kueue_local_queue_admission_fair_sharing_usage")


BACKOFF_1S = {"waitForPodsReady": {"timeout": "10s", "requeuingStrategy": {"backoffBaseSeconds": 1}}}


def _holding_core(config: dict[str, Any]) -> QueueingCore:
    """The manager's way: an evicted workload keeps its quota until its job has stopped."""
    core = QueueingCore(replace(config_from(config), hold_quota_until_stopped=True), now=1767225600.0)
    for obj in _objects():
        if obj["kind"] == "Workload":
            obj["spec"]["maximumExecutionTimeSeconds"] = 60
        core.apply(obj)
    return core


def _eviction_latency(metrics: KueueMetrics, reason: str) -> tuple[float | None, float | None]:
    labels = {"cluster_queue": "cq", "reason": reason}
    return (_value(metrics, "kueue_workload_eviction_latency_seconds_count", **labels),
            _value(metrics, "kueue_workload_eviction_latency_seconds_sum", **labels))


def test_eviction_latency_times_an_eviction_until_its_quota_is_released() -> None:
    core = _holding_core(BACKOFF_1S)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    core.run_until_idle()  # w0 and w1 admitted at the epoch
    feed.observe(core.take_changes(), core.now)
    core.fire_timers(core.now + 5)
    assert core.set_pods_ready("ns/w0")
    feed.observe(_without_writes(core), core.now)
    core.fire_timers(core.now + 6)  # w1's pods never became ready: evicted, its quota held
    feed.observe(core.take_changes(), core.now)
    assert core.workload("ns/w1").stopping is not None
    assert _eviction_latency(metrics, "PodsReadyTimeout") == (None, None)
    core.advance_clock(core.now + 4)
    assert core.job_stopped("ns/w1")
    feed.observe(core.take_changes(), core.now)
    assert _eviction_latency(metrics, "PodsReadyTimeout") == (1, 4.0)

    core.fire_timers(1767225600.0 + 60)  # w0 runs out of time: deactivated, which Kueue does not time
    feed.observe(core.take_changes(), core.now)
    core.advance_clock(core.now + 2)
    assert core.job_stopped("ns/w0")
    feed.observe(core.take_changes(), core.now)
    assert core.workload("ns/w0").deactivated
    assert not [k for k in _samples(metrics) if k[0].startswith("kueue_workload_eviction_latency")
                and ("reason", "PodsReadyTimeout") not in k[1]]


def test_eviction_latency_of_an_eviction_found_at_start_up_is_timed_from_its_condition() -> None:
    core = _holding_core({"waitForPodsReady": {"timeout": "10s"}})
    core.run_until_idle()
    core.fire_timers(core.now + 11)  # both time out waiting for their pods; quota held
    assert all(core.workload(k).stopping is not None for k in ("ns/w0", "ns/w1"))
    metrics = KueueMetrics()  # a new leader, which reads when each was evicted
    feed = MetricsFeed(core, metrics)
    feed.baseline(evicted_since=lambda key: 1767225600.0 + 11 if key == "ns/w0" else None)
    core.advance_clock(core.now + 9)
    assert core.job_stopped("ns/w0") and core.job_stopped("ns/w1")
    feed.observe(core.take_changes(), core.now)
    assert _eviction_latency(metrics, "PodsReadyTimeout") == (1, 9.0)  # w1's time is unknown: not timed


def test_replaced_workload_slices_are_counted_per_cluster_queue() -> None:
    core = QueueingCore(now=1767225600.0)
    for obj in _objects()[:3]:
        core.apply(obj)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)

    def elastic(name: str, count: int, replaces: str | None = None) -> dict[str, Any]:
        wl = _workload(name, cpu=1, priority=0)
        wl["spec"]["podSets"][0]["count"] = count
        annotations = {keys.ELASTIC_JOB: "true", keys.WORKLOAD_SLICE_NAME: "first"}
        if replaces is not None:
            annotations[keys.WORKLOAD_SLICE_REPLACEMENT_FOR] = f"ns/{replaces}"
        wl["metadata"]["annotations"] = annotations
        return wl

    core.apply(elastic("first", 1))
    core.run_until_idle()
    feed.observe(core.take_changes(), core.now)
    core.apply(elastic("second", 2, replaces="first"))
    core.run_until_idle()
    feed.observe(core.take_changes(), core.now)
    assert core.workload("ns/first").status == "Finished"
    assert _value(metrics, "kueue_replaced_workload_slices_total", cluster_queue="cq") == 1


def test_an_eviction_held_until_its_job_stops_is_no_new_admission() -> None:
    """The manager's evicted workload holds its quota while its job stops: that is still the
    old reservation, not another one to count; once released and reserved again, it is."""
    core = _holding_core(BACKOFF_1S)
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    core.run_until_idle()
    feed.observe(core.take_changes(), core.now)
    labels = {"cluster_queue": "cq", "priority_class": ""}

    def counted() -> tuple[float | None, ...]:
        return (_value(metrics, "kueue_quota_reserved_workloads_total", **labels),
                _value(metrics, "kueue_admitted_workloads_total", **labels),
                _value(metrics, "kueue_local_queue_admitted_workloads_total", name="lq", namespace="ns",
                       priority_class=""))

    assert counted() == (2, 2, 2)
    core.fire_timers(core.now + 11)  # both time out waiting for their pods, their quota held
    feed.observe(core.take_changes(), core.now)
    assert all(core.workload(k).stopping is not None for k in ("ns/w0", "ns/w1"))
    assert counted() == (2, 2, 2)
    # Released and, the backoff over, reserved again before the feed looks: counted once each.
    assert core.job_stopped("ns/w0") and core.job_stopped("ns/w1")
    core.fire_timers(core.now + 5)
    core.run_until_idle()
    assert core.workload("ns/w0").status == "Admitted" and core.workload("ns/w0").stopping is None
    feed.observe(core.take_changes(), core.now)
    assert counted() == (4, 4, 4)
