"""Admission of ray.io/v1 RayJobs (Kueue's ``rayjob_webhook.go``).

Defaulting: default LocalQueue and priority class, ``spec.suspend`` when Kueue manages it,
MultiKueue ``spec.managedBy``. Validation of a RayJob Kueue manages: one on an existing cluster
(``clusterSelector``) is accepted as is, one that also brings a cluster spec is refused, one
with neither needs ``rayClusterSpec``; otherwise it must delete its cluster when done
(``shutdownAfterJobFinishes``) and its cluster spec follows the shared rules. Then the shared
creation rules and the topology annotations of every group. An update is validated as
RayCluster's is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.field_errors import invalid, required
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.raycluster.common import (
    GROUP,
    KUBERAY_CONTROLLER,
    cluster_spec_errors,
    topology_errors,
)
from pykueue.manager.jobs.raycluster.webhook import RayKindWebhook, managed_by_kueue
from pykueue.manager.jobs.validation import validate_job_on_create

from .lifecycle import RAYJOB

CLUSTER_SPEC_PATH = "spec.rayClusterSpec"


def is_suspended(job: Mapping[str, Any]) -> bool:
    return (job.get("spec") or {}).get("suspend") is True


def _spec(job: JSON) -> JSON:
    spec: JSON = job.setdefault("spec", {})
    return spec


class RayJobWebhook(RayKindWebhook):
    integration = RAYJOB.name
    group, kind = GROUP, "RayJob"

    def suspended(self, obj: Mapping[str, Any]) -> bool:
        return is_suspended(obj)

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, _spec, is_suspended, KUBERAY_CONTROLLER)
        return obj


    def _create(self, obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        spec: Mapping[str, Any] = obj.get("spec") or {}
        cluster = spec.get("rayClusterSpec")
        if managed_by_kueue(obj, ctx):
            selector = spec.get("clusterSelector") or {}
            if selector and cluster is not None:
                return [
                    invalid(
                        "spec.clusterSelector",
                        selector,
                        "a kueue managed job should not use an existing cluster",
                    )
                ]
            if selector:
                return []
            if cluster is None:
                return [
                    required(
                        CLUSTER_SPEC_PATH,
                        "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector",
                    )
                ]
            if spec.get("shutdownAfterJobFinishes") is not True:
                errors.append(
                    invalid(
                        "spec.shutdownAfterJobFinishes",
                        False,
                        "a kueue managed job should delete the cluster after finishing",
                    )
                )
            errors += cluster_spec_errors(obj, cluster, CLUSTER_SPEC_PATH, ctx)
        errors += validate_job_on_create(obj, ctx, self.group, self.kind)
        if isinstance(cluster, Mapping):
            errors += topology_errors(cluster, CLUSTER_SPEC_PATH, ctx)
        return errors


WEBHOOK = RayJobWebhook()
