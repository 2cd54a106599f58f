"""Admission of kubeflow.org/v1 PyTorchJobs: the rules of every training operator kind
(``manager.jobs.kubeflow_v1``)."""

from __future__ import annotations

from pykueue.manager.jobs.kubeflow_v1 import KubeflowJobWebhook
from pykueue.manager.jobs.pytorchjob.lifecycle import PYTORCHJOB

WEBHOOK = KubeflowJobWebhook(PYTORCHJOB)
