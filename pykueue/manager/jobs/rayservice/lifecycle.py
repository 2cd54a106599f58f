"""ray.io/v1 RayService: its cluster spec's ``suspend`` (``spec.rayClusterConfig.suspend``) is
the switch; pod sets ``head`` and one per worker group of that spec.

KubeRay creates no RayCluster for a RayService whose cluster spec is suspended and deletes
the one it made when it is suspended again. Pod sets, start and restore are the shared rules
of ``raycluster.common``. A RayService never finishes; it runs, and its pods are ready, while
its ``Ready`` condition is true (which needs a live Ray Serve behind it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.job_fields import get_path
from pykueue.manager.jobs.lifecycle import (
    Action,
    Finished,
    PodSetInfo,
    Replace,
    TopLevelOwner,
    condition_true,
)
from pykueue.manager.jobs.multikueue.adapter import SpecCopyAdapter
from pykueue.manager.jobs.raycluster.common import (
    CLUSTER_LABEL,
    GROUP,
    build_podsets,
    expected_podsets,
    restore_cluster,
    start_cluster,
    workload_templates,
)
from pykueue.manager.jobs.raycluster.lifecycle import ungate_by_podset
from pykueue.manager.jobs.workload_slices import is_elastic

RAYSERVICE = Integration(
    "ray.io/rayservice", GROUP, "v1", "RayService", "rayservices", prebuilt=True, elastic=True
)
# The JSON name of the Go field RayClusterSpec.
CLUSTER_CONFIG = "rayClusterConfig"


def cluster_spec(job: Mapping[str, Any]) -> JSON:
    spec: JSON = get_path(job, "spec", CLUSTER_CONFIG) or {}
    return spec


def podsets(job: Mapping[str, Any]) -> list[JSON]:
    return build_podsets(cluster_spec(job), meta(job).get("annotations") or {})


class RayServiceLifecycle(TopLevelOwner):
    integration: Integration = RAYSERVICE
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec",))

    def workload_name(self, job: Mapping[str, Any]) -> str:
        m = meta(job)
        return workload_name("RayService", GROUP, str(m.get("name")), str(m.get("uid", "")))

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        return cluster_spec(job).get("suspend") is True

    def is_active(self, job: Mapping[str, Any]) -> bool:
        return not self.is_suspended(job)

    def still_running(self, job: Mapping[str, Any]) -> bool:
        return condition_true(job, "Ready")

    def start(
        self, job: Mapping[str, Any], workload: Mapping[str, Any], infos: list[PodSetInfo]
    ) -> list[Action]:
        out = copy.deepcopy(dict(job))
        cluster = out.setdefault("spec", {}).setdefault(CLUSTER_CONFIG, {})
        cluster["suspend"] = False
        start_cluster(cluster, infos)
        return [Replace(out)]

    def stop(self, job: Mapping[str, Any]) -> list[Action]:
        out = copy.deepcopy(dict(job))
        out.setdefault("spec", {}).setdefault(CLUSTER_CONFIG, {})["suspend"] = True
        return [Replace(out)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        originals = workload_templates(workload)
        if len(originals) != expected_podsets(cluster_spec(job)):
            return []  # Kueue skips the restore when the pod sets no longer match
        out = copy.deepcopy(dict(job))
        cluster = out.setdefault("spec", {}).setdefault(CLUSTER_CONFIG, {})
        return [Replace(out)] if restore_cluster(cluster, originals) else []

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return condition_true(job, "Ready")

    # -- ScalesBySlices ------------------------------------------------------------------------

    def elastic(self, job: Mapping[str, Any]) -> bool:
        return is_elastic(job)

    def pods_selector(self, job: Mapping[str, Any]) -> str:
        cluster = (
            get_path(job, "status", "activeServiceStatus", "rayClusterName")
            or get_path(job, "status", "pendingServiceStatus", "rayClusterName")
            or ""
        )
        return f"{CLUSTER_LABEL}={cluster}"

    def ungate(self, workload: Mapping[str, Any], pods: list[JSON]) -> list[Action]:
        return ungate_by_podset(workload, pods)

    def pods_reported(self, job: Mapping[str, Any]) -> int:
        if self.pods_selector(job).endswith("="):
            return 0  # no cluster yet
        return sum(int(ps["count"]) for ps in build_podsets(cluster_spec(job), {}))


LIFECYCLE = RayServiceLifecycle()
