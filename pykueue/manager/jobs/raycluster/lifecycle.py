"""ray.io/v1 RayCluster: ``spec.suspend`` is the switch, pod sets ``head`` and one per worker group.

KubeRay deletes a suspended cluster's pods and creates none until ``spec.suspend`` is false
again. The pod sets and the start and restore of the group templates are the shared rules
of ``common``. A RayCluster never finishes (a service, as in Kueue); its pods are ready, and
it still runs, while its ``status.state`` is ``ready``.

Elastic (annotation ``kueue.x-k8s.io/elastic-job: "true"`` with ElasticJobsViaWorkloadSlices):
its Workloads are slices named per generation (``manager.jobs.workload_slices``), so a worker
group scaled up, by hand or by the in-tree autoscaler, asks for a new slice while the cluster
keeps running; its pods are created behind the elastic-job gate (the webhook puts it on every
group's template) and ungated per pod set up to the admitted slice's count.
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
)
from pykueue.manager.jobs.multikueue.adapter import SpecCopyAdapter
from pykueue.manager.jobs.workload_slices import is_elastic, pods_to_ungate

from .common import (
    CLUSTER_LABEL,
    GROUP,
    build_podsets,
    expected_podsets,
    restore_cluster,
    start_cluster,
    workload_templates,
)

RAYCLUSTER = Integration(
    "ray.io/raycluster", GROUP, "v1", "RayCluster", "rayclusters", prebuilt=True, elastic=True
)
READY = "ready"


def cluster_spec(job: Mapping[str, Any]) -> JSON:
    spec: JSON = job.get("spec") or {}
    return spec


def podset_counts(workload: Mapping[str, Any]) -> dict[str, int]:
    """The pod counts a Workload grants, by pod set (its admission's, else its spec's)."""
    counts = {
        str(ps.get("name")): int(ps.get("count", 1))
        for ps in (workload.get("spec") or {}).get("podSets") or ()
    }
    for psa in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
        if psa.get("count") is not None:
            counts[str(psa.get("name"))] = int(psa["count"])
    return counts


def ungate_by_podset(workload: Mapping[str, Any], pods: list[JSON]) -> list[Action]:
    """Kueue's ElasticJobUngater: per pod set (the pods' ``kueue.x-k8s.io/podset`` label),
    the gated pods that may start so that at most the slice's count run."""
    by_podset: dict[str, list[JSON]] = {}
    for pod in pods:
        by_podset.setdefault(str((meta(pod).get("labels") or {}).get(keys.PODSET) or ""), []).append(pod)
    counts = podset_counts(workload)
    return [
        Replace(p)
        for name, members in by_podset.items()
        if name in counts
        for p in pods_to_ungate(members, counts[name])
    ]


class RayClusterLifecycle(SuspendedBySpec, TopLevelOwner):
    integration: Integration = RAYCLUSTER
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec",))

    def workload_name(self, job: Mapping[str, Any]) -> str:
        m = meta(job)
        return workload_name("RayCluster", GROUP, str(m.get("name")), str(m.get("uid", "")))

    def still_running(self, job: Mapping[str, Any]) -> bool:
        return (job.get("status") or {}).get("state") == READY

    def start(
        self, job: Mapping[str, Any], workload: Mapping[str, Any], infos: list[PodSetInfo]
    ) -> list[Action]:
        out = copy.deepcopy(dict(job))
        spec = out.setdefault("spec", {})
        spec["suspend"] = False
        start_cluster(spec, infos)
        return [Replace(out)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        originals = workload_templates(workload)
        if len(originals) != expected_podsets(cluster_spec(job)):
            return []  # Kueue skips the restore when the pod sets no longer match
        out = copy.deepcopy(dict(job))
        return [Replace(out)] if restore_cluster(out.setdefault("spec", {}), originals) else []

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return (job.get("status") or {}).get("state") == READY

    # -- ScalesBySlices ------------------------------------------------------------------------

    def elastic(self, job: Mapping[str, Any]) -> bool:
        return is_elastic(job)

    def pods_selector(self, job: Mapping[str, Any]) -> str:
        return f"{CLUSTER_LABEL}={meta(job).get('name')}"

    def ungate(self, workload: Mapping[str, Any], pods: list[JSON]) -> list[Action]:
        return ungate_by_podset(workload, pods)

    def pods_reported(self, job: Mapping[str, Any]) -> int:
        # KubeRay makes the pods the spec asks for: the head and every worker group's.
        return sum(ps["count"] for ps in build_podsets(cluster_spec(job), {}))


LIFECYCLE = RayClusterLifecycle()
