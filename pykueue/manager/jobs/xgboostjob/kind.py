"""Kubeflow XGBoostJob (kubeflow.org/v1): pod sets ``master`` and ``worker``."""

from __future__ import annotations

from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.kubeflow_v1 import (
    KubeflowJobLifecycle,
    KubeflowJobType,
    KubeflowJobWebhook,
    kubeflow_job_kind,
)

XGBOOSTJOB = KubeflowJobType(
    Integration("kubeflow.org/xgboostjob", "kubeflow.org", "v1", "XGBoostJob", "xgboostjobs", prebuilt=True),
    "xgbReplicaSpecs", ("Master", "Worker"))

LIFECYCLE = KubeflowJobLifecycle(XGBOOSTJOB)
WEBHOOK = KubeflowJobWebhook(XGBOOSTJOB)
KIND = kubeflow_job_kind(XGBOOSTJOB, LIFECYCLE, WEBHOOK)
