"""Admission of core/v1 Pods, as used by LeaderWorkerSet groups (Kueue ``pod_webhook.go``).

A pod stamped ``pod-suspending-parent`` by its owner's webhook (an LWS template) is held
with the ``admission`` scheduling gate and a ``role-hash``, and nothing else: its group,
Workload and ``managed`` label come from the owner's reconciler. Only a standalone pod
(queue name of its own, no managed ancestor) is itself marked ``managed`` and given the
finalizer -- marking parent-held pods managed is what made v0.11 create one Workload per
LWS pod. Pods that carry none of Kueue's markers are left alone, so pods of ordinary Jobs
and Deployments pass through untouched.
"""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid, required
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_default_local_queue, apply_default_priority_class
from pykueue.manager.jobs.job_fields import annotations_of, get_path, labels, set_annotation, set_label
from pykueue.manager.jobs.names import annotation_path, dns_subdomain_errors, label_path
from pykueue.manager.jobs.ownership import find_managed_ancestor, may_be_managed, namespace_selected
from pykueue.manager.jobs.pod_shape import role_hash
from pykueue.manager.jobs.prebuilt import prebuilt_workload_name, prebuilt_workload_path
from pykueue.manager.jobs.tas_annotations import tas_podset_errors
from pykueue.manager.jobs.validation import validate_job_on_create, validate_job_on_update

KUEUE_LABELS = (keys.QUEUE_NAME, keys.MANAGED, keys.POD_GROUP_NAME)
KUEUE_ANNOTATIONS = (keys.POD_SUSPENDING_PARENT, keys.POD_GROUP_NAME, keys.POD_GROUP_TOTAL_COUNT)


def _gates(pod: JSON) -> list[Any]:
    spec = pod.setdefault("spec", {})
    if not isinstance(spec.get("schedulingGates"), list):
        spec["schedulingGates"] = []
    gates: list[Any] = spec["schedulingGates"]
    return gates


def _add_gate(pod: JSON, name: str) -> None:
    gates = _gates(pod)
    if not any(isinstance(g, dict) and g.get("name") == name for g in gates):
        gates.append({"name": name})


def is_suspended(pod: JSON) -> bool:
    gates = get_path(pod, "spec", "schedulingGates")
    gated = isinstance(gates, list) and any(
        isinstance(g, dict) and g.get("name") == keys.ADMISSION_GATE for g in gates
    )
    return gated or get_path(pod, "status", "phase") in ("Succeeded", "Failed")


def kueue_pod(pod: JSON) -> bool:
    """Does the pod carry any of Kueue's markers? Others are not ours to validate."""
    pod_labels, pod_annotations = labels(pod), annotations_of(pod)
    return any(k in pod_labels for k in KUEUE_LABELS) or any(k in pod_annotations for k in KUEUE_ANNOTATIONS)


def group_name(pod: JSON, identifier_annotations: bool) -> tuple[str, str]:
    """The pod's group name and the field it is read from, as Kueue's GetPodGroupName: the
    annotation first when the WorkloadIdentifierAnnotations gate is on, else the label."""
    value = annotations_of(pod).get(keys.POD_GROUP_NAME, "")
    if identifier_annotations and value:
        return value, annotation_path(keys.POD_GROUP_NAME)
    return labels(pod).get(keys.POD_GROUP_NAME, ""), label_path(keys.POD_GROUP_NAME)


class PodWebhook:
    integration = "pod"
    group, kind = "", "Pod"

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        held_by_parent = keys.POD_SUSPENDING_PARENT in annotations_of(obj)
        if not held_by_parent:
            if not ctx.policy.explicitly_enabled("pod"):
                # Only implied by LWS: plain pods are not Kueue's (Kueue gates them and then
                # never admits them; leaving them alone is what its reconciler's Skip means).
                return obj
            # Pod-based kinds treat the namespace selector as a hard filter, even with a queue name.
            if ctx.policy.managed_jobs_namespace_selector is not None and not namespace_selected(
                ctx.policy, ctx.facts.namespace_labels
            ):
                return obj
            if not may_be_managed(obj, ctx.policy, ctx.facts.default_local_queue):
                return obj  # not Kueue's whoever owns it: its owners are never read
            if find_managed_ancestor(obj, ctx) is not None:
                return obj
            apply_default_local_queue(obj, ctx)
            apply_default_priority_class(obj, ctx)
            if not (queue_name(obj) or ctx.policy.manage_jobs_without_queue_name):
                return obj
            set_label(obj, keys.MANAGED, "true")
            meta = obj.setdefault("metadata", {})
            finalizers = meta.get("finalizers") if isinstance(meta.get("finalizers"), list) else []
            if keys.MANAGED_POD_FINALIZER not in finalizers:
                meta["finalizers"] = [*finalizers, keys.MANAGED_POD_FINALIZER]
        _add_gate(obj, keys.ADMISSION_GATE)
        if ctx.gate("TopologyAwareScheduling"):
            index_label = annotations_of(obj).get(keys.POD_GROUP_POD_INDEX_LABEL)
            if index_label and index_label in labels(obj):
                set_label(obj, keys.POD_GROUP_POD_INDEX, labels(obj)[index_label])
            _add_gate(obj, keys.TOPOLOGY_GATE)
        if not annotations_of(obj).get(keys.ROLE_HASH):
            spec = obj.get("spec")
            set_annotation(obj, keys.ROLE_HASH, role_hash(spec if isinstance(spec, dict) else {}))
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        if not kueue_pod(obj) and (old is None or not kueue_pod(old)):
            return []
        errors = validate_job_on_create(obj, ctx, self.group, self.kind)
        managed = labels(obj).get(keys.MANAGED)
        if managed is not None and managed != "true":
            errors.append(forbidden(label_path(keys.MANAGED), 'managed label value can only be "true"'))
        annotations_gate = ctx.gate("WorkloadIdentifierAnnotations")
        name, name_path = group_name(obj, annotations_gate)
        total = annotations_of(obj).get(keys.POD_GROUP_TOTAL_COUNT)
        total_path = annotation_path(keys.POD_GROUP_TOTAL_COUNT)
        if name and total is None:
            errors.append(required(total_path, "both the group name and the total count must be set"))
        if total is not None and not name:
            errors.append(required(name_path, "both the group name and the total count must be set"))
        if total is not None:
            try:
                if int(total) < 1:
                    errors.append(invalid(total_path, total, "should be greater than or equal to 1"))
            except ValueError:
                errors.append(invalid(total_path, total, "must be an integer"))
        if name:
            errors += dns_subdomain_errors(name, name_path)
            # Kueue's validatePrebuiltWorkloadName: read and named as every kind reads it.
            prebuilt = prebuilt_workload_name(obj, annotations_gate)
            if prebuilt and prebuilt != name:
                errors.append(invalid(prebuilt_workload_path(obj, annotations_gate), prebuilt,
                                      "prebuilt workload and pod group should be equal"))
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        errors += tas_podset_errors(meta or {}, "metadata", ctx)
        if old is not None:
            errors += validate_job_on_update(
                old, obj, ctx, new_suspended=is_suspended(obj), old_suspended=is_suspended(old),
                group=self.group, kind=self.kind,
            )
            old_name, _ = group_name(old, annotations_gate)
            if old_name and old_name != name:
                errors.append(invalid(name_path, name, "field is immutable"))
            old_retry = annotations_of(old).get(keys.RETRIABLE_IN_GROUP)
            if old_retry == "false" and annotations_of(obj).get(keys.RETRIABLE_IN_GROUP) != "false":
                errors.append(
                    forbidden(
                        annotation_path(keys.RETRIABLE_IN_GROUP), "cannot change once set to false"
                    )
                )
        return errors


WEBHOOK = PodWebhook()
