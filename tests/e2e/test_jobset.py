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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys

from .conftest import DevCluster
from .jobs_common import (
    OperatorKind,
    check_a_higher_priority_one_preempts,
    check_the_second_waits_until_the_first_is_done,
    kind_queues,
)

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).parent / "manifests" / "kueue-examples" / "sample-jobset.yaml"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
RESOURCE = "jobsets.jobset.x-k8s.io"
JOBSET = OperatorKind(RESOURCE, "JobSet", "Completed", lambda js: js["spec"].get("suspend") is True,
                      JOBSET_NAME, pod_count=2)


def sample(name: str, runtime: str, priority_class: str | None = None) -> dict[str, Any]:
    """Kueue's sample JobSet (a worker of 1 CPU, a driver of 2) as ``name`` in queue ``lq``,
    its containers' sleep played by kwok."""
    (doc,) = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    jobset = copy.deepcopy(doc)
    meta = jobset["metadata"]
    del meta["generateName"]
    meta["name"] = name
    meta["labels"][keys.QUEUE_NAME] = "lq"
    if priority_class:
        meta["labels"][keys.PRIORITY_CLASS] = priority_class
    for rj in jobset["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]
        pod.setdefault("metadata", {}).setdefault("annotations", {})[COMPLETE_AFTER] = runtime
    return jobset


@pytest.fixture
def three_cpus(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """Room for one jobset (3 CPUs) on the labelled flavor; the ClusterQueue's name."""
    with kind_queues(dev_cluster, namespace, JOBSET, "3", memory="8Gi") as cq:
        yield cq


def test_the_sample_runs_on_the_flavors_nodes_and_the_next_waits_suspended(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    check_the_second_waits_until_the_first_is_done(
        dev_cluster, namespace, three_cpus, JOBSET, sample, [("workers", 1), ("driver", 1)])


def test_a_higher_priority_jobset_preempts_a_running_one_and_both_complete(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    check_a_higher_priority_one_preempts(dev_cluster, namespace, three_cpus, JOBSET, sample)
