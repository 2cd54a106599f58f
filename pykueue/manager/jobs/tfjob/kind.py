"""Kubeflow TFJob (kubeflow.org/v1): pod sets ``chief``, ``master``, ``ps``, ``worker`` and
``eval``, in that order."""

from __future__ import annotations

from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.kubeflow_v1 import (
    KubeflowJobLifecycle,
    KubeflowJobType,
    KubeflowJobWebhook,
    kubeflow_job_kind,
)

TFJOB = KubeflowJobType(
    Integration("kubeflow.org/tfjob", "kubeflow.org", "v1", "TFJob", "tfjobs", prebuilt=True),
    "tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Eval"))

LIFECYCLE = KubeflowJobLifecycle(TFJOB)
WEBHOOK = KubeflowJobWebhook(TFJOB)
KIND = kubeflow_job_kind(TFJOB, LIFECYCLE, WEBHOOK)
