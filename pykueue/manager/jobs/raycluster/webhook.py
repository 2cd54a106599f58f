"""Admission of ray.io/v1 RayClusters (Kueue's ``raycluster_webhook.go``).

Defaulting: default LocalQueue and priority class, ``spec.suspend`` when Kueue manages it,
MultiKueue ``spec.managedBy``, and, for an elastic cluster, the elastic-job scheduling gate on
every group's template. Validation of a cluster Kueue manages (a queue name, or
manageJobsWithoutQueueName): an elastic one must carry that gate on every template and may
not autoscale under MultiKueue; a non-elastic one may not use the in-tree autoscaler; at most
18 pod sets and no worker group named ``head``; then the shared creation rules and the
topology annotations. An update is validated (the update rules, then all of the above) only
when Kueue manages the new object, or managed the old one (ValidateRayAndSparkJobUpdates).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.validation import elastic_enabled, validate_job_on_create, validate_job_on_update

from .common import (
    GROUP,
    KUBERAY_CONTROLLER,
    autoscaling,
    gate_templates,
    podset_limit_errors,
    topology_errors,
    ungated_template_errors,
)
from .lifecycle import RAYCLUSTER


def is_suspended(job: Mapping[str, Any]) -> bool:
    return (job.get("spec") or {}).get("suspend") is True


def _spec(job: JSON) -> JSON:
    spec: JSON = job.setdefault("spec", {})
    return spec


def managed_by_kueue(obj: Mapping[str, Any], ctx: AdmissionContext) -> bool:
    """The creation rules of a Ray kind apply to objects Kueue manages."""
    return ctx.policy.manage_jobs_without_queue_name or bool(queue_name(obj))


def validate_update_at_all(obj: Mapping[str, Any], old: Mapping[str, Any], ctx: AdmissionContext) -> bool:
    """Kueue's ShouldValidateRayOrSparkJobOnUpdate."""
    return managed_by_kueue(obj, ctx) or (ctx.gate("ValidateRayAndSparkJobUpdates") and bool(queue_name(old)))


class RayKindWebhook:
    """What the three Ray kinds' webhooks share: a create is checked by the kind's
    ``_create``; an update, when Kueue validates it at all, by the job update rules first."""

    group: str
    kind: str

    def suspended(self, obj: Mapping[str, Any]) -> bool:
        raise NotImplementedError

    def _create(self, obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        raise NotImplementedError

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        if old is None:
            return self._create(obj, ctx)
        if not validate_update_at_all(obj, old, ctx):
            return []
        errors = validate_job_on_update(old, obj, ctx, new_suspended=self.suspended(obj),
                                        old_suspended=self.suspended(old), group=self.group, kind=self.kind)
        return errors + self._create(obj, ctx)


class RayClusterWebhook(RayKindWebhook):
    integration = RAYCLUSTER.name
    group, kind = GROUP, "RayCluster"

    def suspended(self, obj: Mapping[str, Any]) -> bool:
        return is_suspended(obj)

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, _spec, is_suspended, KUBERAY_CONTROLLER)
        if elastic_enabled(obj, ctx):
            gate_templates(_spec(obj))
        return obj


    def _create(self, obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        spec: Mapping[str, Any] = obj.get("spec") or {}
        if managed_by_kueue(obj, ctx):
            if elastic_enabled(obj, ctx):
                errors += ungated_template_errors(spec, "spec")
                if autoscaling(spec) and spec.get("managedBy") == keys.MULTIKUEUE_CONTROLLER:
                    errors.append(
                        forbidden(
                            "spec.enableInTreeAutoscaling",
                            "in-tree autoscaling is not "
                            "supported for a MultiKueue-managed elastic RayCluster",
                        )
                    )
            elif autoscaling(spec):
                errors.append(
                    invalid(
                        "spec.enableInTreeAutoscaling",
                        True,
                        "a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the "
                        "ElasticJobsViaWorkloadSlices feature gate and set the "
                        f'"{keys.ELASTIC_JOB}": "true" annotation',
                    )
                )
            errors += podset_limit_errors(spec, "spec")
        errors += validate_job_on_create(obj, ctx, self.group, self.kind)
        return errors + topology_errors(spec, "spec", ctx, head_bound_after_groups=True)


WEBHOOK = RayClusterWebhook()
