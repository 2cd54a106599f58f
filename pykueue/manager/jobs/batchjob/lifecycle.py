"""batch/v1 Job as Kueue runs it: ``spec.suspend`` is the switch, one podset ``main``.

Start merges the admission into the Workload's copy of the pod template (the job's template
as it was when the Workload was made) and unsuspends; stop suspends; restore, once the job
is suspended, puts that original template back. Two separate writes because the Job API
only lets the template's scheduling directives change while the job is suspended.

A Job that accepts partial admission (``job-min-parallelism``) runs with the admitted
count as its parallelism, else it would start more pods than its quota covers; restore puts
back the Workload's count (what the Job asked for). ``job-completions-equal-parallelism``
keeps completions in step with it. Other Jobs keep their parallelism: the admission covers
all of it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.lifecycle import (
    Action,
    Finished,
    PodSetInfo,
    Replace,
    SuspendedBySpec,
    TopLevelOwner,
    condition_message,
    condition_true,
    infos_by_name,
    merge_into_template,
    restored_template,
    workload_template,
)
from pykueue.manager.jobs.multikueue.adapter import SpecCopyAdapter
from pykueue.manager.jobs.workload_slices import is_elastic, pods_to_ungate

PODSET = "main"
# Labels the Job controller adds to a Job's selector and template: generated again by the
# worker's API server for the copy, which refuses a selector it did not generate.
_GENERATED_LABELS = ("batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name",
                     "controller-uid", "job-name")


def _scrub_for_worker(job: JSON) -> None:
    spec = job.get("spec") or {}
    if not spec.get("manualSelector"):
        spec.pop("selector", None)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    for key in _GENERATED_LABELS:
        labels.pop(key, None)


def _spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("spec") or {}


def pods_count(job: Mapping[str, Any]) -> int:
    """min(parallelism, completions), parallelism defaulting to 1 (the podset count)."""
    spec = _spec(job)
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, int(completions))


def _accepts_partial_admission(job: Mapping[str, Any]) -> bool:
    """The min-parallelism annotation parses (Kueue ignores a value that does not)."""
    try:
        int(str((meta(job).get("annotations") or {})[keys.JOB_MIN_PARALLELISM]))
    except (KeyError, ValueError):
        return False
    return True


def _completions_follow_parallelism(job: Mapping[str, Any]) -> bool:
    value = (meta(job).get("annotations") or {}).get(keys.JOB_COMPLETIONS_EQUAL_PARALLELISM)
    return value in ("1", "t", "T", "TRUE", "true", "True")


def _set_parallelism(spec: JSON, job: Mapping[str, Any], count: int) -> None:
    spec["parallelism"] = count
    if _completions_follow_parallelism(job):
        spec["completions"] = count


def _workload_count(workload: Mapping[str, Any]) -> int | None:
    for ps in (workload.get("spec") or {}).get("podSets") or ():
        if ps.get("name") == PODSET:
            return int(ps.get("count", 1))
    return None


def _own_generated_labels(template: JSON, job: Mapping[str, Any]) -> JSON:
    """The Workload's template may carry another Job's generated labels (a MultiKueue copy of
    the manager's Workload): this Job's own ones are the only ones its API server accepts."""
    own = ((_spec(job).get("template") or {}).get("metadata") or {}).get("labels") or {}
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    for key in _GENERATED_LABELS:
        labels.pop(key, None)
        if key in own:
            labels[key] = own[key]
    return template


class BatchJobLifecycle(SuspendedBySpec, TopLevelOwner):
    integration: Integration = Integration("batch/job", "batch", "v1", "Job", "jobs",
                                           prebuilt=True, elastic=True)
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec",), _scrub_for_worker)

    def workload_name(self, job: Mapping[str, Any]) -> str:
        return workload_name("Job", "batch", str(meta(job).get("name")), str(meta(job).get("uid", "")))

    def still_running(self, job: Mapping[str, Any]) -> bool:
        return int((job.get("status") or {}).get("active") or 0) > 0

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        [(_, info)] = list(infos_by_name(infos, [PODSET]))
        out = copy.deepcopy(dict(job))
        spec = out.setdefault("spec", {})
        base = workload_template(workload, PODSET) or spec.get("template") or {}
        spec["template"] = _own_generated_labels(merge_into_template(base, info), job)
        spec["suspend"] = False
        if _accepts_partial_admission(job):
            _set_parallelism(spec, job, info.count)  # no more pods than were admitted
        return [Replace(out)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        original = workload_template(workload, PODSET)
        if original is None or not self.is_suspended(job):
            return []
        template = restored_template(_spec(job).get("template") or {}, original)
        count = _workload_count(workload) if _accepts_partial_admission(job) else None
        recount = count is not None and _spec(job).get("parallelism", 1) != count
        if template is None and not recount:
            return []
        out = copy.deepcopy(dict(job))
        if template is not None:
            out["spec"]["template"] = _own_generated_labels(template, job)
        if recount and count is not None:
            _set_parallelism(out["spec"], job, count)  # what the Job asked for before it started
        return [Replace(out)]

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        if condition_true(job, "Complete"):
            message = condition_message(job, "Complete") or "Job finished successfully"
            return Finished(keys.Reason.SUCCEEDED, message)
        if condition_true(job, "Failed"):
            return Finished(keys.Reason.FAILED, condition_message(job, "Failed") or "Job failed")
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        status = job.get("status") or {}
        return int(status.get("ready") or 0) + int(status.get("succeeded") or 0) >= pods_count(job)

    # -- ScalesBySlices ------------------------------------------------------------------------

    def elastic(self, job: Mapping[str, Any]) -> bool:
        return is_elastic(job)

    def pods_selector(self, job: Mapping[str, Any]) -> str:
        return f"batch.kubernetes.io/controller-uid={meta(job).get('uid')}"

    def ungate(self, workload: Mapping[str, Any], pods: list[JSON]) -> list[Action]:
        granted = _workload_count(workload) or 0
        return [Replace(p) for p in pods_to_ungate(pods, granted)]

    def pods_reported(self, job: Mapping[str, Any]) -> int:
        return int((job.get("status") or {}).get("active") or 0)


LIFECYCLE = BatchJobLifecycle()
