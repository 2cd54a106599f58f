"""KEP-10852's unadmitted-workloads gauges: per ClusterQueue and LocalQueue, by the Admitted
reason and the QuotaReserved tier; series no workload has any more disappear."""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.config import config_from
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.runtime.metrics import KueueMetrics
from pykueue.manager.runtime.metrics_feed import MetricsFeed

from .test_metrics_feed import _samples, _value


def _objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}},
        {"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}},
        {"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}},
        {"kind": "LocalQueue", "metadata": {"name": "ghost", "namespace": "ns"},
         "spec": {"clusterQueue": "absent"}},
    ]
    for name, queue, active in (("a", "lq", True), ("b", "lq", True), ("c", "lq", True), ("d", "lq", False),
                                ("e", "nope", True), ("f", "ghost", True)):
        out.append({"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
            "queueName": queue, "active": active, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}})
    return out


def _core(config: dict[str, Any] | None = None) -> QueueingCore:
    """Under UnadmittedWorkloadsObservability (off by default in Kueue v0.19.2) unless
    ``config`` sets the gates."""
    core = QueueingCore(config_from({"featureGates": {"UnadmittedWorkloadsObservability": True},
                                     **(config or {})}))
    for obj in _objects():
        core.apply(obj)
    return core


def _unadmitted(metrics: KueueMetrics) -> dict[tuple[str, ...], float]:
    """Every unadmitted series, as (family, cluster_queue, [lq name,] reason, underlying_cause)."""
    out: dict[tuple[str, ...], float] = {}
    for (name, labels), value in _samples(metrics).items():
        d = dict(labels)
        if name == "kueue_unadmitted_workloads":
            out[(name, d["cluster_queue"], d["reason"], d["underlying_cause"])] = value
        elif name == "kueue_local_queue_unadmitted_workloads":
            assert d["namespace"] == "ns"
            out[(name, d["cluster_queue"], d["name"], d["reason"], d["underlying_cause"])] = value
    return out


CQ, LQ = "kueue_unadmitted_workloads", "kueue_local_queue_unadmitted_workloads"


def test_unadmitted_workloads_by_reason_and_tier() -> None:
    core = _core()
    metrics = KueueMetrics()
    feed = MetricsFeed(core, metrics)
    feed.refresh()
    # Not evaluated yet: PendingEvaluation; the missing LocalQueue's workload has no ClusterQueue.
    assert _unadmitted(metrics) == {
        (CQ, "cq", "NoReservation", "PendingEvaluation"): 3,
        (CQ, "cq", "NoReservation", "Deactivated"): 1,
        (CQ, "absent", "NoReservation", "Misconfigured"): 1,
        (LQ, "cq", "lq", "NoReservation", "PendingEvaluation"): 3,
        (LQ, "cq", "lq", "NoReservation", "Deactivated"): 1,
        (LQ, "absent", "ghost", "NoReservation", "Misconfigured"): 1,
    }
    core.run_until_idle()
    feed.refresh()
    assert _unadmitted(metrics) == {
        (CQ, "cq", "NoReservation", "WaitingForQuota"): 1,
        (CQ, "cq", "NoReservation", "Deactivated"): 1,
        (CQ, "absent", "NoReservation", "Misconfigured"): 1,
        (LQ, "cq", "lq", "NoReservation", "WaitingForQuota"): 1,
        (LQ, "cq", "lq", "NoReservation", "Deactivated"): 1,
        (LQ, "absent", "ghost", "NoReservation", "Misconfigured"): 1,
    }
    assert _value(metrics, CQ, cluster_queue="cq", reason="NoReservation",
                  underlying_cause="PendingEvaluation") is None  # cleared, not left at 0

    # Admission checks: a reservation without its checks is unadmitted with an empty cause.
    core.apply({"kind": "AdmissionCheck", "metadata": {"name": "prov"}, "spec": {"controllerName": "x"}})
    cq = _objects()[1]
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "prov"}]}
    core.apply(cq)
    core.finish("ns/a")
    core.run_until_idle()
    assert core.workload("ns/c").status == "QuotaReserved"
    feed.refresh()
    assert _unadmitted(metrics)[(CQ, "cq", "UnsatisfiedAdmissionChecks", "")] == 1
    assert (CQ, "cq", "NoReservation", "WaitingForQuota") not in _unadmitted(metrics)


def test_no_unadmitted_series_with_the_gate_off_or_local_queue_metrics_off() -> None:
    for gates in ({"UnadmittedWorkloadsObservability": False}, {}):  # off, and off by default
        core = _core({"featureGates": gates})
        metrics = KueueMetrics()
        MetricsFeed(core, metrics).refresh()
        assert _unadmitted(metrics) == {}
    core = _core()
    metrics = KueueMetrics()
    MetricsFeed(core, metrics, local_queue_metrics=False).refresh()
    assert {k[0] for k in _unadmitted(metrics)} == {CQ}
