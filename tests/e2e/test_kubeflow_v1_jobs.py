"""TFJobs, XGBoostJobs, PaddleJobs and JAXJobs queued by pykueue and run by the real Kubeflow
training operator (PyTorchJobs, the operator's fifth kind, have ``test_pytorchjob.py``).

For each kind a job is applied with ``kubectl`` in queue ``lq``: it is admitted within the
quota, the operator runs its pods on the flavor's nodes and kwok completes them after their
``pod-complete`` delay; a second one waits suspended, without pods, until the first is done.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster
from .jobs_common import OperatorKind, check_the_second_waits_until_the_first_is_done, queues

pytestmark = pytest.mark.e2e

COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
JOB_NAME = "training.kubeflow.org/job-name"


def _suspended(job: dict[str, Any]) -> bool:
    return (job["spec"].get("runPolicy") or {}).get("suspend") is True


# kind, its replica specs field, the container name its operator's webhook requires, the
# replicas each job has (written out of pod set order), and the pod sets pykueue makes.
KINDS: list[tuple[str, str, str, dict[str, int], list[tuple[str, int]]]] = [
    ("TFJob", "tfReplicaSpecs", "tensorflow", {"Worker": 1, "PS": 1}, [("ps", 1), ("worker", 1)]),
    ("XGBoostJob", "xgbReplicaSpecs", "xgboost", {"Worker": 1, "Master": 1}, [("master", 1), ("worker", 1)]),
    ("PaddleJob", "paddleReplicaSpecs", "paddle", {"Worker": 1, "Master": 1}, [("master", 1), ("worker", 1)]),
    ("JAXJob", "jaxReplicaSpecs", "jax", {"Worker": 2}, [("worker", 2)]),
]


def _job(kind: str, field: str, container: str, replicas: dict[str, int],
         name: str, runtime: str) -> dict[str, Any]:
    """As a user writes it (no suspend: the webhook sets it); 1 CPU a pod."""
    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {
            "metadata": {"annotations": {COMPLETE_AFTER: runtime}},
            "spec": {"containers": [{"name": container, "image": container,
                                     "resources": {"requests": {"cpu": "1"}}}]}}}

    return {"apiVersion": "kubeflow.org/v1", "kind": kind,
            "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
            "spec": {field: {role: replica(n) for role, n in replicas.items()}}}


@pytest.fixture
def two_cpus(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    yield queues(dev_cluster, namespace, "2")


@pytest.mark.parametrize("kind,field,container,replicas,podsets", KINDS, ids=[k[0] for k in KINDS])
def test_queued_admitted_run_on_the_flavor_and_the_next_waits(
        dev_cluster: DevCluster, namespace: str, two_cpus: str, kind: str, field: str, container: str,
        replicas: dict[str, int], podsets: list[tuple[str, int]]) -> None:
    operator_kind = OperatorKind(f"{kind.lower()}s.kubeflow.org", kind, "Succeeded", _suspended,
                                 JOB_NAME, pod_count=sum(replicas.values()))
    check_the_second_waits_until_the_first_is_done(
        dev_cluster, namespace, two_cpus, operator_kind,
        lambda name, runtime: _job(kind, field, container, replicas, name, runtime), podsets)
