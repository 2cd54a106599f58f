"""Admission checks in the running system: a Job waits at QuotaReserved until its check's
controller says Ready, then starts; Rejected deactivates the Workload and frees the quota.

There is no check controller in the dev cluster, so the test plays that external component:
it marks the AdmissionCheck Active (until then its ClusterQueue admits nothing, as in Kueue)
and writes the check's state into the Workload status with ``kubectl patch``, as such a
controller does. Everything else (reservation, admission, starting the Job) is pykueue's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import FLAVOR, NAMESPACE_LABEL, condition, remove_queues, workloads_owned_by

pytestmark = pytest.mark.e2e

CONTROLLER = "example.com/manual-approval"


@pytest.fixture
def checked_queue(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """LocalQueue ``lq`` of a 2-CPU ClusterQueue with one admission check; yields the check."""
    check, cq = f"approval-{uuid.uuid4().hex[:6]}", f"cq-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": check},
                       "spec": {"controllerName": CONTROLLER}})
    mark_check_active(dev_cluster, check)
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor",
                       "metadata": {"name": FLAVOR}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
                       "spec": {
        "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}},
        "admissionChecksStrategy": {"admissionChecks": [{"name": check}]},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cq}})
    try:
        yield check
    finally:
        remove_queues(dev_cluster, namespace, cq, ("admissionchecks.kueue.x-k8s.io", check))


def mark_check_active(dev_cluster: DevCluster, check: str) -> None:
    """What the check's controller reports once it serves the check."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    active = {"type": "Active", "status": "True", "reason": "Active",
              "message": "served by the e2e controller", "lastTransitionTime": now}
    dev_cluster.kubectl("patch", "admissionchecks.kueue.x-k8s.io", check, "--subresource=status",
                        "--type=merge", "-p", json.dumps({"status": {"conditions": [active]}}))


def _job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}]}}}}


def _workload(dev_cluster: DevCluster, namespace: str, job: str) -> dict[str, Any] | None:
    found = workloads_owned_by(dev_cluster, namespace, "Job", job)
    return found[0] if found else None


def _check_state(wl: dict[str, Any], check: str) -> str | None:
    return next((c.get("state") for c in (wl.get("status") or {}).get("admissionChecks") or ()
                 if c.get("name") == check), None)


def _set_state(dev_cluster: DevCluster, namespace: str, wl: dict[str, Any], check: str, state: str) -> None:
    """What the check's controller writes."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entries = [dict(c, state=state, message=f"set to {state} by the e2e controller", lastTransitionTime=now)
               if c.get("name") == check else c for c in wl["status"]["admissionChecks"]]
    dev_cluster.kubectl("patch", "workloads.kueue.x-k8s.io", wl["metadata"]["name"], "-n", namespace,
                        "--subresource=status", "--type=merge",
                        "-p", json.dumps({"status": {"admissionChecks": entries}}))


def test_a_job_starts_only_once_its_check_is_ready(dev_cluster: DevCluster, namespace: str,
                                                   checked_queue: str) -> None:
    dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(_job("checked")))

    def reserved() -> dict[str, Any] | None:
        wl = _workload(dev_cluster, namespace, "checked")
        if wl is None or not condition(wl, "QuotaReserved"):
            return None
        return wl if _check_state(wl, checked_queue) == "Pending" else None

    wl = wait_until("quota reserved, the check pending", reserved, 60.0)
    assert not condition(wl, "Admitted")
    assert dev_cluster.get_json("job", "checked", "-n", namespace)["spec"]["suspend"] is True

    _set_state(dev_cluster, namespace, wl, checked_queue, "Ready")

    def started() -> bool:
        current = _workload(dev_cluster, namespace, "checked") or {}
        job = dev_cluster.get_json("job", "checked", "-n", namespace)
        return condition(current, "Admitted") and job["spec"].get("suspend") is False

    wait_until("the Workload admitted and the Job started", started, 60.0)
    assert _check_state(_workload(dev_cluster, namespace, "checked") or {}, checked_queue) == "Ready"


def test_a_rejected_check_deactivates_and_frees_the_quota(dev_cluster: DevCluster, namespace: str,
                                                          checked_queue: str) -> None:
    dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(_job("refused")))
    def reserved(job: str) -> dict[str, Any] | None:
        wl = _workload(dev_cluster, namespace, job)
        return wl if wl is not None and condition(wl, "QuotaReserved") else None

    wl = wait_until("quota reserved for the first Job", lambda: reserved("refused"), 60.0)
    dev_cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(_job("next")))
    _set_state(dev_cluster, namespace, wl, checked_queue, "Rejected")

    def deactivated() -> bool:
        current = _workload(dev_cluster, namespace, "refused") or {}
        return current.get("spec", {}).get("active") is False and not condition(current, "QuotaReserved")

    wait_until("the rejected Workload deactivated, its quota released", deactivated, 60.0)
    wait_until("the next Job's Workload to reserve the freed quota", lambda: reserved("next"), 60.0)
