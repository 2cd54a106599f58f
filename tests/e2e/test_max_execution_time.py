"""A Job labelled ``kueue.x-k8s.io/max-exec-time-seconds`` is stopped once it has run that
long, as Kueue v0.19.2 does: its Workload gets the limit in its spec, is deactivated when the
time is up (``spec.active: false``, Evicted with Kueue's reason and message, Kueue's Events),
the Job is suspended and the ClusterQueue's usage goes back to zero."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.core.objects import parse_time

from .conftest import DevCluster, wait_until
from .jobs_common import condition, cq_cpu_usage, queues, remove_queues, workloads_owned_by

pytestmark = pytest.mark.e2e

LIMIT_S = 10
REASON = "DeactivatedDueToMaximumExecutionTimeExceeded"
MESSAGE = "The workload is deactivated due to exceeding the maximum execution time"


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == kind), {})


def _events(dev_cluster: DevCluster, namespace: str, kind: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, note) of the events.k8s.io Events about one object."""
    items = dev_cluster.get_json("events.events.k8s.io", "-n", namespace)["items"]
    return sorted((str(e.get("type")), str(e.get("reason")), str(e.get("note") or "")) for e in items
                  if (e.get("regarding") or {}).get("kind") == kind
                  and (e.get("regarding") or {}).get("name") == name)


def test_a_job_is_stopped_after_its_maximum_execution_time(dev_cluster: DevCluster, namespace: str) -> None:
    cq = queues(dev_cluster, namespace, "2")
    try:
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "limited", "namespace": namespace,
                            "labels": {keys.QUEUE_NAME: "lq", keys.MAX_EXEC_TIME_SECONDS: str(LIMIT_S)}},
               "spec": {"template": {
                   # kwok would complete the pod after 1 s: keep it running past the limit.
                   "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "600s"}},
                   "spec": {"restartPolicy": "Never", "containers": [
                       {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
        dev_cluster.kubectl("create", "-f", "-", stdin=json.dumps(job))

        def admitted() -> dict[str, Any] | None:
            found = workloads_owned_by(dev_cluster, namespace, "Job", "limited")
            return found[0] if found and condition(found[0], "Admitted") else None

        wl = wait_until("the Job admitted", admitted, 60.0)
        assert wl["spec"]["maximumExecutionTimeSeconds"] == LIMIT_S, "the label is copied to the Workload"
        name = wl["metadata"]["name"]
        # Read now: once the job stops, Admitted turns False and its transition time moves.
        admitted_at = parse_time(_condition(wl, "Admitted").get("lastTransitionTime"))
        wait_until("the Job started", lambda: dev_cluster.get_json("job", "limited", "-n", namespace)
                   ["spec"].get("suspend") is False, 30.0)

        def stopped() -> dict[str, Any] | None:
            # The Job is read first: a Workload read before it may predate the Evicted write
            # that the Job's suspension follows.
            suspended = dev_cluster.get_json("job", "limited", "-n", namespace)["spec"].get("suspend")
            [w] = workloads_owned_by(dev_cluster, namespace, "Job", "limited")
            deactivated = w["spec"].get("active") is False and _condition(w, "Evicted")
            return w if suspended and deactivated else None

        wl = wait_until("the Job stopped and its Workload deactivated", stopped, 60.0)
        evicted = _condition(wl, "Evicted")
        assert (evicted.get("status"), evicted.get("reason"), evicted.get("message")) == \
            ("True", REASON, MESSAGE)
        # Counted from the Admitted transition (times are whole seconds on both sides).
        evicted_at = parse_time(evicted.get("lastTransitionTime"))
        assert admitted_at is not None and evicted_at is not None
        assert LIMIT_S - 1 <= evicted_at - admitted_at <= LIMIT_S + 15, (admitted_at, evicted_at)

        wait_until("the quota freed", lambda: cq_cpu_usage(dev_cluster, cq) in ("0", None), 30.0)
        def released() -> dict[str, Any] | None:
            return next((w for w in workloads_owned_by(dev_cluster, namespace, "Job", "limited")
                         if _condition(w, "QuotaReserved").get("status") == "False"), None)

        wl = wait_until("the Workload released", released, 30.0)
        stats = (wl["status"].get("schedulingStats") or {}).get("evictions")
        assert stats == [{"reason": "Deactivated", "underlyingCause": "MaximumExecutionTimeExceeded",
                          "count": 1}]

        def workload_events() -> list[tuple[str, str, str]] | None:
            said = _events(dev_cluster, namespace, "Workload", name)
            wanted = {("Warning", "MaximumExecutionTimeExceeded",
                       f"The maximum execution time ({LIMIT_S}s) exceeded"),
                      ("Normal", f"EvictedDueTo{REASON}", MESSAGE)}
            return said if wanted <= set(said) else None

        wait_until("Kueue's Events on the Workload", workload_events, 30.0)
        stopped_event = ("Normal", "Stopped", MESSAGE)
        wait_until("the Stopped Event on the Job",
                   lambda: stopped_event in _events(dev_cluster, namespace, "Job", "limited"), 30.0)
    finally:
        remove_queues(dev_cluster, namespace, cq)
