"""Kubeflow PaddleJob (kubeflow.org/v1): pod sets ``master`` and ``worker``."""

from __future__ import annotations

from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.kubeflow_v1 import (
    KubeflowJobLifecycle,
    KubeflowJobType,
    KubeflowJobWebhook,
    kubeflow_job_kind,
)

PADDLEJOB = KubeflowJobType(
    Integration("kubeflow.org/paddlejob", "kubeflow.org", "v1", "PaddleJob", "paddlejobs", prebuilt=True),
    "paddleReplicaSpecs", ("Master", "Worker"))

LIFECYCLE = KubeflowJobLifecycle(PADDLEJOB)
WEBHOOK = KubeflowJobWebhook(PADDLEJOB)
KIND = kubeflow_job_kind(PADDLEJOB, LIFECYCLE, WEBHOOK)
