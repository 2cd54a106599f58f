"""Deleting queues and flavors in use: the ``resource-in-use`` finalizer holds them.

A ClusterQueue (1 CPU) with one admitted Job and one waiting Job is deleted: it stays,
Terminating, while the admitted Job runs, admits nothing new, and is gone once that Job
has finished. Its ResourceFlavor, deleted first, stays until that ClusterQueue is gone.
The manager releases the finalizers with the install ServiceAccount's rights.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import NAMESPACE_LABEL, NODE_LABELS, condition

pytestmark = pytest.mark.e2e

RUN_FOR = "15s"  # the admitted Job's pod completes this long after it starts (kwok stage)


def _queues(dev_cluster: DevCluster, namespace: str) -> tuple[str, str]:
    flavor, cq = f"rf-{namespace}", f"cq-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor},
                       "spec": {"nodeLabels": NODE_LABELS}})
    quota = {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "1"}]}
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
                       "spec": {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}},
                                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [quota]}]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cq}})
    return flavor, cq


def _job(dev_cluster: DevCluster, namespace: str, name: str) -> None:
    dev_cluster.apply({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {"suspend": True, "template": {
            "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": RUN_FOR}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}})


def _workload(dev_cluster: DevCluster, namespace: str, job: str) -> dict[str, Any] | None:
    for wl in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        if any(r["kind"] == "Job" and r["name"] == job for r in wl["metadata"].get("ownerReferences") or ()):
            return dict(wl)
    return None


def _has(dev_cluster: DevCluster, namespace: str, job: str, kind: str) -> bool | None:
    """Whether the Job's Workload has condition ``kind`` True; None while there is no Workload."""
    wl = _workload(dev_cluster, namespace, job)
    return None if wl is None else condition(wl, kind)


def _get(dev_cluster: DevCluster, kind: str, name: str) -> dict[str, Any] | None:
    result = dev_cluster.kubectl("get", kind, name, "-o", "json", "--ignore-not-found", check=True)
    return json.loads(result.stdout) if result.stdout.strip() else None


def _terminating(obj: dict[str, Any] | None) -> bool:
    return obj is not None and bool(obj["metadata"].get("deletionTimestamp"))


def _job_done(dev_cluster: DevCluster, namespace: str, name: str) -> bool:
    job = dev_cluster.get_json("job", name, "-n", namespace)
    return any(c["type"] == "Complete" and c["status"] == "True" for c in (job.get("status") or {}).get(
        "conditions") or ())


def test_queue_and_flavor_in_use_stay_until_released(dev_cluster: DevCluster, namespace: str) -> None:
    flavor, cq = _queues(dev_cluster, namespace)
    for kind, name in (("resourceflavor", flavor), ("clusterqueue", cq)):
        obj = _get(dev_cluster, kind, name)
        assert obj is not None and keys.RESOURCE_IN_USE_FINALIZER in obj["metadata"].get("finalizers", ())
    _job(dev_cluster, namespace, "runs")
    wait_until("the first Job admitted", lambda: _has(dev_cluster, namespace, "runs", "Admitted"))
    _job(dev_cluster, namespace, "waits")
    wait_until("the second Job's Workload pending",
               lambda: _has(dev_cluster, namespace, "waits", "QuotaReserved") is False)

    dev_cluster.kubectl("delete", "resourceflavor", flavor, "--wait=false")
    dev_cluster.kubectl("delete", "clusterqueue", cq, "--wait=false")
    # Observed in this order, the queue was Terminating while the Job still ran.
    assert _terminating(_get(dev_cluster, "clusterqueue", cq))
    assert _terminating(_get(dev_cluster, "resourceflavor", flavor))
    assert not _job_done(dev_cluster, namespace, "runs"), f"{RUN_FOR} should outlast the deletion calls"
    wait_until("the ClusterQueue reported Terminating", lambda: any(
        c["type"] == "Active" and c["status"] == "False" and c["reason"] == "Terminating"
        for c in ((_get(dev_cluster, "clusterqueue", cq) or {}).get("status") or {}).get("conditions") or ()))

    wait_until("the first Job finished", lambda: _job_done(dev_cluster, namespace, "runs"), 90.0)
    wait_until("the ClusterQueue gone", lambda: _get(dev_cluster, "clusterqueue", cq) is None, 60.0)
    wait_until("the ResourceFlavor gone", lambda: _get(dev_cluster, "resourceflavor", flavor) is None, 60.0)
    waits = dev_cluster.get_json("job", "waits", "-n", namespace)
    assert waits["spec"]["suspend"] and not (waits.get("status") or {}).get("startTime"), \
        "the terminating ClusterQueue admitted the waiting Job"


def test_a_deleted_namespace_is_gone_and_discovery_is_whole(dev_cluster: DevCluster) -> None:
    """The aggregator reads pykueue's visibility group (/apis, /openapi) as system:aggregator;
    were that refused, discovery would stay incomplete, `kubectl api-resources` would fail
    and the namespace controller would keep every deleted namespace Terminating."""
    resources = dev_cluster.kubectl("api-resources", check=False)
    assert resources.returncode == 0 and not resources.stderr.strip(), resources.stderr
    assert keys.VISIBILITY_GROUP in dev_cluster.kubectl("api-versions").stdout
    name = dev_cluster.namespace()
    dev_cluster.kubectl("create", "configmap", "left-behind", "-n", name)
    dev_cluster.kubectl("delete", "namespace", name, "--wait=false")

    def gone() -> bool:
        return dev_cluster.kubectl("get", "namespace", name, check=False).returncode != 0

    try:
        wait_until(f"namespace {name} deleted", gone, 90.0)
    except pytest.fail.Exception:
        status = dev_cluster.get_json("namespace", name).get("status") or {}
        pytest.fail(f"namespace {name} still there: {json.dumps(status.get('conditions'))}")


def test_a_job_deleted_without_its_workload_frees_the_quota(dev_cluster: DevCluster, namespace: str) -> None:
    """Kueue v0.19.2's FinishOrphanedWorkloads: ``--cascade=orphan`` leaves the Workload
    without an owner; it is finished (OwnerNotFound) and its quota released, so the next
    Job runs."""
    flavor, cq = _queues(dev_cluster, namespace)
    try:
        _orphan_and_next(dev_cluster, namespace)
    finally:
        dev_cluster.kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=false", check=False)
        dev_cluster.kubectl("delete", f"clusterqueue/{cq}", f"resourceflavor/{flavor}", "--wait=false",
                            check=False)


def _orphan_and_next(dev_cluster: DevCluster, namespace: str) -> None:
    _job(dev_cluster, namespace, "orphaned")
    wait_until("the Job admitted", lambda: _has(dev_cluster, namespace, "orphaned", "Admitted"), 60.0)
    name = str((_workload(dev_cluster, namespace, "orphaned") or {})["metadata"]["name"])
    _job(dev_cluster, namespace, "next")
    wait_until("the next Job waiting",
               lambda: _has(dev_cluster, namespace, "next", "QuotaReserved") is False, 60.0)
    dev_cluster.kubectl("delete", "job", "orphaned", "-n", namespace, "--cascade=orphan")

    def finished() -> dict[str, Any] | None:
        wl: dict[str, Any] = dev_cluster.get_json("workloads.kueue.x-k8s.io", name, "-n", namespace)
        return next((c for c in wl["status"].get("conditions") or ()
                     if c["type"] == "Finished" and c["status"] == "True"), None)

    done = wait_until("the orphaned Workload finished", finished, 60.0)
    assert (done["reason"], done["message"]) == ("OwnerNotFound", "The workload's owner no longer exists")
    wait_until("the next Job admitted in the freed quota",
               lambda: _has(dev_cluster, namespace, "next", "Admitted"), 60.0)
