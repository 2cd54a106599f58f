"""ray.io/v1 RayJob: ``spec.suspend`` is the switch; the pod sets of the cluster it makes
(``spec.rayClusterSpec``), plus ``submitter`` in K8sJobMode.

KubeRay creates no RayCluster for a suspended RayJob and deletes the one it made when the
RayJob is suspended again. The cluster's pod sets and their start and restore are the shared
rules of ``raycluster.common``; in K8sJobMode (KubeRay's default) the submitter Job's pod is one
more pod set, its template ``spec.submitterPodTemplate`` or, when unset, the one KubeRay would
use (a ``ray-job-submitter`` container of the head's image asking for 500m CPU and 200Mi), which
start then writes into the RayJob with the flavor's node selector merged in. In SidecarMode the
submitter is a container of the head pod, so the head's pod set counts it.

A RayJob whose ``clusterSelector`` names an existing cluster is not Kueue's (Kueue skips it).
An elastic RayJob runs through workload slices named per generation, as a RayCluster does.
It finishes when its deployment status is ``Complete`` or ``Failed`` (succeeded when its job
status is ``SUCCEEDED``); ``ValidationFailed`` puts its Workload on hold. Its pods are ready once
its cluster is.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.job_fields import get_path
from pykueue.manager.jobs.lifecycle import (
    Action,
    Finished,
    PodSetInfo,
    Replace,
    StartConflict,
    SuspendedBySpec,
    TopLevelOwner,
    merge_into_template,
    restored_template,
)
from pykueue.manager.jobs.multikueue.adapter import SpecCopyAdapter
from pykueue.manager.jobs.raycluster.common import (
    CLUSTER_LABEL,
    GROUP,
    HEAD,
    build_podsets,
    expected_podsets,
    restore_cluster,
    start_cluster,
    workload_templates,
)
from pykueue.manager.jobs.raycluster.lifecycle import ungate_by_podset
from pykueue.manager.jobs.workload_slices import is_elastic

RAYJOB = Integration("ray.io/rayjob", GROUP, "v1", "RayJob", "rayjobs", prebuilt=True, elastic=True)
SUBMITTER = "submitter"
SUBMITTER_CONTAINER = "ray-job-submitter"
K8S_JOB_MODE, SIDECAR_MODE = "K8sJobMode", "SidecarMode"
_SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}
ON_HOLD_MESSAGE = "Job is on hold"
_NOT_RUNNING = ("", "New", "Suspended")
_ENDED = ("Complete", "Failed")


def cluster_spec(job: Mapping[str, Any]) -> JSON:
    spec: JSON = get_path(job, "spec", "rayClusterSpec") or {}
    return spec


def submission_mode(job: Mapping[str, Any]) -> str:
    """``spec.submissionMode``; the CRD's default, K8sJobMode, when the field is absent (as the
    API server stores it)."""
    spec = job.get("spec") or {}
    return str(spec.get("submissionMode", K8S_JOB_MODE) or "")


def submitter_template(job: Mapping[str, Any]) -> JSON:
    """``spec.submitterPodTemplate``, or the template KubeRay uses when it is unset."""
    given = get_path(job, "spec", "submitterPodTemplate")
    if isinstance(given, dict):
        return copy.deepcopy(given)
    containers = (
        get_path(job, "spec", "rayClusterSpec", "headGroupSpec", "template", "spec", "containers") or []
    )
    image = str((containers[0] if containers else {}).get("image") or "")
    container: JSON = {"name": SUBMITTER_CONTAINER, "resources": copy.deepcopy(_SUBMITTER_RESOURCES)}
    if image:
        container["image"] = image
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def podsets(job: Mapping[str, Any]) -> list[JSON]:
    """Kueue's RayJob PodSets: the cluster's, the submitter's in K8sJobMode, the sidecar
    submitter in the head's in SidecarMode."""
    out = build_podsets(cluster_spec(job), meta(job).get("annotations") or {})
    mode = submission_mode(job)
    if mode == K8S_JOB_MODE:
        out.append({"name": SUBMITTER, "count": 1, "template": submitter_template(job)})
    elif mode == SIDECAR_MODE:
        head = out[0]["template"].setdefault("spec", {}).setdefault("containers", [])
        head.append({"name": SUBMITTER_CONTAINER, "resources": copy.deepcopy(_SUBMITTER_RESOURCES)})
    return out


def expected_count(job: Mapping[str, Any]) -> int:
    return expected_podsets(cluster_spec(job)) + (1 if submission_mode(job) == K8S_JOB_MODE else 0)


class RayJobLifecycle(SuspendedBySpec, TopLevelOwner):
    integration: Integration = RAYJOB
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec",))

    def is_managed(
        self, job: Mapping[str, Any], policy: AdmissionPolicy, namespace_labels: Mapping[str, str]
    ) -> bool:
        # Kueue skips a RayJob that runs on an existing cluster.
        if get_path(job, "spec", "clusterSelector"):
            return False
        return super().is_managed(job, policy, namespace_labels)

    def workload_name(self, job: Mapping[str, Any]) -> str:
        m = meta(job)
        return workload_name("RayJob", GROUP, str(m.get("name")), str(m.get("uid", "")))

    def still_running(self, job: Mapping[str, Any]) -> bool:
        return str(get_path(job, "status", "jobDeploymentStatus") or "") not in _NOT_RUNNING

    def start(
        self, job: Mapping[str, Any], workload: Mapping[str, Any], infos: list[PodSetInfo]
    ) -> list[Action]:
        expected = expected_count(job)
        if len(infos) != expected:
            raise StartConflict(f"expecting {expected} podset infos, got {len(infos)}")
        out = copy.deepcopy(dict(job))
        spec = out.setdefault("spec", {})
        spec["suspend"] = False
        cluster = spec.setdefault("rayClusterSpec", {})
        start_cluster(cluster, infos[: expected_podsets(cluster)])
        if submission_mode(job) == K8S_JOB_MODE:
            spec["submitterPodTemplate"] = merge_into_template(submitter_template(job), infos[-1])
        return [Replace(out)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        originals = workload_templates(workload)
        if len(originals) != expected_count(job):
            return []  # Kueue skips the restore when the pod sets no longer match
        out = copy.deepcopy(dict(job))
        spec = out.setdefault("spec", {})
        cluster = spec.setdefault("rayClusterSpec", {})
        changed = restore_cluster(cluster, originals[: expected_podsets(cluster)])
        given = spec.get("submitterPodTemplate")
        if submission_mode(job) == K8S_JOB_MODE and isinstance(given, dict):
            template = restored_template(given, originals[-1])
            if template is not None:
                spec["submitterPodTemplate"] = template
                changed = True
        return [Replace(out)] if changed else []

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        status = job.get("status") or {}
        if status.get("jobDeploymentStatus") not in _ENDED:
            return None
        reason = keys.Reason.SUCCEEDED if status.get("jobStatus") == "SUCCEEDED" else keys.Reason.FAILED
        return Finished(reason, str(status.get("message") or ""))

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return bool(get_path(job, "status", "rayClusterStatus", "state") == "ready")

    # -- HoldsWorkloads ------------------------------------------------------------------------

    def on_hold(self, job: Mapping[str, Any]) -> str | None:
        return (
            ON_HOLD_MESSAGE if get_path(job, "status", "jobDeploymentStatus") == "ValidationFailed" else None
        )

    # -- ScalesBySlices ------------------------------------------------------------------------
    # KubeRay copies an elastic RayJob's annotations to the cluster it makes, whose webhook then
    # gates that cluster's pods: they start as the RayJob's admitted slice allows.

    def elastic(self, job: Mapping[str, Any]) -> bool:
        return is_elastic(job)

    def pods_selector(self, job: Mapping[str, Any]) -> str:
        return f"{CLUSTER_LABEL}={get_path(job, 'status', 'rayClusterName') or ''}"

    def ungate(self, workload: Mapping[str, Any], pods: list[JSON]) -> list[Action]:
        return ungate_by_podset(workload, pods)

    def pods_reported(self, job: Mapping[str, Any]) -> int:
        # The cluster's pods (the submitter's pod is not the cluster's, and never gated).
        if not get_path(job, "status", "rayClusterName"):
            return 0
        return sum(int(ps["count"]) for ps in build_podsets(cluster_spec(job), {}))


LIFECYCLE = RayJobLifecycle()
__all__ = ["HEAD", "LIFECYCLE", "RAYJOB", "SUBMITTER", "cluster_spec", "podsets"]
