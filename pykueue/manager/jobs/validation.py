"""The checks every job kind's validating webhook runs on create and update (Kueue's
ValidateJobOnCreate / ValidateJobOnUpdate), worded as Kubernetes' field errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid, too_long
from pykueue.api.fields import FieldError
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.job_fields import annotations_of, labels, priority_class_label
from pykueue.manager.jobs.names import annotation_path, dns_subdomain_errors, label_path
from pykueue.manager.jobs.registry import integration_for

_GATE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def elastic_enabled(obj: Mapping[str, Any], ctx: AdmissionContext) -> bool:
    return ctx.gate("ElasticJobsViaWorkloadSlices") and annotations_of(obj).get(keys.ELASTIC_JOB) == "true"


def _prebuilt(obj: Mapping[str, Any], ctx: AdmissionContext) -> tuple[str, str]:
    """(value, path) of the prebuilt workload name, label first then annotation."""
    value = labels(obj).get(keys.PREBUILT_WORKLOAD_NAME, "")
    if value:
        return value, label_path(keys.PREBUILT_WORKLOAD_NAME)
    value = annotations_of(obj).get(keys.PREBUILT_WORKLOAD_NAME, "")
    if value and (ctx.gate("WorkloadIdentifierAnnotations") or len(value) > 63):
        return value, annotation_path(keys.PREBUILT_WORKLOAD_NAME)
    return "", ""


def admission_gated_by_errors(value: str, path: str) -> list[FieldError]:
    if not value.strip():
        return []
    errors: list[FieldError] = []
    seen: set[str] = set()
    for gate in (g.strip() for g in value.split(",")):
        if not gate:
            errors.append(invalid(path, value, "gate names must not be empty"))
        elif len(gate) > 63:
            errors.append(too_long(path, f"gate {gate!r} may not be more than 63 bytes"))
        elif not _GATE_NAME.match(gate):
            errors.append(invalid(path, gate, 'must be a domain-prefixed path (such as "acme.io/foo")'))
        elif gate in seen:
            errors.append(invalid(path, gate, "duplicate gate"))
        seen.add(gate)
    return errors


def _gates(value: str) -> list[str]:
    return [g.strip() for g in value.split(",") if g.strip()]


def validate_job_on_create(
    obj: Mapping[str, Any], ctx: AdmissionContext, group: str, kind: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    integration = integration_for(group, kind)
    queue = queue_name(obj)
    if queue:
        errors += dns_subdomain_errors(queue, label_path(keys.QUEUE_NAME))
    prebuilt, path = _prebuilt(obj, ctx)
    if prebuilt:
        errors += dns_subdomain_errors(prebuilt, path)
        if integration is None or not integration.prebuilt:
            errors.append(forbidden(path, f"prebuilt workload is not supported for {kind}"))
    max_exec = labels(obj).get(keys.MAX_EXEC_TIME_SECONDS)
    if max_exec is not None:
        try:
            if int(max_exec) <= 0:
                errors.append(
                    invalid(label_path(keys.MAX_EXEC_TIME_SECONDS), max_exec, "should be greater than 0")
                )
        except ValueError:
            errors.append(
                invalid(
                    label_path(keys.MAX_EXEC_TIME_SECONDS),
                    max_exec,
                    f"strconv.Atoi: parsing {json.dumps(max_exec)}: invalid syntax",
                )
            )
    if elastic_enabled(obj, ctx) and (integration is None or not integration.elastic):
        errors.append(
            forbidden(annotation_path(keys.ELASTIC_JOB), f"elastic jobs are not supported for {kind}")
        )
    if ctx.gate("AdmissionGatedBy"):
        gated = annotations_of(obj).get(keys.ADMISSION_GATED_BY)
        if gated is not None:
            errors += admission_gated_by_errors(gated, annotation_path(keys.ADMISSION_GATED_BY))
    return errors


def validate_job_on_update(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    ctx: AdmissionContext,
    *,
    new_suspended: bool,
    old_suspended: bool,
) -> list[FieldError]:
    errors: list[FieldError] = []
    qpath = label_path(keys.QUEUE_NAME)
    old_q, new_q = queue_name(old), queue_name(new)
    if not new_suspended and old_q != new_q:
        errors.append(invalid(qpath, new_q, "field is immutable"))
    elif old_q and not new_q and ctx.facts.default_local_queue:
        errors.append(
            invalid(qpath, new_q, 'must not be empty: a LocalQueue "default" exists in the namespace')
        )
    old_pre, _ = _prebuilt(old, ctx)
    new_pre, pre_path = _prebuilt(new, ctx)
    if not (new_suspended or elastic_enabled(old, ctx)) and old_pre != new_pre:
        errors.append(
            invalid(pre_path or label_path(keys.PREBUILT_WORKLOAD_NAME), new_pre, "field is immutable")
        )
    mpath = label_path(keys.MAX_EXEC_TIME_SECONDS)
    old_m, new_m = labels(old).get(keys.MAX_EXEC_TIME_SECONDS), labels(new).get(keys.MAX_EXEC_TIME_SECONDS)
    if old_m != new_m and not (old_suspended and new_suspended):
        errors.append(invalid(mpath, new_m, "field is immutable"))
    ppath = label_path(keys.PRIORITY_CLASS)
    old_p, new_p = priority_class_label(old), priority_class_label(new)
    if old_p and not new_p:
        errors.append(invalid(ppath, new_p, "the priority class label cannot be removed"))
    elif not old_p and new_p and not new_suspended:
        errors.append(invalid(ppath, new_p, "the priority class label cannot be added to a running job"))
    if elastic_enabled(old, ctx) != elastic_enabled(new, ctx):
        errors.append(
            invalid(
                annotation_path(keys.ELASTIC_JOB),
                annotations_of(new).get(keys.ELASTIC_JOB),
                "field is immutable",
            )
        )
    if ctx.gate("AdmissionGatedBy"):
        gpath = annotation_path(keys.ADMISSION_GATED_BY)
        old_g = annotations_of(old).get(keys.ADMISSION_GATED_BY, "")
        new_g = annotations_of(new).get(keys.ADMISSION_GATED_BY, "")
        if not old_g.strip() and new_g.strip():
            errors.append(forbidden(gpath, "the annotation cannot be added after creation"))
        elif old_g.strip() and new_g.strip():
            added = [g for g in _gates(new_g) if g not in _gates(old_g)]
            if added:
                errors.append(forbidden(gpath, f"gates can only be removed, not added: {', '.join(added)}"))
    return errors
