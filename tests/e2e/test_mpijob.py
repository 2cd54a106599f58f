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

EXAMPLE = Path(__file__).parent / "manifests" / "kueue-examples" / "sample-mpijob.yaml"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
JOB_NAME = "training.kubeflow.org/job-name"
RESOURCE = "mpijobs.kubeflow.org"
MPIJOB = OperatorKind(RESOURCE, "MPIJob", "Succeeded",
                      lambda job: (job["spec"].get("runPolicy") or {}).get("suspend") is True,
                      JOB_NAME, pod_count=3)


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


@pytest.fixture
def three_cpus(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """Room for one mpijob (3 CPUs) on the labelled flavor; the ClusterQueue's name."""
    with kind_queues(dev_cluster, namespace, MPIJOB, "3", memory="8Gi") as cq:
        yield cq


def test_the_sample_runs_on_the_flavors_nodes_and_the_next_waits_suspended(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    check_the_second_waits_until_the_first_is_done(
        dev_cluster, namespace, three_cpus, MPIJOB, sample, [("launcher", 1), ("worker", 2)])


def test_a_higher_priority_mpijob_preempts_a_running_one_and_both_succeed(
        dev_cluster: DevCluster, namespace: str, three_cpus: str) -> None:
    check_a_higher_priority_one_preempts(dev_cluster, namespace, three_cpus, MPIJOB, sample)
