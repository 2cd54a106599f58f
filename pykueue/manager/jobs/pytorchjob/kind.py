"""Kubeflow PyTorchJob (kubeflow.org/v1): pod sets ``master`` and ``worker``."""

from __future__ import annotations

from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import ObjectError, named_meta
from pykueue.manager.jobs.pytorchjob.lifecycle import LIFECYCLE, ROLES
from pykueue.manager.jobs.pytorchjob.webhook import WEBHOOK
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related


def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
    meta, spec = named_meta(job), job.get("spec") or {}
    replicas = spec.get("pytorchReplicaSpecs") or {}
    podsets = [{"name": role.lower(), "count": int(replicas[role].get("replicas", 1)),
                "template": replicas[role].get("template") or {}}
               for role in ROLES if role in replicas]
    if not podsets:
        raise ObjectError(f"PyTorchJob {meta['name']}: no replica specs")
    name = workload_name("PyTorchJob", "kubeflow.org", meta["name"], str(meta.get("uid", "")))
    return [owned_workload(job, name, podsets, controller=True)]


KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, workloads,
                        job_rbac("kubeflow.org", "pytorchjobs"))
