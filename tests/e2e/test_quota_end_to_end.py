"""Quota enforced end to end by the ``pykueue run`` that ``dev up`` started.

A ClusterQueue with 2 CPUs and three 1-CPU Jobs: two run, one waits. Three views of that
state must agree while it lasts -- the Workloads in the API, the manager's Prometheus
metrics scraped over HTTP, and the visibility API through kube-apiserver's aggregation
layer. When the two finish, the third starts, and at the end usage is back to zero.

The metrics answer only a bearer token whose user may ``get /metrics`` (as Kueue's): the
dev metrics reader's token is sent, and one test checks the refusals.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykueue.devcluster import cluster, processes

from .conftest import DevCluster, bearer_get, wait_until
from .test_queueing import FLAVOR, _condition, _cq_cpu_usage, _job, _queues

pytestmark = pytest.mark.e2e

VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"


def _flags() -> dict[str, str]:
    state = cluster.current_state()
    record = state.record("pykueue") if state is not None else None
    if record is None or not processes.is_running(record):
        pytest.fail("the dev cluster runs no pykueue (`pykueue dev up` starts it)")
    return dict(itertools.pairwise(record.argv))


def _metrics_url() -> str:
    return f"http://{_flags()['--metrics-bind-address']}/metrics"


def _scrape(url: str, token: str) -> Samples:
    status, text = bearer_get(url, token)
    assert status == 200, f"/metrics answered {status}: {text}"
    return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "replica_role"))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _metric(samples: Samples, metric: str, **labels: str) -> float:
    return samples.get((metric, tuple(sorted(labels.items()))), 0.0)


def _workloads(dev_cluster: DevCluster, namespace: str) -> list[dict[str, Any]]:
    return list(dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"])


def _split(dev_cluster: DevCluster, namespace: str) -> tuple[list[str], list[str]] | None:
    """(admitted, pending) Workload names once all three exist and two are admitted."""
    wls = _workloads(dev_cluster, namespace)
    admitted = sorted(w["metadata"]["name"] for w in wls if _condition(w, "Admitted"))
    pending = sorted(w["metadata"]["name"] for w in wls if not _condition(w, "QuotaReserved"))
    return (admitted, pending) if len(wls) == 3 and len(admitted) == 2 else None


def _pending_names(dev_cluster: DevCluster, path: str) -> list[str]:
    summary = json.loads(dev_cluster.kubectl("get", "--raw", path).stdout)
    assert summary["kind"] == "PendingWorkloadsSummary"
    return [item["metadata"]["name"] for item in summary["items"]]


def test_metrics_need_a_token_allowed_to_read_them(dev_cluster: DevCluster, namespace: str,
                                                   metrics_token: str) -> None:
    """401 without a token or with a bad one, 403 for a ServiceAccount without
    ``pykueue-metrics-reader``, 200 for the dev metrics reader; the probes need nothing."""
    url = _metrics_url()
    status, body = bearer_get(url, None)
    assert status == 401, body
    assert bearer_get(url, "not-a-token")[0] == 401
    dev_cluster.kubectl("create", "serviceaccount", "no-metrics", "-n", namespace)
    other = dev_cluster.kubectl("create", "token", "no-metrics", "-n", namespace).stdout.strip()
    status, body = bearer_get(url, other)
    assert status == 403 and f"system:serviceaccount:{namespace}:no-metrics" in body, (status, body)
    status, body = bearer_get(url, metrics_token)
    assert status == 200 and "kueue_pending_workloads" in body, (status, body[:500])
    probe = f"http://{_flags()['--health-probe-bind-address']}/readyz"
    assert bearer_get(probe, None) == (200, "ok")


def test_two_of_three_run_metrics_and_visibility_agree(dev_cluster: DevCluster, namespace: str,
                                                       metrics_token: str) -> None:
    url = _metrics_url()
    cq = _queues(dev_cluster, namespace, "2")
    # The first two run long enough to look at the waiting third; the third is quick.
    for name, delay in (("a", "25s"), ("b", "25s"), ("c", "5s")):
        _job(dev_cluster, namespace, name, delay)

    admitted, pending = wait_until("two Workloads admitted and one waiting",
                                   lambda: _split(dev_cluster, namespace), 60.0)
    assert len(pending) == 1
    jobs = {j["metadata"]["name"]: j for j in dev_cluster.get_json("jobs", "-n", namespace)["items"]}
    assert sorted(n for n, j in jobs.items() if not j["spec"].get("suspend")) == sorted(
        w.split("-")[1] for w in admitted)
    wait_until("the ClusterQueue status to show 2 CPUs used",
               lambda: _cq_cpu_usage(dev_cluster, cq) == "2", 15.0)

    def metrics_agree() -> Samples | None:
        s = _scrape(url, metrics_token)
        waiting = (_metric(s, "kueue_pending_workloads", cluster_queue=cq, status="active")
                   + _metric(s, "kueue_pending_workloads", cluster_queue=cq, status="inadmissible"))
        ok = waiting == 1 and _metric(s, "kueue_admitted_active_workloads", cluster_queue=cq) == 2
        return s if ok else None
    samples = wait_until("metrics to show 1 pending and 2 admitted", metrics_agree, 15.0)
    assert _metric(samples, "kueue_reserving_active_workloads", cluster_queue=cq) == 2
    assert _metric(samples, "kueue_cluster_queue_status", cluster_queue=cq, status="active") == 1
    lq = {"name": "lq", "namespace": namespace}
    assert _metric(samples, "kueue_local_queue_admitted_active_workloads", **lq) == 2
    assert _metric(samples, "kueue_admitted_workloads_total", cluster_queue=cq, priority_class="") == 2

    assert _pending_names(dev_cluster, f"{VISIBILITY}/clusterqueues/{cq}/pendingworkloads") == pending
    assert _pending_names(
        dev_cluster, f"{VISIBILITY}/namespaces/{namespace}/localqueues/lq/pendingworkloads") == pending

    wait_until("all three Workloads Finished", lambda: sum(
        _condition(w, "Finished") for w in _workloads(dev_cluster, namespace)) == 3, 120.0)
    wait_until("the ClusterQueue usage to return to zero",
               lambda: _cq_cpu_usage(dev_cluster, cq) == "0", 30.0)
    # PodsReady came from the Jobs' ready pods and stays in the finished Workloads' history.
    assert all(_condition(w, "PodsReady") for w in _workloads(dev_cluster, namespace))
    assert _pending_names(dev_cluster, f"{VISIBILITY}/clusterqueues/{cq}/pendingworkloads") == []

    def drained() -> Samples | None:
        s = _scrape(url, metrics_token)
        quiet = _metric(s, "kueue_admitted_active_workloads", cluster_queue=cq) == 0 and _metric(
            s, "kueue_pending_workloads", cluster_queue=cq, status="active") == 0
        return s if quiet else None
    samples = wait_until("metrics to show the queue drained", drained, 15.0)
    assert _metric(samples, "kueue_admitted_workloads_total", cluster_queue=cq, priority_class="") == 3
    assert _metric(samples, "kueue_finished_workloads_total", cluster_queue=cq, priority_class="") == 3
    assert _metric(samples, "kueue_finished_workloads", cluster_queue=cq) == 3
    assert _metric(samples, "kueue_admitted_until_ready_wait_time_seconds_count",
                   cluster_queue=cq, priority_class="") == 3
    res = {"cohort": "", "cluster_queue": cq, "flavor": FLAVOR, "resource": "cpu"}
    assert samples[("kueue_cluster_queue_resource_usage", tuple(sorted(res.items())))] == 0.0
    assert samples[("kueue_cluster_queue_nominal_quota", tuple(sorted(res.items())))] == 2.0
