"""The admission rules Kueue's Deployment and StatefulSet webhooks share.

Neither kind has a suspend field: Kueue holds their *pods* instead (the pod integration gates
them until admitted), and "suspended" for the update rules means that no replica is ready
(``status.readyReplicas == 0``). Both validate the queue name as a resource name, refuse the
elastic-job annotation and, under AdmissionGatedBy, the gates annotation's syntax on create and
any gate added on update; on update the queue name may change only while no replica is ready
and may never be removed, and the priority-class label may not be added while replicas are
ready nor ever removed.
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
from pykueue.manager.jobs.job_fields import annotations_of, get_path, priority_class_label
from pykueue.manager.jobs.names import annotation_path, dns_subdomain_errors, label_path
from pykueue.manager.jobs.validation import admission_gated_by_errors, elastic_enabled


def pod_template(obj: JSON) -> JSON:
    """``spec.template``, created (empty) when absent."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec.get("template"), dict):
        spec["template"] = {}
    template: JSON = spec["template"]
    return template


def template_annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    template = get_path(obj, "spec", "template")
    return annotations_of(template) if isinstance(template, dict) else {}


def ready_replicas(obj: Mapping[str, Any]) -> int:
    value = get_path(obj, "status", "readyReplicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _gates(value: str) -> list[str]:
    return [g.strip() for g in value.split(",") if g.strip()]


def _elastic_forbidden(gvk: str) -> FieldError:
    return forbidden(annotation_path(keys.ELASTIC_JOB), f'elastic job is not supported for "{gvk}"')


def create_errors(obj: Mapping[str, Any], ctx: AdmissionContext, gvk: str) -> list[FieldError]:
    """Kueue's ValidateCreate of both kinds. ``gvk``: as Kueue prints it
    (``apps/v1, Kind=Deployment``)."""
    errors: list[FieldError] = []
    queue = queue_name(obj)
    if queue:
        errors += dns_subdomain_errors(queue, label_path(keys.QUEUE_NAME))
    if elastic_enabled(obj, ctx):
        errors.append(_elastic_forbidden(gvk))
    gated = annotations_of(obj).get(keys.ADMISSION_GATED_BY)
    if gated is not None and ctx.gate("AdmissionGatedBy"):
        errors += admission_gated_by_errors(gated, annotation_path(keys.ADMISSION_GATED_BY))
    return errors


def update_errors(obj: Mapping[str, Any], old: Mapping[str, Any], ctx: AdmissionContext,
                  gvk: str) -> list[FieldError]:
    """Kueue's ValidateUpdate of a Deployment, and the part a StatefulSet's shares."""
    errors: list[FieldError] = []
    queue = queue_name(obj)
    if queue:
        errors += dns_subdomain_errors(queue, label_path(keys.QUEUE_NAME))
    if elastic_enabled(obj, ctx):
        errors.append(_elastic_forbidden(gvk))
    suspended = ready_replicas(old) == 0
    old_q = queue_name(old)
    if (not suspended or not queue) and queue != old_q:
        errors.append(invalid(label_path(keys.QUEUE_NAME), queue, "field is immutable"))
    ppath = label_path(keys.PRIORITY_CLASS)
    old_p, new_p = priority_class_label(old), priority_class_label(obj)
    if not suspended and not old_p and new_p:
        errors.append(invalid(ppath, new_p,
                              "WorkloadPriorityClass cannot be added to a non-suspended workload"))
    elif old_p and not new_p:
        errors.append(invalid(ppath, new_p, "WorkloadPriorityClass cannot be removed from a workload"))
    if ctx.gate("AdmissionGatedBy"):
        gpath = annotation_path(keys.ADMISSION_GATED_BY)
        old_g = annotations_of(old).get(keys.ADMISSION_GATED_BY, "")
        new_g = annotations_of(obj).get(keys.ADMISSION_GATED_BY, "")
        if not old_g and new_g:
            errors.append(forbidden(gpath, "cannot add admission gate after creation"))
        if old_g and new_g and [g for g in _gates(new_g) if g not in _gates(old_g)]:
            errors.append(forbidden(gpath, "can only remove gates, not add new ones"))
        errors += admission_gated_by_errors(new_g, gpath)
    return errors
