"""Kubeflow JAXJob (kubeflow.org/v1): one pod set, ``worker``. Kueue accepts no prebuilt
Workload for it."""

from __future__ import annotations

from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.kubeflow_v1 import (
    KubeflowJobLifecycle,
    KubeflowJobType,
    KubeflowJobWebhook,
    kubeflow_job_kind,
)

JAXJOB = KubeflowJobType(
    Integration("kubeflow.org/jaxjob", "kubeflow.org", "v1", "JAXJob", "jaxjobs"),
    "jaxReplicaSpecs", ("Worker",))

LIFECYCLE = KubeflowJobLifecycle(JAXJOB)
WEBHOOK = KubeflowJobWebhook(JAXJOB)
KIND = kubeflow_job_kind(JAXJOB, LIFECYCLE, WEBHOOK)
