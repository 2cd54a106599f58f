"""TrainJob (trainer.kubeflow.org/v1alpha1): one Workload, one pod set per replicated job of the
JobSet its training runtime makes, exactly as the JobSet kind would count them."""

from __future__ import annotations

from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload
from pykueue.manager.core.objects import ObjectError, named_meta
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import Related

from .lifecycle import LIFECYCLE
from .runtime import podsets
from .webhook import WEBHOOK


def workloads(trainjob: JSON, related: Related) -> list[JSON]:
    m = named_meta(trainjob)
    sets = podsets(trainjob, related)
    if not sets:
        raise ObjectError(f"TrainJob {m['name']}: its runtime has no replicated jobs")
    return [owned_workload(trainjob, LIFECYCLE.workload_name(trainjob), sets, controller=True)]


KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, workloads,
               job_rbac(LIFECYCLE.integration.group, LIFECYCLE.integration.plural))
