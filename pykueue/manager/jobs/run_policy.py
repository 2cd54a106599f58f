"""Kubeflow's ``spec.runPolicy``: where a training operator's job (PyTorchJob, MPIJob, and
the other Kubeflow kinds) keeps its ``suspend`` and ``managedBy`` switches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.wire import JSON
from pykueue.manager.jobs.job_fields import get_path


def is_suspended(job: Mapping[str, Any]) -> bool:
    return get_path(job, "spec", "runPolicy", "suspend") is True


def run_policy(job: JSON) -> JSON:
    """``spec.runPolicy``, replacing a missing or malformed one with an empty mapping."""
    spec = job.setdefault("spec", {})
    if not isinstance(spec.get("runPolicy"), dict):
        spec["runPolicy"] = {}
    policy: JSON = spec["runPolicy"]
    return policy
