"""A ProvisioningRequest check's state from its request, and when to make the next request,
as Kueue v0.19.2's provisioning controller decides them.

The request's conditions map onto the check: Provisioned -> Ready (with the pod set updates
that steer pods onto the new capacity), Failed -> Retry while attempts are left (Kueue then
evicts and requeues after a doubling backoff; the next reservation makes attempt n+1), else
Rejected (Kueue deactivates the Workload); BookingExpired before admission is a failure the
same way; CapacityRevoked -> Rejected. A check whose config is missing waits as inactive; a
Workload that asks nothing of the managed resources needs no request and is Ready at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.wire import JSON

from ..lifecycle import condition_message, condition_true
from .config import CheckConfig
from .names import attempt_of, pod_template_name
from .requests import request_needed

PENDING, READY, RETRY, REJECTED = "Pending", "Ready", "Retry", "Rejected"
CHECK_INACTIVE = "the check is not active"
NO_REQUEST_NEEDED = "the provisioning request is not needed"
# Pods that consume the capacity name their request and its class (the autoscaler's keys).
CONSUME_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"


class NoRequestYet(Exception):
    """The Workload needs a request for this check and none exists: Kueue leaves every
    check as it is until one does."""


def _provisioned_condition(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (request.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Provisioned":
            return dict(cond)
    return None


def retry_backoff_s(retry_count: int, config: CheckConfig) -> int:
    """Seconds before the attempt after ``retry_count`` earlier retries: base doubling per
    retry, at most the max (Kueue's tiny jitter is lost to whole seconds)."""
    return int(min(config.backoff_base_s * 2 ** retry_count, config.backoff_max_s))


def next_check(workload: Mapping[str, Any], entry: Mapping[str, Any], config: CheckConfig | None,
               request: Mapping[str, Any] | None, check: str) -> JSON:
    """The check's entry in ``status.admissionChecks`` after reading its request (``entry``
    itself, copied, when nothing changes). Raises :class:`NoRequestYet` as described there."""
    out: JSON = dict(entry)
    state = str(out.get("state") or PENDING)
    if config is None:
        out.update(state=PENDING, message=CHECK_INACTIVE)
        return out
    if not request_needed(workload, config):
        if state != READY:
            out.update(state=READY, message=NO_REQUEST_NEEDED)
            out.pop("podSetUpdates", None)
        return out
    if request is None:
        raise NoRequestYet(check)
    name = str((workload.get("metadata") or {}).get("name"))
    attempt = attempt_of(str((request.get("metadata") or {}).get("name")), name, check) or 1
    retries = int(out.get("retryCount") or 0)
    admitted = condition_true(workload, "Admitted")
    failed, expired = condition_true(request, "Failed"), condition_true(request, "BookingExpired")
    if failed or (expired and not admitted and not condition_true(request, "CapacityRevoked")):
        why = condition_message(request, "Failed" if failed else "BookingExpired")
        if attempt <= config.backoff_limit:
            out["message"] = f"Retrying after {'failure' if failed else 'booking expired'}: {why}"
            if attempt > retries:  # not a retry already counted for an older request
                out.update(state=RETRY, requeueAfterSeconds=retry_backoff_s(retries, config))
        else:
            out.update(state=REJECTED, message=why)
    elif condition_true(request, "CapacityRevoked"):
        active = (workload.get("spec") or {}).get("active", True) is not False
        if active and not condition_true(workload, "Finished"):
            out.update(state=REJECTED, message=condition_message(request, "CapacityRevoked"))
    elif expired:
        pass  # an admitted Workload keeps running on capacity it already has
    elif condition_true(request, "Provisioned"):
        if state != READY:
            out.update(state=READY, message=condition_message(request, "Provisioned"),
                       podSetUpdates=pod_set_updates(workload, request, config))
    elif condition_true(request, "Accepted"):
        provisioned = _provisioned_condition(request)
        if provisioned is not None:  # the autoscaler's progress (an ETA) for the user
            out.update(state=PENDING, message=str(provisioned.get("message") or ""))
    else:
        out.update(state=PENDING, message="")
    return out


def pod_set_updates(workload: Mapping[str, Any], request: Mapping[str, Any],
                    config: CheckConfig) -> list[JSON]:
    """Per request pod set: annotations naming the request and class, and the node selector
    entries the config takes from the request's provisioningClassDetails."""
    req_meta, req_spec = request.get("metadata") or {}, request.get("spec") or {}
    req_name = str(req_meta.get("name"))
    by_template = {pod_template_name(req_name, str(ps.get("name") or "main")): str(ps.get("name") or "main")
                   for ps in (workload.get("spec") or {}).get("podSets") or ()}
    details = (request.get("status") or {}).get("provisioningClassDetails") or {}
    updates: list[JSON] = []
    for ps in req_spec.get("podSets") or ():
        update: JSON = {"name": by_template.get(str((ps.get("podTemplateRef") or {}).get("name")), ""),
                        "annotations": {CONSUME_ANNOTATION: req_name,
                                        CLASS_ANNOTATION: str(req_spec.get("provisioningClassName") or "")}}
        if config.node_selector_updates is not None:
            pairs = config.node_selector_updates
            update["nodeSelector"] = {key: str(details[detail]) for key, detail in pairs if detail in details}
        updates.append(update)
    return updates


def attempt_to_create(workload: Mapping[str, Any], entry: Mapping[str, Any] | None,
                      request: Mapping[str, Any] | None, check: str) -> int | None:
    """The attempt whose request is to be created now, or None: the first when there is none
    (numbered after the retries the check has counted, whose requests cleanup deleted); the
    next after a failed (or, before admission, expired) one while the check is Pending again."""
    if entry is not None and entry.get("state") == READY:
        return None
    retries = int((entry or {}).get("retryCount") or 0)
    if request is None:
        return retries + 1 if entry is not None else 1
    admitted = condition_true(workload, "Admitted")
    expired = condition_true(request, "BookingExpired") and not admitted
    if (condition_true(request, "Failed") or expired) and entry is not None and entry.get("state") == PENDING:
        name = str((workload.get("metadata") or {}).get("name"))
        return (attempt_of(str((request.get("metadata") or {}).get("name")), name, check) or 1) + 1
    return None
