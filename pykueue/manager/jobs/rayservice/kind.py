"""ray.io/v1 RayService: one Workload (a slice per generation when elastic), pod sets ``head``
and one per worker group of its cluster spec."""

from __future__ import annotations

from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import named_meta
from pykueue.manager.jobs.raycluster.common import GROUP, slice_name_extra
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related
from pykueue.manager.jobs.workload_slices import is_elastic, slice_annotations

from .lifecycle import LIFECYCLE, RAYSERVICE, podsets
from .webhook import WEBHOOK


def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
    m = named_meta(job)
    if is_elastic(job):
        name = workload_name("RayService", GROUP, m["name"], str(m.get("uid", "")), slice_name_extra(m))
        return [
            owned_workload(
                job, name, podsets(job), controller=True, extra_annotations=slice_annotations(name)
            )
        ]
    return [owned_workload(job, LIFECYCLE.workload_name(job), podsets(job), controller=True)]


# Besides the RayService: the elastic-job ungater writes its pods back without their gate.
KIND = JobKind(
    RAYSERVICE,
    LIFECYCLE,
    WEBHOOK,
    workloads,
    (*job_rbac(RAYSERVICE.group, RAYSERVICE.plural), ApiAccess("", "pods", ("update",))),
)
