"""PyTorchJobs queued by pykueue and run by the real Kubeflow training operator.

The dev cluster runs the training operator (``devcluster.operators``); kwok completes its
pods after their ``pod-complete`` delay, and the operator then reports the job
``Succeeded``. The test only submits PyTorchJobs and reads what happens.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import NODE_LABELS, condition, cq_cpu_usage, queues, workloads_owned_by

pytestmark = pytest.mark.e2e

KWOK_COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"


def _ptj(namespace: str, name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    """Master 1 + Worker 1, 1 CPU each, as a user writes it (no suspend: the webhook sets it)."""
    def replica() -> dict[str, Any]:
        return {"replicas": 1, "restartPolicy": "OnFailure", "template": {
            "metadata": {"annotations": {KWOK_COMPLETE_DELAY: runtime}},
            "spec": {"containers": [{"name": "pytorch", "image": "pytorch",
                                     "resources": {"requests": {"cpu": "1"}}}]}}}

    labels = {keys.QUEUE_NAME: "lq"}
    if priority_class:
        labels[keys.PRIORITY_CLASS] = priority_class
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"pytorchReplicaSpecs": {"Master": replica(), "Worker": replica()}}}


def _job(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = dev_cluster.get_json("pytorchjobs.kubeflow.org", name, "-n", namespace)
    return obj


def _pods(dev_cluster: DevCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    """The live pods the operator made for the job."""
    def owned(pod: dict[str, Any]) -> bool:
        refs = pod["metadata"].get("ownerReferences") or ()
        return any(r["kind"] == "PyTorchJob" and r["name"] == name for r in refs)

    return [p for p in dev_cluster.get_json("pods", "-n", namespace)["items"]
            if owned(p) and not p["metadata"].get("deletionTimestamp")]


def _workload(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    wls = workloads_owned_by(dev_cluster, namespace, "PyTorchJob", name)
    return wls[0] if wls else {}


def _running(dev_cluster: DevCluster, namespace: str, name: str) -> bool:
    pods = _pods(dev_cluster, namespace, name)
    return len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)


def test_the_second_waits_suspended_without_pods_until_the_first_succeeds(
        dev_cluster: DevCluster, namespace: str) -> None:
    cq = queues(dev_cluster, namespace, "2")
    dev_cluster.apply(_ptj(namespace, "first", runtime="8s"))
    wait_until("the first PyTorchJob's pods running", lambda: _running(dev_cluster, namespace, "first"), 60.0)
    dev_cluster.apply(_ptj(namespace, "second", runtime="2s"))
    def waits_for_quota() -> bool:
        conditions = (_workload(dev_cluster, namespace, "second").get("status") or {}).get("conditions") or ()
        return any(c["type"] == "QuotaReserved" and c["status"] == "False" for c in conditions)

    wait_until("the second's Workload to wait for quota", waits_for_quota, 60.0)
    second = _job(dev_cluster, namespace, "second")
    assert second["spec"]["runPolicy"]["suspend"] is True
    assert _pods(dev_cluster, namespace, "second") == []
    for pod in _pods(dev_cluster, namespace, "first"):
        assert NODE_LABELS.items() <= (pod["spec"].get("nodeSelector") or {}).items()  # injected at start

    wait_until("the first to succeed",
               lambda: condition(_job(dev_cluster, namespace, "first"), "Succeeded"), 90.0)
    wait_until("the second to succeed after it",
               lambda: condition(_job(dev_cluster, namespace, "second"), "Succeeded"), 90.0)
    for name in ("first", "second"):
        wait_until(f"{name}'s Workload Finished",
                   lambda n=name: condition(_workload(dev_cluster, namespace, n), "Finished"), 60.0)
    wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "0", 30.0)


def test_a_higher_priority_pytorchjob_preempts_a_running_one_and_both_end(
        dev_cluster: DevCluster, namespace: str) -> None:
    high = f"high-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
                       "metadata": {"name": high}, "value": 1000})
    try:
        cq = queues(dev_cluster, namespace, "2")
        dev_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", cq, "--type=merge", "-p",
                            '{"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}')
        dev_cluster.apply(_ptj(namespace, "low", runtime="6s"))
        wait_until("the low-priority job's pods running",
                   lambda: _running(dev_cluster, namespace, "low"), 60.0)
        dev_cluster.apply(_ptj(namespace, "urgent", runtime="2s", priority_class=high))

        def preempted() -> bool:
            wl = _workload(dev_cluster, namespace, "low")
            evicted = any(c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == "Preempted"
                          for c in (wl.get("status") or {}).get("conditions") or ())
            return evicted and _job(dev_cluster, namespace, "low")["spec"]["runPolicy"].get("suspend") is True

        wait_until("the low-priority job preempted and suspended again", preempted, 60.0)
        # The operator deletes the suspended job's pods; only then does the urgent one run.
        wait_until("the urgent job to succeed",
                   lambda: condition(_job(dev_cluster, namespace, "urgent"), "Succeeded"), 120.0)
        wait_until("the preempted job to run again and succeed",
                   lambda: condition(_job(dev_cluster, namespace, "low"), "Succeeded"), 120.0)
        wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "0", 30.0)
    finally:
        dev_cluster.kubectl("delete", "workloadpriorityclasses.kueue.x-k8s.io", high, "--wait=false",
                            check=False)
