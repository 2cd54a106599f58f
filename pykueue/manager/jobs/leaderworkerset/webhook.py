"""Admission of leaderworkerset.x-k8s.io/v1 LeaderWorkerSets (CREATE and UPDATE defaulting).

An LWS has no suspend field: Kueue holds its *pods* instead. When the LWS is managed, both
pod templates are stamped with the queue and priority labels and the
``pod-suspending-parent`` annotation, so every pod the StatefulSets create is gated by the
pod webhook and grouped per replica by the LWS reconciler: one Workload per group, and a
leader never runs without quota (the v0.12 fix for queue-less LWSs under
manageJobsWithoutQueueName: the decision is :func:`workload_should_be_suspended` on the LWS,
never a per-pod one). Defaulting also runs on UPDATE, so a queue change is re-stamped.

"Suspended" for update rules means no replica is ready (``status.readyReplicas == 0``).
"""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_default_local_queue, apply_default_priority_class
from pykueue.manager.jobs.job_fields import (
    annotations_of,
    get_path,
    int_or,
    priority_class_label,
    set_annotation,
    set_label,
)
from pykueue.manager.jobs.names import annotation_path, dns_subdomain_errors, label_path
from pykueue.manager.jobs.ownership import workload_should_be_suspended
from pykueue.manager.jobs.pod_shape import shape_errors
from pykueue.manager.jobs.tas_annotations import tas_podset_errors
from pykueue.manager.jobs.validation import admission_gated_by_errors, elastic_enabled

INTEGRATION = "leaderworkerset.x-k8s.io/leaderworkerset"
LEADER = "spec.leaderWorkerTemplate.leaderTemplate"
WORKER = "spec.leaderWorkerTemplate.workerTemplate"
MAX_REPLICAS = 1_000_000


def _lwt(obj: JSON) -> dict[str, Any]:
    lwt = get_path(obj, "spec", "leaderWorkerTemplate")
    return lwt if isinstance(lwt, dict) else {}


def _template(obj: JSON, which: str) -> dict[str, Any] | None:
    tmpl = _lwt(obj).get(which)
    return tmpl if isinstance(tmpl, dict) else None


def group_size(obj: JSON) -> int:
    return int_or(_lwt(obj).get("size"), 1)


def is_suspended(obj: JSON) -> bool:
    return int_or(get_path(obj, "status", "readyReplicas"), 0) == 0


class LeaderWorkerSetWebhook:
    integration = INTEGRATION
    group, kind = "leaderworkerset.x-k8s.io", "LeaderWorkerSet"

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_default_local_queue(obj, ctx)
        apply_default_priority_class(obj, ctx)
        if not workload_should_be_suspended(obj, ctx):
            return obj
        queue, priority = queue_name(obj), priority_class_label(obj)
        leader = _template(obj, "leaderTemplate")
        for which in ("leaderTemplate", "workerTemplate"):
            tmpl = _template(obj, which)
            if tmpl is None:
                if which == "leaderTemplate":
                    continue
                tmpl = obj.setdefault("spec", {}).setdefault("leaderWorkerTemplate", {}).setdefault(which, {})
            if queue:
                set_label(tmpl, keys.QUEUE_NAME, queue)
            if priority:
                set_label(tmpl, keys.PRIORITY_CLASS, priority)
            set_annotation(tmpl, keys.POD_SUSPENDING_PARENT, INTEGRATION)
            set_annotation(tmpl, keys.POD_GROUP_SERVING, "true")
            if (
                which == "workerTemplate"
                and leader is not None
                and ctx.gate("TopologyAwareScheduling")
                and keys.PODSET_GROUP_NAME not in annotations_of(tmpl)
            ):
                set_annotation(tmpl, keys.POD_INDEX_OFFSET, "1")
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        errors = self._create(obj, ctx)
        if old is not None:
            errors += self._update(obj, old, ctx)
        return errors

    def _create(self, obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        queue = queue_name(obj)
        if queue:
            errors += dns_subdomain_errors(queue, label_path(keys.QUEUE_NAME))
        if elastic_enabled(obj, ctx):
            errors.append(
                forbidden(
                    annotation_path(keys.ELASTIC_JOB), "elastic jobs are not supported for LeaderWorkerSet"
                )
            )
        gated = annotations_of(obj).get(keys.ADMISSION_GATED_BY)
        if gated is not None and ctx.gate("AdmissionGatedBy"):
            errors += admission_gated_by_errors(gated, annotation_path(keys.ADMISSION_GATED_BY))
        replicas = get_path(obj, "spec", "replicas")
        replicas = 1 if replicas is None else replicas
        if not isinstance(replicas, int) or not 0 <= replicas <= MAX_REPLICAS:
            errors.append(invalid("spec.replicas", replicas, f"must be between 0 and {MAX_REPLICAS}"))
        errors += self._topology(obj, ctx)
        return errors

    def _topology(self, obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        if not ctx.gate("TopologyAwareScheduling"):
            return []
        leader, worker = _template(obj, "leaderTemplate"), _template(obj, "workerTemplate")
        size = group_size(obj)
        members: list[tuple[str, dict[str, Any], int]] = []
        if leader is not None:
            members.append((f"{LEADER}.metadata", leader, 1))
        if worker is not None:
            members.append((f"{WORKER}.metadata", worker, size - 1 if leader is not None else size))
        errors: list[FieldError] = []
        for base, tmpl, count in members:
            meta = tmpl.get("metadata")
            errors += tas_podset_errors(meta if isinstance(meta, dict) else {}, base, ctx, count)
        grouped = [
            (base, annotations_of(t), count)
            for base, t, count in members
            if keys.PODSET_GROUP_NAME in annotations_of(t)
        ]
        if grouped:
            errors += _podset_group_errors(grouped, len(members))
        return errors

    def _update(self, obj: JSON, old: JSON, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        suspended = is_suspended(old)
        qpath = label_path(keys.QUEUE_NAME)
        old_q, new_q = queue_name(old), queue_name(obj)
        if old_q and not new_q:
            errors.append(invalid(qpath, new_q, "the queue-name label cannot be removed"))
        elif old_q != new_q and not suspended:
            errors.append(invalid(qpath, new_q, "field is immutable while replicas are ready"))
        ppath = label_path(keys.PRIORITY_CLASS)
        old_p, new_p = priority_class_label(old), priority_class_label(obj)
        if old_p and not new_p:
            errors.append(invalid(ppath, new_p, "the priority class label cannot be removed"))
        elif not old_p and new_p and not suspended:
            errors.append(
                invalid(ppath, new_p, "the priority class label cannot be added while replicas are ready")
            )
        if ctx.gate("AdmissionGatedBy"):
            old_g = annotations_of(old).get(keys.ADMISSION_GATED_BY, "")
            new_g = annotations_of(obj).get(keys.ADMISSION_GATED_BY, "")
            gpath = annotation_path(keys.ADMISSION_GATED_BY)
            if not old_g.strip() and new_g.strip():
                errors.append(forbidden(gpath, "the annotation cannot be added after creation"))
            elif old_g.strip() and new_g.strip():
                added = [
                    g
                    for g in new_g.split(",")
                    if g.strip() and g.strip() not in [o.strip() for o in old_g.split(",")]
                ]
                if added:
                    errors.append(forbidden(gpath, "gates can only be removed, not added"))
        if workload_should_be_suspended(obj, ctx):
            errors += self._shape(obj, old, ctx)
        return errors

    def _shape(self, obj: JSON, old: JSON, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        old_leader, new_leader = _template(old, "leaderTemplate"), _template(obj, "leaderTemplate")
        if (old_leader is None) != (new_leader is None):
            errors.append(invalid(LEADER, None if new_leader is None else "set", "field is immutable"))
        for base, a, b in (
            (LEADER, old_leader, new_leader),
            (WORKER, _template(old, "workerTemplate"), _template(obj, "workerTemplate")),
        ):
            if a is None or b is None:
                continue
            spec_a, spec_b = a.get("spec"), b.get("spec")
            errors += shape_errors(
                spec_a if isinstance(spec_a, dict) else {},
                spec_b if isinstance(spec_b, dict) else {},
                f"{base}.spec",
            )
        if ctx.gate("LWSImmutableGroupSize") and group_size(old) != group_size(obj):
            errors.append(invalid("spec.leaderWorkerTemplate.size", group_size(obj), "field is immutable"))
        return errors


def _podset_group_errors(grouped: list[tuple[str, dict[str, str], int]], members: int) -> list[FieldError]:
    """A podset group must pair the leader with the workers, share one topology request, and
    have a member of count 1 (the leader)."""
    errors: list[FieldError] = []
    paths = [annotation_path(keys.PODSET_GROUP_NAME, base) for base, _, _ in grouped]
    names = {ann[keys.PODSET_GROUP_NAME] for _, ann, _ in grouped}
    if len(grouped) != 2 or members != 2 or len(names) != 1:
        for (_, ann, _), path in zip(grouped, paths, strict=True):
            errors.append(
                invalid(
                    path,
                    ann[keys.PODSET_GROUP_NAME],
                    "a podset group must contain exactly 2 podsets (leader and workers)",
                )
            )
        return errors
    if not any(count == 1 for _, _, count in grouped):
        for (_, ann, _), path in zip(grouped, paths, strict=True):
            errors.append(
                invalid(path, ann[keys.PODSET_GROUP_NAME], "one podset of the group must have count 1")
            )
    for key in (keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY):
        values = [ann.get(key) for _, ann, _ in grouped]
        if any(v is not None for v in values) and len(set(values)) != 1:
            for base, ann, _ in grouped:
                errors.append(
                    invalid(
                        annotation_path(key, base),
                        ann.get(key),
                        "podsets of one group must request the same topology",
                    )
                )
    return errors


WEBHOOK = LeaderWorkerSetWebhook()
