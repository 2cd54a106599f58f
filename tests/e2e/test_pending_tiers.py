"""KEP-10852's tiered pending reasons on a live cluster, set up with applies only.

A ClusterQueue of 1 CPU runs one Job; a second Job waits (WaitingForQuota); a Workload with
``spec.active: false`` is Deactivated; one naming a missing LocalQueue is Misconfigured; one
in a stopped ClusterQueue is Suspended; one with an admission gate is AdmissionGated until the
gate is cleared, then waits for quota. In a third queue one asks for more than its quota
(ExceedsMaxQuota) and one for a resource the queue does not cover (NoMatchingFlavor). The API's
QuotaReserved conditions, the manager's unadmitted-workloads metrics, the visibility API and
``pykueue explain`` (text and JSON) must all say so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import REPO, DevCluster, wait_until
from .test_queueing import _job, _queues, _workload_of
from .test_quota_end_to_end import VISIBILITY, Samples, _metric, _metrics_url, _scrape

pytestmark = pytest.mark.e2e


def _workload(namespace: str, name: str, queue: str, active: bool = True,
              annotations: dict[str, str] | None = None,
              requests: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": keys.API_VERSION, "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
            "spec": {"queueName": queue, "active": active, "podSets": [{
                "name": "main", "count": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "main", "image": "busybox",
                     "resources": {"requests": requests or {"cpu": "1"}}}]}}}]}}


def _other_queue(dev_cluster: DevCluster, namespace: str) -> str:
    cq = f"cq-other-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
                       "spec": {"namespaceSelector": {}, "resourceGroups": [{
                           "coveredResources": ["cpu"], "flavors": [{"name": "on-demand", "resources": [
                               {"name": "cpu", "nominalQuota": "2"}]}]}]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "lq-other", "namespace": namespace},
                       "spec": {"clusterQueue": cq}})
    return cq


def _explain(dev_cluster: DevCluster, namespace: str, target: str, *flags: str) -> str:
    result = subprocess.run([sys.executable, "-m", "pykueue", "explain", "-n", namespace, target,
                             "--kubeconfig", str(dev_cluster.kubeconfig), *flags],
                            cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _explained(dev_cluster: DevCluster, namespace: str, target: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_explain(dev_cluster, namespace, target, "--json"))
    return data


def _conditions(wl: dict[str, Any] | None) -> dict[str, tuple[str, str, str]]:
    conds = ((wl or {}).get("status") or {}).get("conditions") or ()
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in conds}


def _quota_reserved(dev_cluster: DevCluster, namespace: str, name: str) -> tuple[str, str, str] | None:
    wl = dev_cluster.get_json("workloads.kueue.x-k8s.io", name, "-n", namespace)
    return _conditions(wl).get("QuotaReserved")


def _stopped_queue(dev_cluster: DevCluster, namespace: str) -> str:
    cq = f"cq-stopped-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
                       "spec": {"namespaceSelector": {}, "stopPolicy": "Hold", "resourceGroups": [{
                           "coveredResources": ["cpu"], "flavors": [{"name": "on-demand", "resources": [
                               {"name": "cpu", "nominalQuota": "4"}]}]}]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "lq-stopped", "namespace": namespace},
                       "spec": {"clusterQueue": cq}})
    return cq


def _reason_is(dev_cluster: DevCluster, namespace: str, name: str,
               reason: str) -> tuple[str, str, str] | None:
    cond = _quota_reserved(dev_cluster, namespace, name)
    return cond if cond is not None and cond[:2] == ("False", reason) else None


def _admitted(dev_cluster: DevCluster, namespace: str, job: str) -> bool:
    return _conditions(_workload_of(dev_cluster, namespace, job)).get("Admitted", ("",))[0] == "True"


def test_pending_workloads_report_their_tier(dev_cluster: DevCluster, namespace: str,
                                            metrics_token: str) -> None:
    url = _metrics_url()
    cq = _queues(dev_cluster, namespace, "1")
    stopped = _stopped_queue(dev_cluster, namespace)
    _job(dev_cluster, namespace, "runs", "120s")
    wait_until("the first Job admitted", lambda: _admitted(dev_cluster, namespace, "runs"), 60.0)
    _job(dev_cluster, namespace, "waits", "5s")
    waits = wait_until("the second Job's Workload",
                       lambda: _workload_of(dev_cluster, namespace, "waits"), 60.0)
    name = waits["metadata"]["name"]
    # The Workloads below queue behind it: created in a later second (queues order by it).
    created = datetime.fromisoformat(waits["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    wait_until("a second after the Job's Workload was created",
               lambda: datetime.now(UTC) >= created + timedelta(seconds=1), 5.0)
    for name_, queue, active in (("parked", "lq", False), ("lost", "missing", True),
                                 ("held", "lq-stopped", True)):
        dev_cluster.apply(_workload(namespace, name_, queue, active))
    gate = {keys.ADMISSION_GATED_BY: "example.com/gate"}
    dev_cluster.apply(_workload(namespace, "gated", "lq", annotations=gate))
    _, reason, message = wait_until("WaitingForQuota on the second Job's Workload",
                                    lambda: _reason_is(dev_cluster, namespace, name, "WaitingForQuota"), 60.0)
    assert "insufficient unused quota for cpu" in message
    waits = dev_cluster.get_json("workloads.kueue.x-k8s.io", name, "-n", namespace)
    assert _conditions(waits)["Admitted"] == ("False", "NoReservation", "The workload has no reservation")

    for wl, tier in (("parked", "Deactivated"), ("lost", "Misconfigured"), ("held", "Suspended")):
        wait_until(f"{tier} on Workload {wl}",
                   lambda w=wl, t=tier: _reason_is(dev_cluster, namespace, w, t), 60.0)
    assert _reason_is(dev_cluster, namespace, "lost", "Misconfigured") == (
        "False", "Misconfigured", "LocalQueue missing doesn't exist")
    assert wait_until("AdmissionGated on Workload gated",
                      lambda: _reason_is(dev_cluster, namespace, "gated", "AdmissionGated"), 60.0)[2] == (
        "Admission is gated by: example.com/gate")
    gated = _explained(dev_cluster, namespace, "workload/gated")
    assert (gated["reason"], gated["message"]) == (
        "AdmissionGated", "Admission is gated by: example.com/gate")
    assert "Status:        Pending (AdmissionGated)" in _explain(dev_cluster, namespace, "workload/gated")
    dev_cluster.apply(_workload(namespace, "gated", "lq"))  # the gate is cleared: it queues for quota
    wait_until("WaitingForQuota on Workload gated",
               lambda: _reason_is(dev_cluster, namespace, "gated", "WaitingForQuota"), 60.0)

    # Two more tiers, in a queue of their own.
    other = _other_queue(dev_cluster, namespace)
    dev_cluster.apply(_workload(namespace, "huge", "lq-other", requests={"cpu": "5"}))
    dev_cluster.apply(_workload(namespace, "odd", "lq-other", requests={"cpu": "1", "example.com/fpga": "1"}))
    for wl, tier in (("huge", "ExceedsMaxQuota"), ("odd", "NoMatchingFlavor")):
        wait_until(f"{tier} on Workload {wl}",
                   lambda w=wl, t=tier: _reason_is(dev_cluster, namespace, w, t), 60.0)

    # explain says the same as the API, in text and in JSON, from the core over a snapshot.
    observed = {wl: _quota_reserved(dev_cluster, namespace, wl) for wl in
                (name, "parked", "lost", "held", "huge", "odd")}
    for wl, tier in ((name, "WaitingForQuota"), ("parked", "Deactivated"), ("lost", "Misconfigured"),
                     ("held", "Suspended"), ("huge", "ExceedsMaxQuota"), ("odd", "NoMatchingFlavor")):
        entry = _explained(dev_cluster, namespace, f"workload/{wl}")
        assert set(entry) >= {"workload", "status", "reason", "message", "clusterQueue", "position",
                              "podSets"}
        assert (entry["workload"], entry["status"], entry["reason"]) == (f"{namespace}/{wl}", "Pending", tier)
        assert entry["message"] == observed[wl][2], wl  # type: ignore[index]
        assert f"Status:        Pending ({tier})" in _explain(dev_cluster, namespace, f"workload/{wl}")
    by_job = _explained(dev_cluster, namespace, "job/waits")
    assert (by_job["workload"], by_job["clusterQueue"], by_job["position"]) == (f"{namespace}/{name}", cq, 1)
    cpu = by_job["podSets"]["main"]["flavors"]["on-demand"]["cpu"]
    assert (cpu["requested"], cpu["nominal"], cpu["used"], cpu["free"], cpu["needed"]) == (
        "1", "1", "1", "0", "1")
    huge = _explained(dev_cluster, namespace, "workload/huge")
    huge_cpu = huge["podSets"]["main"]["flavors"]["on-demand"]["cpu"]
    assert (huge["clusterQueue"], huge_cpu["free"], huge_cpu["needed"]) == (other, "2", "3")

    # The metrics, per ClusterQueue and per LocalQueue.
    wanted = {(cq, "WaitingForQuota"): 2.0, (cq, "Deactivated"): 1.0, (stopped, "Suspended"): 1.0,
              (other, "ExceedsMaxQuota"): 1.0, (other, "NoMatchingFlavor"): 1.0}

    def scraped() -> Samples | None:
        samples = _scrape(url, metrics_token)
        return samples if all(
            _metric(samples, "kueue_unadmitted_workloads", cluster_queue=q, reason="NoReservation",
                    underlying_cause=cause) == n for (q, cause), n in wanted.items()) else None

    samples = wait_until("the unadmitted-workloads metrics", scraped, 30.0)
    lq = {"name": "lq", "namespace": namespace, "cluster_queue": cq, "reason": "NoReservation"}
    for cause, count in (("WaitingForQuota", 2), ("Deactivated", 1)):
        assert _metric(samples, "kueue_local_queue_unadmitted_workloads", underlying_cause=cause,
                       **lq) == count
    # The missing LocalQueue names no ClusterQueue: Kueue counts its workload in neither family.
    assert not [labels for (metric, labels) in samples if "unadmitted" in metric
                and ("underlying_cause", "Misconfigured") in labels]

    # The visibility API's entry says why it waits.
    summary = json.loads(dev_cluster.kubectl(
        "get", "--raw", f"{VISIBILITY}/clusterqueues/{cq}/pendingworkloads").stdout)
    items = {i["metadata"]["name"]: i for i in summary["items"]}
    assert set(items) == {name, "gated"}
    assert (items[name]["reason"], items[name]["message"]) == (reason, message)
