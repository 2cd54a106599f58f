"""ray.io/v1 RayJob: one Workload, the pod sets of its cluster (plus ``submitter`` in K8sJobMode)."""

from __future__ import annotations

from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload
from pykueue.manager.core.objects import named_meta
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related

from .lifecycle import LIFECYCLE, RAYJOB, podsets
from .webhook import WEBHOOK


def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
    named_meta(job)
    return [owned_workload(job, LIFECYCLE.workload_name(job), podsets(job), controller=True)]


KIND = JobKind(RAYJOB, LIFECYCLE, WEBHOOK, workloads, job_rbac(RAYJOB.group, RAYJOB.plural))
