"""jobset.x-k8s.io/v1alpha2 JobSet: ``spec.suspend`` is the switch, one pod set per replicated job.

The JobSet controller creates no Jobs while ``spec.suspend`` is true and suspends its Jobs
when it is set again. Each replicated job becomes a pod set of its name, counting
``replicas`` times the pods of one Job (``min(parallelism, completions)``); start and restore
edit each replicated job's pod template, which the JobSet controller carries into its Jobs
when it resumes them. Finished is the Completed or Failed condition, and the pods are ready
once every Job of every replicated job has its pods ready or succeeded.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.job_fields import int_or
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

GROUP = "jobset.x-k8s.io"
# The JobSet controller's name in spec.managedBy (the value MultiKueue may replace).
OWN_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"


def replicated_jobs(jobset: Mapping[str, Any]) -> list[JSON]:
    """``spec.replicatedJobs``, skipping malformed entries."""
    items = (jobset.get("spec") or {}).get("replicatedJobs") or []
    return [rj for rj in items if isinstance(rj, dict)]


def job_spec(rj: Mapping[str, Any]) -> JSON:
    spec: JSON = (rj.get("template") or {}).get("spec") or {}
    return spec


def pods_per_replica(rj: Mapping[str, Any]) -> int:
    """The pods one Job of the replicated job runs at once: min(parallelism, completions)."""
    spec = job_spec(rj)
    parallelism = int_or(spec.get("parallelism"), 1)
    completions = int_or(spec.get("completions"), parallelism)
    return min(parallelism, completions)


def replicas(rj: Mapping[str, Any]) -> int:
    return int_or(rj.get("replicas"), 1)


def pods_count(rj: Mapping[str, Any]) -> int:
    return replicas(rj) * pods_per_replica(rj)


def _names(jobset: Mapping[str, Any]) -> list[str]:
    return [str(rj.get("name") or "") for rj in replicated_jobs(jobset)]


class JobSetLifecycle(SuspendedBySpec, TopLevelOwner):
    integration: Integration = Integration("jobset.x-k8s.io/jobset", GROUP, "v1alpha2", "JobSet", "jobsets",
                                           prebuilt=True)
    # The JobSet controller leaves a JobSet alone whose spec.managedBy names another controller.
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec",))

    def workload_name(self, job: Mapping[str, Any]) -> str:
        m = meta(job)
        return workload_name("JobSet", GROUP, str(m.get("name")), str(m.get("uid", "")))

    def still_running(self, job: Mapping[str, Any]) -> bool:
        statuses = (job.get("status") or {}).get("replicatedJobsStatus") or []
        return any(int_or((s or {}).get("active"), 0) > 0 for s in statuses)

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        names = _names(job)
        pairs = dict(infos_by_name(infos, names))
        out = copy.deepcopy(dict(job))
        for rj, name in zip(replicated_jobs(out), names, strict=True):
            spec = rj.setdefault("template", {}).setdefault("spec", {})
            base = workload_template(workload, name) or spec.get("template") or {}
            spec["template"] = merge_into_template(base, pairs[name])
        out["spec"]["suspend"] = False
        return [Replace(out)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        names = _names(job)
        podsets = [ps.get("name") for ps in (workload.get("spec") or {}).get("podSets") or ()]
        if not self.is_suspended(job) or podsets != names:
            return []  # Kueue skips the restore when the pod sets no longer match
        out = copy.deepcopy(dict(job))
        changed = False
        for rj, name in zip(replicated_jobs(out), names, strict=True):
            original = workload_template(workload, name)
            spec = rj.setdefault("template", {}).setdefault("spec", {})
            template = None if original is None else restored_template(spec.get("template") or {}, original)
            if template is not None:
                spec["template"] = template
                changed = True
        return [Replace(out)] if changed else []

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        if condition_true(job, "Completed"):
            return Finished(keys.Reason.SUCCEEDED, condition_message(job, "Completed"))
        if condition_true(job, "Failed"):
            return Finished(keys.Reason.FAILED, condition_message(job, "Failed"))
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        wanted = sum(replicas(rj) for rj in replicated_jobs(job))
        statuses = (job.get("status") or {}).get("replicatedJobsStatus") or []
        ready = sum(int_or((s or {}).get("ready"), 0) + int_or((s or {}).get("succeeded"), 0)
                    for s in statuses)
        return wanted == ready


LIFECYCLE = JobSetLifecycle()
