"""Kubeflow PyTorchJob (kubeflow.org/v1): pod sets ``master`` and ``worker``."""

from __future__ import annotations

from pykueue.manager.jobs.kubeflow_v1 import kubeflow_job_kind
from pykueue.manager.jobs.pytorchjob.lifecycle import LIFECYCLE, PYTORCHJOB
from pykueue.manager.jobs.pytorchjob.webhook import WEBHOOK

KIND = kubeflow_job_kind(PYTORCHJOB, LIFECYCLE, WEBHOOK)
