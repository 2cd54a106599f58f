"""Kubeflow MPIJob (kubeflow.org/v2beta1): pod sets ``launcher`` and ``worker``."""

from __future__ import annotations

import copy

from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload
from pykueue.manager.core.objects import ObjectError, named_meta
from pykueue.manager.jobs.mpijob.lifecycle import (
    LIFECYCLE,
    MPIJOB,
    mpijob_workload_name,
    pods_count,
    podset_name,
    replica_specs,
    roles,
)
from pykueue.manager.jobs.mpijob.webhook import WEBHOOK
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related


def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
    meta, specs = named_meta(job), replica_specs(job)
    podsets = [{"name": podset_name(role), "count": pods_count(specs[role]),
                "template": copy.deepcopy(specs[role].get("template") or {})}
               for role in roles(job)]
    if not podsets:
        raise ObjectError(f"MPIJob {meta['name']}: no replica specs")
    return [owned_workload(job, mpijob_workload_name(job), podsets, controller=True)]


KIND = JobKind(MPIJOB, LIFECYCLE, WEBHOOK, workloads, job_rbac(MPIJOB.group, MPIJOB.plural))
