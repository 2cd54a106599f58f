"""TrainJobs (Kubeflow Trainer v2) queued by pykueue and run by the real trainer and JobSet.

The dev cluster runs Kubeflow Trainer with its ``torch-distributed`` ClusterTrainingRuntime
and the JobSet controller. The TrainJob is Kueue's documented one (``tasks/run/trainjobs``:
``pytorch-distributed`` on ``torch-distributed``, two nodes), adapted in its name, queue and
requests (one CPU and 1Gi per node, no GPU: kwok's nodes have none). The trainer makes the
JobSet, the JobSet controller its Job, kube-controller-manager the pods, and kwok completes
them (after a user's own runtime patch sets their run time). The tests write nothing on
pykueue's behalf.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import NODE_LABELS, condition, cq_cpu_usage, queues, workloads_owned_by

pytestmark = pytest.mark.e2e

RESOURCE = "trainjobs.trainer.kubeflow.org"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
TRAINJOB_NAME = "jobset.sigs.k8s.io/jobset-name"
KUEUE_PATCH = "kueue.x-k8s.io/manager"


def trainjob(name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    labels = {keys.QUEUE_NAME: "lq"}
    if priority_class:
        labels[keys.PRIORITY_CLASS] = priority_class
    # The user's own patch: how long kwok lets the training pods run.
    pod = {"metadata": {"annotations": {COMPLETE_AFTER: runtime}}}
    replicated = {"name": "node", "template": {"spec": {"template": pod}}}
    run_time = {"manager": "example.com/e2e",
                "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [replicated]}}}}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "labels": labels},
            "spec": {"runtimeRef": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
                     "trainer": {"numNodes": 2,
                                 "resourcesPerNode": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                     "runtimePatches": [run_time]}}


def _create(dev_cluster: DevCluster, namespace: str, obj: dict[str, Any]) -> None:
    dev_cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(obj))


def _trainjob(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = dev_cluster.get_json(RESOURCE, name, "-n", namespace)
    return obj


def _pods(dev_cluster: DevCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    pods = dev_cluster.get_json("pods", "-n", namespace, "-l", f"{TRAINJOB_NAME}={name}")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _running(dev_cluster: DevCluster, namespace: str, name: str) -> bool:
    pods = _pods(dev_cluster, namespace, name)
    return len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)


def _workload(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    wls = workloads_owned_by(dev_cluster, namespace, "TrainJob", name)
    return wls[0] if wls else {}


def _suspended(obj: dict[str, Any]) -> bool:
    return bool(obj["spec"].get("suspend"))


@pytest.fixture
def three_cpus(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    cq = queues(dev_cluster, namespace, "3", memory="8Gi")
    try:
        yield cq
    finally:
        dev_cluster.kubectl("delete", RESOURCE, "--all", "-n", namespace, "--wait=false", check=False)


def test_a_trainjob_runs_through_its_jobset_and_the_next_waits_suspended(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    _create(dev_cluster, namespace, trainjob("first", runtime="6s"))
    created = _trainjob(dev_cluster, namespace, "first")
    assert any(p.get("manager") == KUEUE_PATCH for p in created["spec"]["runtimePatches"])  # the webhook's
    wait_until("the first TrainJob's two nodes running",
               lambda: _running(dev_cluster, namespace, "first"), 90.0)
    wl = _workload(dev_cluster, namespace, "first")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("node", 2)]
    for pod in _pods(dev_cluster, namespace, "first"):
        assert NODE_LABELS.items() <= (pod["spec"].get("nodeSelector") or {}).items()  # from the admission
    # The JobSet the trainer made runs under the TrainJob's Workload, not one of its own.
    assert workloads_owned_by(dev_cluster, namespace, "JobSet", "first") == []

    _create(dev_cluster, namespace, trainjob("second", runtime="2s"))

    def waits_for_quota() -> bool:
        conditions = (_workload(dev_cluster, namespace, "second").get("status") or {}).get("conditions") or ()
        return any(c["type"] == "QuotaReserved" and c["status"] == "False" for c in conditions)

    wait_until("the second's Workload to wait for quota", waits_for_quota, 60.0)
    assert _suspended(_trainjob(dev_cluster, namespace, "second"))
    assert _pods(dev_cluster, namespace, "second") == []
    for name in ("first", "second"):
        wait_until(f"{name} to complete",
                   lambda n=name: condition(_trainjob(dev_cluster, namespace, n), "Complete"), 150.0)
        wait_until(f"{name}'s Workload Finished",
                   lambda n=name: condition(_workload(dev_cluster, namespace, n), "Finished"), 60.0)
    wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, three_cpus) == "0", 30.0)


def test_a_higher_priority_trainjob_preempts_a_running_one_and_both_complete(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    high = f"high-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
                       "metadata": {"name": high}, "value": 1000})
    try:
        dev_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", three_cpus, "--type=merge", "-p",
                            '{"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}')
        _create(dev_cluster, namespace, trainjob("low", runtime="8s"))
        wait_until("the low-priority TrainJob running", lambda: _running(dev_cluster, namespace, "low"), 90.0)
        _create(dev_cluster, namespace, trainjob("urgent", runtime="2s", priority_class=high))

        def preempted() -> bool:
            wl = _workload(dev_cluster, namespace, "low")
            evicted = any(c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == "Preempted"
                          for c in (wl.get("status") or {}).get("conditions") or ())
            return evicted and _suspended(_trainjob(dev_cluster, namespace, "low"))

        wait_until("the low-priority TrainJob preempted and suspended again", preempted, 60.0)
        wait_until("the urgent TrainJob to complete",
                   lambda: condition(_trainjob(dev_cluster, namespace, "urgent"), "Complete"), 150.0)
        wait_until("the preempted TrainJob to run again and complete",
                   lambda: condition(_trainjob(dev_cluster, namespace, "low"), "Complete"), 180.0)
        wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, three_cpus) == "0", 30.0)
    finally:
        dev_cluster.kubectl("delete", "workloadpriorityclasses.kueue.x-k8s.io", high, "--wait=false",
                            check=False)
