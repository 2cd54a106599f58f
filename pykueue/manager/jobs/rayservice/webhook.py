"""Admission of ray.io/v1 RayServices (Kueue's ``rayservice_webhook.go``).

Defaulting: default LocalQueue and priority class, the cluster spec's ``suspend`` when Kueue
manages it, MultiKueue ``spec.managedBy``, and the elastic-job scheduling gate on every group's
template of an elastic RayService. Validation: the shared cluster-spec rules for a RayService
Kueue manages, the shared creation rules and the topology annotations; an update is validated
as RayCluster's is. Error paths name the cluster spec ``spec.rayClusterSpec``, as Kueue's do
(the Go field's name; its JSON name is ``rayClusterConfig``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_default_local_queue, apply_default_priority_class
from pykueue.manager.jobs.ownership import managed_by_default, workload_should_be_suspended
from pykueue.manager.jobs.raycluster.common import (
    GROUP,
    KUBERAY_CONTROLLER,
    cluster_spec_errors,
    gate_templates,
    topology_errors,
)
from pykueue.manager.jobs.raycluster.webhook import RayKindWebhook, managed_by_kueue
from pykueue.manager.jobs.validation import elastic_enabled, validate_job_on_create

from .lifecycle import CLUSTER_CONFIG, RAYSERVICE, cluster_spec

ERROR_PATH = "spec.rayClusterSpec"


def is_suspended(job: Mapping[str, Any]) -> bool:
    return cluster_spec(job).get("suspend") is True


class RayServiceWebhook(RayKindWebhook):
    integration = RAYSERVICE.name
    group, kind = GROUP, "RayService"

    def suspended(self, obj: Mapping[str, Any]) -> bool:
        return is_suspended(obj)

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_default_local_queue(obj, ctx)
        apply_default_priority_class(obj, ctx)
        spec: JSON = obj.setdefault("spec", {})
        if workload_should_be_suspended(obj, ctx) and not is_suspended(obj):
            spec.setdefault(CLUSTER_CONFIG, {})["suspend"] = True
        managed_by = managed_by_default(spec.get("managedBy"), KUBERAY_CONTROLLER, ctx, obj)
        if managed_by is not None:
            spec["managedBy"] = managed_by
        if elastic_enabled(obj, ctx):
            gate_templates(spec.setdefault(CLUSTER_CONFIG, {}))
        return obj


    def _create(self, obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        cluster = cluster_spec(obj)
        if managed_by_kueue(obj, ctx):
            errors += cluster_spec_errors(obj, cluster, ERROR_PATH, ctx)
        errors += validate_job_on_create(obj, ctx, self.group, self.kind)
        return errors + topology_errors(cluster, ERROR_PATH, ctx)


WEBHOOK = RayServiceWebhook()
