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
from pykueue.api.field_errors import invalid
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.core.jobs_to_workloads import queue_name
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_default_local_queue, apply_default_priority_class
from pykueue.manager.jobs.job_fields import (
    annotations_of,
    get_path,
    int_or,
    labels,
    priority_class_label,
    set_annotation,
    set_label,
)
from pykueue.manager.jobs.names import label_path
from pykueue.manager.jobs.ownership import workload_should_be_suspended
from pykueue.manager.jobs.pod_shape import shape_errors
from pykueue.manager.jobs.tas_annotations import podset_group_errors, tas_podset_errors
from pykueue.manager.jobs.validation import (
    admission_gated_by_errors,
    admission_gated_by_update_errors,
    elastic_annotation_errors,
    priority_class_update_errors,
    queue_name_errors,
)

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
        """Kueue's validateCreate of an LWS, in its order."""
        errors = queue_name_errors(obj)
        errors += elastic_annotation_errors(obj, ctx, self.group, self.kind)
        replicas = get_path(obj, "spec", "replicas")
        replicas = 1 if replicas is None else replicas
        if not isinstance(replicas, int) or not 0 <= replicas <= MAX_REPLICAS:
            errors.append(invalid("spec.replicas", replicas, f"must be between 0 and {MAX_REPLICAS}"))
        if ctx.gate("AdmissionGatedBy"):
            errors += admission_gated_by_errors(annotations_of(obj).get(keys.ADMISSION_GATED_BY, ""))
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
        # The pod sets' groups, by the rules shared with every kind (ValidatePodSetGroupingTopology).
        return errors + podset_group_errors([(base, annotations_of(t), count) for base, t, count in members])

    def _update(self, obj: JSON, old: JSON, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        suspended = is_suspended(old)
        old_q = labels(old).get(keys.QUEUE_NAME, "")
        new_q = labels(obj).get(keys.QUEUE_NAME, "")
        # Kueue: the queue-name may change only while no replica is ready, and never to none.
        if (not suspended or not new_q) and old_q != new_q:
            errors.append(invalid(label_path(keys.QUEUE_NAME), new_q, "field is immutable"))
        errors += priority_class_update_errors(suspended, old, obj)
        if ctx.gate("AdmissionGatedBy"):
            errors += admission_gated_by_update_errors(old, obj)
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


WEBHOOK = LeaderWorkerSetWebhook()
