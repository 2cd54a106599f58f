"""JobSet (jobset.x-k8s.io/v1alpha2): one Workload, one pod set per replicated job."""

from __future__ import annotations

from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload
from pykueue.manager.core.objects import ObjectError, named_meta
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related

from .lifecycle import LIFECYCLE, pods_count, replicated_jobs
from .webhook import WEBHOOK


def workloads(jobset: JSON, related: Related = NO_RELATED) -> list[JSON]:
    m = named_meta(jobset)
    podsets = [{"name": str(rj.get("name") or ""), "count": pods_count(rj),
                "template": ((rj.get("template") or {}).get("spec") or {}).get("template") or {}}
               for rj in replicated_jobs(jobset)]
    if not podsets:
        raise ObjectError(f"JobSet {m['name']}: no replicated jobs")
    return [owned_workload(jobset, LIFECYCLE.workload_name(jobset), podsets, controller=True)]


KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, workloads,
               job_rbac(LIFECYCLE.integration.group, LIFECYCLE.integration.plural))
