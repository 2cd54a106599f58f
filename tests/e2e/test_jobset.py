"""JobSets queued by pykueue and run by the real JobSet controller.

The dev cluster runs the JobSet operator (``devcluster.operators``); its Jobs' pods are made
by kube-controller-manager's Job controller and completed by kwok after their
``pod-complete`` delay, and the JobSet controller then reports the JobSet ``Completed``.
Kueue's ``jobs/sample-jobset.yaml`` is applied with ``kubectl create`` as its documentation
says, adapted only in its namespace, queue and sleep (kwok's delay). The tests write
nothing on pykueue's behalf.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import NODE_LABELS, condition, cq_cpu_usage, queues, workloads_owned_by

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).parent / "manifests" / "kueue-examples" / "sample-jobset.yaml"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
RESOURCE = "jobsets.jobset.x-k8s.io"


def sample(name: str, runtime: str, queue: str = "lq", priority_class: str | None = None) -> dict[str, Any]:
    """Kueue's sample JobSet (a worker of 1 CPU, a driver of 2) under ``name`` in ``queue``,
    its containers' sleep played by kwok."""
    (doc,) = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    jobset = copy.deepcopy(doc)
    meta = jobset["metadata"]
    del meta["generateName"]
    meta["name"] = name
    meta["labels"][keys.QUEUE_NAME] = queue
    if priority_class:
        meta["labels"][keys.PRIORITY_CLASS] = priority_class
    for rj in jobset["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]
        pod.setdefault("metadata", {}).setdefault("annotations", {})[COMPLETE_AFTER] = runtime
    return jobset


def _create(dev_cluster: DevCluster, namespace: str, jobset: dict[str, Any]) -> None:
    dev_cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(jobset))


def _jobset(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = dev_cluster.get_json(RESOURCE, name, "-n", namespace)
    return obj


def _pods(dev_cluster: DevCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    pods = dev_cluster.get_json("pods", "-n", namespace, "-l", f"{JOBSET_NAME}={name}")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _running(dev_cluster: DevCluster, namespace: str, name: str, count: int) -> bool:
    pods = _pods(dev_cluster, namespace, name)
    return len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods)


def _workload(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    wls = workloads_owned_by(dev_cluster, namespace, "JobSet", name)
    return wls[0] if wls else {}


def _waits_for_quota(dev_cluster: DevCluster, namespace: str, name: str) -> bool:
    conditions = (_workload(dev_cluster, namespace, name).get("status") or {}).get("conditions") or ()
    return any(c["type"] == "QuotaReserved" and c["status"] == "False" for c in conditions)


@pytest.fixture
def three_cpus(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """Room for one sample JobSet (3 CPUs) on the labelled flavor; the ClusterQueue's name."""
    cq = queues(dev_cluster, namespace, "3", memory="8Gi")
    try:
        yield cq
    finally:
        dev_cluster.kubectl("delete", RESOURCE, "--all", "-n", namespace, "--wait=false", check=False)


def test_the_sample_runs_on_the_flavors_nodes_and_the_next_waits_suspended(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    _create(dev_cluster, namespace, sample("first", runtime="6s"))
    wait_until("the first JobSet's two pods running",
               lambda: _running(dev_cluster, namespace, "first", 2), 90.0)
    wl = _workload(dev_cluster, namespace, "first")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("workers", 1), ("driver", 1)]
    for pod in _pods(dev_cluster, namespace, "first"):
        assert NODE_LABELS.items() <= (pod["spec"].get("nodeSelector") or {}).items()  # injected at start

    _create(dev_cluster, namespace, sample("second", runtime="2s"))
    wait_until("the second's Workload to wait for quota",
               lambda: _waits_for_quota(dev_cluster, namespace, "second"), 60.0)
    assert _jobset(dev_cluster, namespace, "second")["spec"]["suspend"] is True
    assert _pods(dev_cluster, namespace, "second") == []

    for name in ("first", "second"):
        wait_until(f"{name} to complete",
                   lambda n=name: condition(_jobset(dev_cluster, namespace, n), "Completed"), 120.0)
        wait_until(f"{name}'s Workload Finished",
                   lambda n=name: condition(_workload(dev_cluster, namespace, n), "Finished"), 60.0)
    wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, three_cpus) == "0", 30.0)


def test_a_higher_priority_jobset_preempts_a_running_one_and_both_complete(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    high = f"high-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
                       "metadata": {"name": high}, "value": 1000})
    try:
        dev_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", three_cpus, "--type=merge", "-p",
                            '{"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}')
        _create(dev_cluster, namespace, sample("low", runtime="8s"))
        wait_until("the low-priority JobSet's pods running",
                   lambda: _running(dev_cluster, namespace, "low", 2), 90.0)
        _create(dev_cluster, namespace, sample("urgent", runtime="2s", priority_class=high))

        def preempted() -> bool:
            wl = _workload(dev_cluster, namespace, "low")
            evicted = any(c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == "Preempted"
                          for c in (wl.get("status") or {}).get("conditions") or ())
            return evicted and _jobset(dev_cluster, namespace, "low")["spec"].get("suspend") is True

        wait_until("the low-priority JobSet preempted and suspended again", preempted, 60.0)
        wait_until("the urgent JobSet to complete",
                   lambda: condition(_jobset(dev_cluster, namespace, "urgent"), "Completed"), 120.0)
        wait_until("the preempted JobSet to run again and complete",
                   lambda: condition(_jobset(dev_cluster, namespace, "low"), "Completed"), 150.0)
        wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, three_cpus) == "0", 30.0)
    finally:
        dev_cluster.kubectl("delete", "workloadpriorityclasses.kueue.x-k8s.io", high, "--wait=false",
                            check=False)
