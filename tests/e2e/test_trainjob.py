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

from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import (
    OperatorKind,
    check_a_higher_priority_one_preempts,
    check_the_second_waits_until_the_first_is_done,
    kind_queues,
    workloads_owned_by,
)

pytestmark = pytest.mark.e2e

RESOURCE = "trainjobs.trainer.kubeflow.org"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
TRAINJOB_NAME = "jobset.sigs.k8s.io/jobset-name"
KUEUE_PATCH = "kueue.x-k8s.io/manager"
TRAINJOB = OperatorKind(RESOURCE, "TrainJob", "Complete", lambda tj: tj["spec"].get("suspend") is True,
                        TRAINJOB_NAME, pod_count=2)


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


@pytest.fixture
def three_cpus(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """Room for one trainjob (3 CPUs) on the labelled flavor; the ClusterQueue's name."""
    with kind_queues(dev_cluster, namespace, TRAINJOB, "3", memory="8Gi") as cq:
        yield cq


def test_the_webhook_adds_kueues_runtime_patch_and_the_jobset_has_no_workload(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    TRAINJOB.create(dev_cluster, namespace, trainjob("patched", runtime="1s"))
    created = TRAINJOB.get(dev_cluster, namespace, "patched")
    assert any(p.get("manager") == KUEUE_PATCH for p in created["spec"]["runtimePatches"])
    wait_until("the TrainJob's JobSet", lambda: dev_cluster.get_json(
        "jobsets.jobset.x-k8s.io", "-n", namespace)["items"], 60.0)
    # The JobSet the trainer made runs under the TrainJob's Workload, not one of its own.
    assert workloads_owned_by(dev_cluster, namespace, "JobSet", "patched") == []


def test_a_trainjob_runs_through_its_jobset_and_the_next_waits_suspended(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    check_the_second_waits_until_the_first_is_done(
        dev_cluster, namespace, three_cpus, TRAINJOB, trainjob, [("node", 2)])


def test_a_higher_priority_trainjob_preempts_a_running_one_and_both_complete(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    check_a_higher_priority_one_preempts(dev_cluster, namespace, three_cpus, TRAINJOB, trainjob)
