"""ray.io/v1 RayJob: one Workload, the pod sets of its cluster (plus ``submitter`` in K8sJobMode)."""

from __future__ import annotations

from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import named_meta
from pykueue.manager.jobs.raycluster.common import GROUP, slice_name_extra
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related
from pykueue.manager.jobs.workload_slices import is_elastic, slice_annotations

from .lifecycle import LIFECYCLE, RAYJOB, podsets
from .webhook import WEBHOOK


def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
    m = named_meta(job)
    if is_elastic(job):
        # A slice per generation, as for a RayCluster (Kueue's GetWorkloadNameExtraPart).
        name = workload_name("RayJob", GROUP, m["name"], str(m.get("uid", "")), slice_name_extra(m))
        return [
            owned_workload(
                job, name, podsets(job), controller=True, extra_annotations=slice_annotations(name)
            )
        ]
    return [owned_workload(job, LIFECYCLE.workload_name(job), podsets(job), controller=True)]


# Besides the RayJob: the elastic-job ungater writes its cluster's pods back without their gate.
KIND = JobKind(
    RAYJOB,
    LIFECYCLE,
    WEBHOOK,
    workloads,
    (*job_rbac(RAYJOB.group, RAYJOB.plural), ApiAccess("", "pods", ("update",))),
)
