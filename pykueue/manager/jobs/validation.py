"""The checks every job kind's validating webhook runs on create and update (Kueue's
ValidateJobOnCreate / ValidateJobOnUpdate), worded as Kubernetes' field errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid, too_long
from pykueue.api.fields import FieldError
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.job_fields import annotations_of, labels, priority_class_label
from pykueue.manager.jobs.names import annotation_path, dns_subdomain_errors, label_path, subdomain_problems
from pykueue.manager.jobs.prebuilt import (
    prebuilt_workload_name,
    prebuilt_workload_name_errors,
    prebuilt_workload_path,
)
from pykueue.manager.jobs.registry import integration_for

IMMUTABLE = "field is immutable"
_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")
_HTTP_PATH_FORMAT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_GO_INT = re.compile(r"[+-]?[0-9]+")
QUEUE_PATH = label_path(keys.QUEUE_NAME)
GATED_BY_PATH = annotation_path(keys.ADMISSION_GATED_BY)


def elastic_enabled(obj: Mapping[str, Any], ctx: AdmissionContext) -> bool:
    return ctx.gate("ElasticJobsViaWorkloadSlices") and annotations_of(obj).get(keys.ELASTIC_JOB) == "true"


def _identifier_annotations(ctx: AdmissionContext) -> bool:
    return ctx.gate("WorkloadIdentifierAnnotations")


def _label_queue(obj: Mapping[str, Any]) -> str:
    """The queue-name label, the only place Kueue's validation reads the queue from."""
    return labels(obj).get(keys.QUEUE_NAME, "")


def gvk_string(obj: Mapping[str, Any], group: str, kind: str) -> str:
    """The kind as Go prints a GroupVersionKind (``batch/v1, Kind=Job``; ``/v1, Kind=Pod``)."""
    integration = integration_for(group, kind)
    version = integration.version if integration else str(obj.get("apiVersion") or "").rpartition("/")[2]
    return f"{group}/{version}, Kind={kind}"


def queue_name_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """Kueue's ValidateQueueName: a queue-name label, even an empty one, names a LocalQueue."""
    queue = labels(obj).get(keys.QUEUE_NAME)
    return [] if queue is None else dns_subdomain_errors(queue, QUEUE_PATH)


def elastic_annotation_errors(
    obj: Mapping[str, Any], ctx: AdmissionContext, group: str, kind: str
) -> list[FieldError]:
    """Kueue's ValidateElasticJobAnnotation: only kinds that scale by slices may ask for it."""
    integration = integration_for(group, kind)
    if not elastic_enabled(obj, ctx) or (integration is not None and integration.elastic):
        return []
    gvk = gvk_string(obj, group, kind)
    detail = f"elastic job is not supported for {json.dumps(gvk)}"
    return [forbidden(annotation_path(keys.ELASTIC_JOB), detail)]


def _csv(value: str) -> list[str]:
    """Kueue's csv.Parse: comma-separated names, trimmed; nothing for a blank value."""
    return [] if not value.strip() else [part.strip() for part in value.split(",")]


def _domain_prefixed_path_errors(path: str, value: str) -> list[FieldError]:
    """The apiserver's IsDomainPrefixedPath (the check of a Job's ``spec.managedBy``)."""
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errors = [invalid(path, host, problem) for problem in subdomain_problems(host)]
    if not _HTTP_PATH.fullmatch(rest):
        detail = f"Invalid path (regex used for validation is '{_HTTP_PATH_FORMAT}')"
        errors.append(invalid(path, rest, detail))
    return errors


def admission_gated_by_errors(value: str, path: str = GATED_BY_PATH) -> list[FieldError]:
    """The format of an ``admission-gated-by`` value (Kueue's
    validateAdmissionGatedByAnnotationFormat): domain-prefixed gate names, each once."""
    if value == "":
        return []
    errors: list[FieldError] = []
    seen: set[str] = set()
    for gate in _csv(value):
        if gate == "":
            errors.append(invalid(path, value, "cannot contain empty gate names"))
            continue
        if gate in seen:
            errors.append(invalid(path, value, f"duplicate gate name: {gate}"))
            continue
        seen.add(gate)
        errors += _domain_prefixed_path_errors(path, gate)
        if len(gate.encode()) > 63:
            errors.append(too_long(path, "may not be more than 63 bytes"))
    return errors


def admission_gated_by_update_errors(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """Kueue's ValidateAdmissionGatedByAnnotationOnUpdate: gates can be removed, never added."""
    old_value = annotations_of(old).get(keys.ADMISSION_GATED_BY, "")
    new_value = annotations_of(new).get(keys.ADMISSION_GATED_BY, "")
    errors: list[FieldError] = []
    if old_value == "" and new_value != "":
        errors.append(forbidden(GATED_BY_PATH, "cannot add admission gate after creation"))
    if old_value != "" and new_value != "":
        before = _csv(old_value)
        if any(gate not in before for gate in _csv(new_value)):
            errors.append(forbidden(GATED_BY_PATH, "can only remove gates, not add new ones"))
    return errors + admission_gated_by_errors(new_value)


def priority_class_update_errors(
    suspended: bool, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[FieldError]:
    """Kueue's ValidateUpdateForWorkloadPriorityClassName."""
    path = label_path(keys.PRIORITY_CLASS)
    old_p, new_p = priority_class_label(old), priority_class_label(new)
    if not suspended and not old_p and new_p:
        return [invalid(path, new_p, "WorkloadPriorityClass cannot be added to a non-suspended workload")]
    if not new_p and old_p:
        return [invalid(path, new_p, "WorkloadPriorityClass cannot be removed from a workload")]
    return []


def _prebuilt_errors(
    obj: Mapping[str, Any], ctx: AdmissionContext, group: str, kind: str
) -> list[FieldError]:
    """Kueue's validateCreateForPrebuiltWorkload."""
    annotations_gate = _identifier_annotations(ctx)
    errors = prebuilt_workload_name_errors(obj, annotations_gate)
    integration = integration_for(group, kind)
    if prebuilt_workload_name(obj, annotations_gate) and (integration is None or not integration.prebuilt):
        gvk = json.dumps(gvk_string(obj, group, kind))
        errors.append(forbidden(prebuilt_workload_path(obj, annotations_gate), f"Is not supported for {gvk}"))
    return errors


def _max_exec_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """Kueue's validateCreateForMaxExecTime, with Go's strconv.Atoi wording."""
    value = labels(obj).get(keys.MAX_EXEC_TIME_SECONDS)
    if value is None:
        return []
    path = label_path(keys.MAX_EXEC_TIME_SECONDS)
    if not _GO_INT.fullmatch(value):
        return [invalid(path, value, f"strconv.Atoi: parsing {json.dumps(value)}: invalid syntax")]
    seconds = int(value)
    if not -(2**63) <= seconds < 2**63:
        return [invalid(path, value, f"strconv.Atoi: parsing {json.dumps(value)}: value out of range")]
    return [invalid(path, seconds, "should be greater than 0")] if seconds <= 0 else []


def validate_job_on_create(
    obj: Mapping[str, Any], ctx: AdmissionContext, group: str, kind: str
) -> list[FieldError]:
    """Kueue's ValidateJobOnCreate, in its order."""
    errors = queue_name_errors(obj)
    errors += _prebuilt_errors(obj, ctx, group, kind)
    errors += _max_exec_errors(obj)
    errors += elastic_annotation_errors(obj, ctx, group, kind)
    if ctx.gate("AdmissionGatedBy"):
        errors += admission_gated_by_errors(annotations_of(obj).get(keys.ADMISSION_GATED_BY, ""))
    return errors


def validate_job_on_update(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    ctx: AdmissionContext,
    *,
    new_suspended: bool,
    old_suspended: bool,
    group: str,
    kind: str,
) -> list[FieldError]:
    """Kueue's ValidateJobOnUpdate, in its order. ``group``/``kind`` name the kind in the
    prebuilt check a suspended (or elastic) job gets again."""
    errors: list[FieldError] = []
    old_q, new_q = _label_queue(old), _label_queue(new)
    if not new_suspended and old_q != new_q:
        errors.append(invalid(QUEUE_PATH, new_q, IMMUTABLE))
    if not new_q and old_q and ctx.facts.default_local_queue:
        errors.append(invalid(QUEUE_PATH, "", "queue-name must not be empty in namespace with default queue"))
    if new_suspended or elastic_enabled(old, ctx):
        errors += _prebuilt_errors(new, ctx, group, kind)
    else:
        annotations_gate = _identifier_annotations(ctx)
        new_pre = prebuilt_workload_name(new, annotations_gate)
        if new_pre != prebuilt_workload_name(old, annotations_gate):
            errors.append(invalid(prebuilt_workload_path(new, annotations_gate), new_pre, IMMUTABLE))
    if not new_suspended or not old_suspended:
        old_m = labels(old).get(keys.MAX_EXEC_TIME_SECONDS, "")
        new_m = labels(new).get(keys.MAX_EXEC_TIME_SECONDS, "")
        if old_m != new_m:
            errors.append(invalid(label_path(keys.MAX_EXEC_TIME_SECONDS), new_m, IMMUTABLE))
    errors += priority_class_update_errors(new_suspended, old, new)
    if elastic_enabled(old, ctx) != elastic_enabled(new, ctx):
        errors.append(invalid(annotation_path(keys.ELASTIC_JOB), elastic_enabled(new, ctx), IMMUTABLE))
    if ctx.gate("AdmissionGatedBy"):
        errors += admission_gated_by_update_errors(old, new)
    return errors


def validate_job_rerunning_creation_rules(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, ctx: AdmissionContext, *, group: str, kind: str,
    suspended: Callable[[Mapping[str, Any]], bool],
) -> list[FieldError]:
    """The shared rules of a kind whose webhook runs the creation rules on every update too
    (Kueue's JobSet and TrainJob webhooks): on update the update rules first, then those."""
    errors: list[FieldError] = []
    if old is not None:
        errors += validate_job_on_update(old, obj, ctx, new_suspended=suspended(obj),
                                         old_suspended=suspended(old), group=group, kind=kind)
    return errors + validate_job_on_create(obj, ctx, group, kind)
