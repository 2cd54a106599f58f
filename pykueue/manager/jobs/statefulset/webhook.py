"""Admission of apps/v1 StatefulSets (Kueue's ``statefulset_webhook.go``; CREATE and UPDATE).

When Kueue manages the StatefulSet, its pod template gets the ``pod-suspending-parent:
statefulset`` annotation and nothing else: the pod webhook gates each pod, and the
StatefulSet lifecycle gives the pods their group (``manager.jobs.statefulset.lifecycle``). A
StatefulSet whose template names another parent (an LWS's) is that framework's: neither
defaulted nor validated here.

Besides the rules it shares with a Deployment (``manager.jobs.serving_rules``), a managed
StatefulSet's update may not change the pod spec's shape (what the group's pods are admitted
for) nor ``spec.replicas``, except to scale to zero or up from zero; scaling up from zero is
refused while pods of the scale-down still exist (``status.replicas``).
"""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_default_local_queue, apply_default_priority_class
from pykueue.manager.jobs.job_fields import get_path, int_or, set_annotation
from pykueue.manager.jobs.ownership import workload_should_be_suspended
from pykueue.manager.jobs.pod_shape import shape_errors
from pykueue.manager.jobs.serving_rules import create_errors, pod_template, update_errors
from pykueue.manager.jobs.statefulset.lifecycle import FRAMEWORK, managed_by_another_framework, replicas

GVK = "apps/v1, Kind=StatefulSet"
REPLICAS = "spec.replicas"


def _pod_spec(obj: JSON) -> dict[str, Any]:
    spec = get_path(obj, "spec", "template", "spec")
    return spec if isinstance(spec, dict) else {}


class StatefulSetWebhook:
    integration = FRAMEWORK
    group, kind = "apps", "StatefulSet"

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        if managed_by_another_framework(obj) is not None:
            return obj
        apply_default_local_queue(obj, ctx)
        apply_default_priority_class(obj, ctx)
        if workload_should_be_suspended(obj, ctx):
            set_annotation(pod_template(obj), keys.POD_SUSPENDING_PARENT, FRAMEWORK)
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        if managed_by_another_framework(obj) is not None:
            return []
        if old is None:
            return create_errors(obj, ctx, GVK)
        errors = update_errors(obj, old, ctx, GVK)
        if workload_should_be_suspended(obj, ctx):
            errors += shape_errors(_pod_spec(old), _pod_spec(obj), "spec.template.spec")
            errors += _replicas_errors(obj, old)
        return errors


def _replicas_errors(obj: JSON, old: JSON) -> list[FieldError]:
    """Only a scale to zero or up from zero (Kueue's TODO #3279: other resizes later)."""
    old_n, new_n = replicas(old), replicas(obj)
    if old_n != 0 and new_n != 0 and old_n != new_n:
        return [invalid(REPLICAS, new_n, "field is immutable")]
    if old_n == 0 and new_n > 0 and int_or(get_path(obj, "status", "replicas"), 0) > 0:
        return [forbidden(REPLICAS, "scaling down is still in progress")]
    return []


WEBHOOK = StatefulSetWebhook()
