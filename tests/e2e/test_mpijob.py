"""MPIJobs queued by pykueue and run by the real MPI operator.

The dev cluster runs the MPI operator (``devcluster.operators``): it makes the workers' pods
and the launcher's Job, and reports the MPIJob ``Succeeded`` once the launcher completed.
kwok plays the kubelet: the launcher completes after its ``pod-complete`` delay (its
``mpirun``); the workers (``sshd``) run until the operator cleans them up. Kueue's
``jobs/sample-mpijob.yaml`` is applied with ``kubectl`` as its documentation says, adapted
only in its name, namespace, queue and the launcher's run time.
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

EXAMPLE = Path(__file__).parent / "manifests" / "kueue-examples" / "sample-mpijob.yaml"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
JOB_NAME = "training.kubeflow.org/job-name"
RESOURCE = "mpijobs.kubeflow.org"


def sample(name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    """Kueue's sample MPIJob (a launcher and two workers, 1 CPU each) as ``name`` in queue
    ``lq``; its launcher completes after ``runtime``."""
    (doc,) = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    job = copy.deepcopy(doc)
    job["metadata"]["name"] = name
    job["metadata"]["labels"][keys.QUEUE_NAME] = "lq"
    if priority_class:
        job["metadata"]["labels"][keys.PRIORITY_CLASS] = priority_class
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    launcher.setdefault("metadata", {}).setdefault("annotations", {})[COMPLETE_AFTER] = runtime
    return job


def _create(dev_cluster: DevCluster, namespace: str, job: dict[str, Any]) -> None:
    dev_cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(job))


def _job(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = dev_cluster.get_json(RESOURCE, name, "-n", namespace)
    return obj


def _pods(dev_cluster: DevCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    pods = dev_cluster.get_json("pods", "-n", namespace, "-l", f"{JOB_NAME}={name}")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _running(dev_cluster: DevCluster, namespace: str, name: str) -> bool:
    pods = _pods(dev_cluster, namespace, name)
    return len(pods) == 3 and all(p["status"].get("phase") == "Running" for p in pods)


def _workload(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    wls = workloads_owned_by(dev_cluster, namespace, "MPIJob", name)
    return wls[0] if wls else {}


def _suspended(job: dict[str, Any]) -> bool:
    return bool((job["spec"].get("runPolicy") or {}).get("suspend"))


@pytest.fixture
def three_cpus(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    cq = queues(dev_cluster, namespace, "3", memory="8Gi")
    try:
        yield cq
    finally:
        dev_cluster.kubectl("delete", RESOURCE, "--all", "-n", namespace, "--wait=false", check=False)


def test_the_sample_runs_on_the_flavors_nodes_and_the_next_waits_suspended(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    _create(dev_cluster, namespace, sample("first", runtime="6s"))
    wait_until("the first MPIJob's launcher and workers running",
               lambda: _running(dev_cluster, namespace, "first"), 90.0)
    wl = _workload(dev_cluster, namespace, "first")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("launcher", 1), ("worker", 2)]
    for pod in _pods(dev_cluster, namespace, "first"):
        assert NODE_LABELS.items() <= (pod["spec"].get("nodeSelector") or {}).items()  # injected at start

    _create(dev_cluster, namespace, sample("second", runtime="2s"))

    def waits_for_quota() -> bool:
        conditions = (_workload(dev_cluster, namespace, "second").get("status") or {}).get("conditions") or ()
        return any(c["type"] == "QuotaReserved" and c["status"] == "False" for c in conditions)

    wait_until("the second's Workload to wait for quota", waits_for_quota, 60.0)
    assert _suspended(_job(dev_cluster, namespace, "second"))
    assert _pods(dev_cluster, namespace, "second") == []
    for name in ("first", "second"):
        wait_until(f"{name} to succeed",
                   lambda n=name: condition(_job(dev_cluster, namespace, n), "Succeeded"), 150.0)
        wait_until(f"{name}'s Workload Finished",
                   lambda n=name: condition(_workload(dev_cluster, namespace, n), "Finished"), 60.0)
    wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, three_cpus) == "0", 30.0)


def test_a_higher_priority_mpijob_preempts_a_running_one_and_both_succeed(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    high = f"high-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
                       "metadata": {"name": high}, "value": 1000})
    try:
        dev_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", three_cpus, "--type=merge", "-p",
                            '{"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}')
        _create(dev_cluster, namespace, sample("low", runtime="8s"))
        wait_until("the low-priority MPIJob running", lambda: _running(dev_cluster, namespace, "low"), 90.0)
        _create(dev_cluster, namespace, sample("urgent", runtime="2s", priority_class=high))

        def preempted() -> bool:
            wl = _workload(dev_cluster, namespace, "low")
            evicted = any(c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == "Preempted"
                          for c in (wl.get("status") or {}).get("conditions") or ())
            return evicted and _suspended(_job(dev_cluster, namespace, "low"))

        wait_until("the low-priority MPIJob preempted and suspended again", preempted, 60.0)
        wait_until("the urgent MPIJob to succeed",
                   lambda: condition(_job(dev_cluster, namespace, "urgent"), "Succeeded"), 150.0)
        wait_until("the preempted MPIJob to run again and succeed",
                   lambda: condition(_job(dev_cluster, namespace, "low"), "Succeeded"), 180.0)
        wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, three_cpus) == "0", 30.0)
    finally:
        dev_cluster.kubectl("delete", "workloadpriorityclasses.kueue.x-k8s.io", high, "--wait=false",
                            check=False)
