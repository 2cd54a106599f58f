"""trainer.kubeflow.org/v1alpha1 TrainJob (Kubeflow Trainer v2), as Kueue v0.19.2 runs it.

``spec.suspend`` is the switch. The pod sets are those of the JobSet the trainer would make
from the TrainJob and the training runtime it names (``runtime.child_jobset``): the lifecycle
reads that runtime (``manager.jobs.related``), so it is bound to it before use; a TrainJob
whose runtime is missing is not reconciled at all until it appears, as Kueue's reconciler fails
on it (``runtime '<name>' not found``) and retries.

Start does not touch the runtime: it writes the admission into Kueue's own entry of
``spec.runtimePatches`` (manager ``kueue.x-k8s.io/manager``, added by the webhook), one
replicated-job patch per pod set with its pods' labels, annotations, node selector and
tolerations, then unsuspends. That is two writes, as Kueue makes them: the trainer's webhook
(v2.2.0) accepts a change of runtime patches only on a TrainJob that stays suspended. Restore
empties those replicated-job patches once no Job of the TrainJob is active. Finished is the
Complete or Failed condition; the pods are ready when the TrainJob's ``status.jobsStatus``
counts every Job of the JobSet ready or succeeded.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Self

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.job_fields import int_or
from pykueue.manager.jobs.jobset.lifecycle import replicas, replicated_jobs
from pykueue.manager.jobs.lifecycle import (
    Action,
    Finished,
    PodSetInfo,
    Replace,
    StartConflict,
    SuspendedBySpec,
    TopLevelOwner,
    condition_message,
    condition_true,
)
from pykueue.manager.jobs.multikueue.adapter import SpecCopyAdapter
from pykueue.manager.jobs.related import Related, RelatedKey, RelatedKind

from .runtime import GROUP, RUNTIME_KINDS, VERSION, child_jobset, runtime_key, runtime_of, spec_of

KIND = "TrainJob"
# The trainer's name in spec.managedBy (the value MultiKueue may replace).
OWN_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
# Kueue's entry of spec.runtimePatches.
KUEUE_PATCH_MANAGER = "kueue.x-k8s.io/manager"


class NoKueuePatch(LookupError):
    """The TrainJob has no runtime patch of Kueue's (made before the webhook ran): Kueue's start
    fails and is retried."""


def is_kueue_patch(patch: Any) -> bool:
    return isinstance(patch, dict) and patch.get("manager") == KUEUE_PATCH_MANAGER


def kueue_patch(trainjob: Mapping[str, Any]) -> JSON | None:
    """Kueue's entry of ``spec.runtimePatches`` (the object itself, to edit a copy in place)."""
    return next((p for p in spec_of(trainjob).get("runtimePatches") or () if is_kueue_patch(p)), None)


def empty_kueue_patch() -> JSON:
    """The entry the webhook adds to every TrainJob it admits."""
    return {"manager": KUEUE_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}


def _patch_spec(patch: JSON) -> JSON:
    spec: JSON = patch.setdefault("trainingRuntimeSpec", {}).setdefault("template", {}).setdefault("spec", {})
    return spec


def replicated_job_patch(info: PodSetInfo) -> JSON:
    """What the admission of one pod set adds to its pods, as a replicated-job patch."""
    pod_meta: JSON = {}
    if info.annotations:
        pod_meta["annotations"] = dict(info.annotations)
    if info.labels:
        pod_meta["labels"] = dict(info.labels)
    pod_spec: JSON = {}
    if info.node_selector:
        pod_spec["nodeSelector"] = dict(info.node_selector)
    if info.tolerations:
        pod_spec["tolerations"] = [dict(t) for t in info.tolerations]
    return {"name": info.name, "template": {"spec": {"template": {"metadata": pod_meta, "spec": pod_spec}}}}


def without_kueue_patch(remote: JSON) -> None:
    """Drop Kueue's runtime patch from a worker's copy: the worker's webhook adds its own."""
    spec = remote.get("spec") or {}
    patches = [p for p in spec.get("runtimePatches") or () if not is_kueue_patch(p)]
    if patches:
        spec["runtimePatches"] = patches
    else:
        spec.pop("runtimePatches", None)


def _active(job: Mapping[str, Any]) -> bool:
    """Kueue's IsActive: some Job of it has pods running or pending."""
    statuses = (job.get("status") or {}).get("jobsStatus") or ()
    return any(int_or((s or {}).get("active"), 0) > 0 for s in statuses if isinstance(s, dict))


class TrainJobLifecycle(SuspendedBySpec, TopLevelOwner):
    integration: Integration = Integration("trainer.kubeflow.org/trainjob", GROUP, VERSION, KIND,
                                           "trainjobs", prebuilt=True)
    # The trainer leaves a TrainJob alone whose spec.managedBy names MultiKueue.
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec",), without_kueue_patch)

    def __init__(self, related: Related | None = None) -> None:
        if related is not None:
            self.related = related

    # -- the runtime (ReadsRelated) ---------------------------------------------------------

    @property
    def related_kinds(self) -> tuple[RelatedKind, ...]:
        return RUNTIME_KINDS

    def needs(self, job: Mapping[str, Any]) -> tuple[RelatedKey, ...]:
        key = runtime_key(job)
        return () if key is None else (key,)

    def bind(self, related: Related) -> Self:
        return type(self)(related)

    def child_jobset(self, job: Mapping[str, Any]) -> JSON:
        """The JobSet Kueue computes for ``job`` from its bound runtime."""
        return child_jobset(job, runtime_of(job, self.related))

    # -- JobLifecycle -----------------------------------------------------------------------

    def workload_name(self, job: Mapping[str, Any]) -> str:
        m = meta(job)
        return workload_name(KIND, GROUP, str(m.get("name")), str(m.get("uid", "")))

    def still_running(self, job: Mapping[str, Any]) -> bool:
        return _active(job)

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        wanted = len(replicated_jobs(self.child_jobset(job)))
        if len(infos) != wanted:
            raise StartConflict(f"invalid podset infos: expecting {wanted} podset, got {len(infos)}")
        patched = copy.deepcopy(dict(job))
        patch = kueue_patch(patched)
        if patch is None:
            raise NoKueuePatch("kueue runtime patch not found")
        _patch_spec(patch)["replicatedJobs"] = [replicated_job_patch(info) for info in infos]
        started = copy.deepcopy(patched)
        started["spec"]["suspend"] = False
        # First the patches while still suspended, then the switch (see the module docstring).
        return [Replace(patched), Replace(started)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        if not self.is_suspended(job) or _active(job):
            return []  # Kueue waits until no Job is active ("jobs are still active")
        out = copy.deepcopy(dict(job))
        patch = kueue_patch(out)
        spec = (((patch or {}).get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")
        if not isinstance(spec, dict) or "replicatedJobs" not in spec:
            return []
        del spec["replicatedJobs"]
        return [Replace(out)]

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        if condition_true(job, "Complete"):
            return Finished(keys.Reason.SUCCEEDED, condition_message(job, "Complete"))
        if condition_true(job, "Failed"):
            return Finished(keys.Reason.FAILED, condition_message(job, "Failed"))
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        wanted = sum(replicas(rj) for rj in replicated_jobs(self.child_jobset(job)))
        statuses = (job.get("status") or {}).get("jobsStatus") or ()
        ready = sum(int_or((s or {}).get("ready"), 0) + int_or((s or {}).get("succeeded"), 0)
                    for s in statuses if isinstance(s, dict))
        return wanted == ready


LIFECYCLE = TrainJobLifecycle()
