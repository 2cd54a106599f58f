"""ray.io/v1 RayCluster: one Workload (a slice per generation when elastic), pod sets ``head``
and one per worker group."""

from __future__ import annotations

from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import named_meta
from pykueue.manager.jobs.job_fields import annotations_of
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related
from pykueue.manager.jobs.workload_slices import is_elastic, slice_annotations

from .common import GROUP, build_podsets
from .lifecycle import LIFECYCLE, RAYCLUSTER, cluster_spec
from .webhook import WEBHOOK


def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
    m = named_meta(job)
    podsets = build_podsets(cluster_spec(job), annotations_of(job))
    if is_elastic(job):
        # A slice per generation: a worker group scaled up makes a new one beside the running one.
        name = workload_name(
            "RayCluster", GROUP, m["name"], str(m.get("uid", "")), str(m.get("generation") or 0)
        )
        return [
            owned_workload(job, name, podsets, controller=True, extra_annotations=slice_annotations(name))
        ]
    return [owned_workload(job, LIFECYCLE.workload_name(job), podsets, controller=True)]


# Besides the RayCluster: the elastic-job ungater writes its pods back without their gate.
KIND = JobKind(
    RAYCLUSTER,
    LIFECYCLE,
    WEBHOOK,
    workloads,
    (*job_rbac(RAYCLUSTER.group, RAYCLUSTER.plural), ApiAccess("", "pods", ("update",))),
)
