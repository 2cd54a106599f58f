"""batch/v1 Job: one pod set ``main`` of min(parallelism, completions) pods."""

from __future__ import annotations

import contextlib

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import named_meta
from pykueue.manager.jobs.batchjob.lifecycle import LIFECYCLE, pods_count
from pykueue.manager.jobs.batchjob.webhook import WEBHOOK
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related
from pykueue.manager.jobs.workload_slices import is_elastic, slice_annotations


def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
    meta, spec = named_meta(job), job.get("spec") or {}
    podset: JSON = {"name": "main", "count": pods_count(job), "template": spec.get("template") or {}}
    min_par = (meta.get("annotations") or {}).get(keys.JOB_MIN_PARALLELISM)
    if min_par is not None:
        with contextlib.suppress(ValueError):  # Kueue ignores an unparsable value
            podset["minCount"] = int(min_par)
    if is_elastic(job):
        # A slice per generation: a scale-up makes a new one beside the running one.
        name = workload_name("Job", "batch", meta["name"], str(meta.get("uid", "")),
                             str(meta.get("generation") or 0))
        return [owned_workload(job, name, [podset], controller=True,
                               extra_annotations=slice_annotations(name))]
    name = workload_name("Job", "batch", meta["name"], str(meta.get("uid", "")))
    return [owned_workload(job, name, [podset], controller=True)]


# Besides the Job: the elastic-job ungater writes its pods back without their gate.
KIND = JobKind(LIFECYCLE.integration, LIFECYCLE, WEBHOOK, workloads,
               (*job_rbac("batch", "jobs"), ApiAccess("", "pods", ("update",))))
