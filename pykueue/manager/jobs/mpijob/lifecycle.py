"""kubeflow.org/v2beta1 MPIJob: the training operators' shared lifecycle (``kubeflow_v1``) over
``mpiReplicaSpecs``, pod sets launcher, worker.

The mpi-operator (v0.4+) creates no pods while ``runPolicy.suspend`` is true. Each replica
type present (a null replica spec counts as absent, as in Kueue) becomes a pod set named in
lower case, Launcher before Worker whatever ``runLauncherAsWorker`` says, with ``replicas``
pods (1 when unset); the rest is the Kubeflow v1 kinds' rules, which Kueue shares too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.kubeflow_v1 import KubeflowJobLifecycle, KubeflowJobType, pods_count, podset_name

MPIJOB = Integration("kubeflow.org/mpijob", "kubeflow.org", "v2beta1", "MPIJob", "mpijobs", prebuilt=True)
REPLICA_TYPES = ("Launcher", "Worker")
# spec.runPolicy.managedBy of an MPIJob its own operator runs.
MPI_OPERATOR = "kubeflow.org/mpi-operator"
MPIJOB_TYPE = KubeflowJobType(MPIJOB, "mpiReplicaSpecs", REPLICA_TYPES, own_controller=MPI_OPERATOR)

__all__ = ["LIFECYCLE", "MPIJOB", "mpijob_workload_name", "pods_count", "podset_name", "replica_specs",
           "roles"]


def replica_specs(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return MPIJOB_TYPE.replica_specs(job)


def roles(job: Mapping[str, Any]) -> list[str]:
    """Replica types present (a null spec is absent), in pod set order: Kueue's orderedReplicaTypes."""
    return MPIJOB_TYPE.roles(job)


def mpijob_workload_name(job: Mapping[str, Any]) -> str:
    return MPIJOB_TYPE.workload_name(job)


LIFECYCLE = KubeflowJobLifecycle(MPIJOB_TYPE)
