"""kubeflow.org/v1 PyTorchJob: pod sets ``master`` and ``worker``, run as every training
operator kind is (``manager.jobs.kubeflow_v1``)."""

from __future__ import annotations

from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.kubeflow_v1 import KubeflowJobLifecycle, KubeflowJobType

ROLES = ("Master", "Worker")
PYTORCHJOB = KubeflowJobType(
    Integration("kubeflow.org/pytorchjob", "kubeflow.org", "v1", "PyTorchJob", "pytorchjobs", prebuilt=True),
    "pytorchReplicaSpecs", ROLES)

LIFECYCLE = KubeflowJobLifecycle(PYTORCHJOB)
