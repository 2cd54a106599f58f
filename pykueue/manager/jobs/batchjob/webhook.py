"""Admission of batch/v1 Jobs: Kueue's ``job_webhook.go`` rules on top of the framework.

Defaulting (CREATE): default LocalQueue, default priority class, ``spec.suspend`` when
Kueue manages the Job, MultiKueue ``spec.managedBy``, the elastic-job scheduling gate.
Validation adds the Job-only annotations (partial admission, completions =
parallelism) and their update rules to the shared ones.
"""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.api.field_errors import forbidden, invalid
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.job_fields import annotations_of, get_path, int_or
from pykueue.manager.jobs.names import annotation_path
from pykueue.manager.jobs.tas_annotations import tas_podset_errors
from pykueue.manager.jobs.validation import elastic_enabled, validate_job_on_create, validate_job_on_update

OWN_CONTROLLER = "kubernetes.io/job-controller"
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def is_suspended(job: JSON) -> bool:
    """Suspended, and not merely being stopped by Kueue (the ``stopping`` annotation)."""
    return get_path(job, "spec", "suspend") is True and annotations_of(job).get(keys.STOPPING) != "true"


def _spec(job: JSON) -> JSON:
    """The Job's ``spec`` (created when absent): its ``suspend`` and ``managedBy`` live there."""
    spec: JSON = job.setdefault("spec", {})
    return spec


def pods_count(job: JSON) -> int:
    parallelism = int_or(get_path(job, "spec", "parallelism"), 1)
    completions = get_path(job, "spec", "completions")
    return min(parallelism, completions) if isinstance(completions, int) else parallelism


def parse_bool(text: str) -> bool | None:
    return True if text in _TRUE else False if text in _FALSE else None


class JobWebhook:
    integration = "batch/job"
    group, kind = "batch", "Job"

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        spec = apply_job_defaults(obj, ctx, _spec, is_suspended, OWN_CONTROLLER)
        if elastic_enabled(obj, ctx):
            pod_spec = spec.setdefault("template", {}).setdefault("spec", {})
            gates = pod_spec.setdefault("schedulingGates", [])
            if not any(isinstance(g, dict) and g.get("name") == keys.ELASTIC_JOB_GATE for g in gates):
                gates.append({"name": keys.ELASTIC_JOB_GATE})
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        errors = validate_job_on_create(obj, ctx, self.group, self.kind)
        errors += self._annotations(obj, old)
        errors += self._topology(obj, ctx)
        if old is not None:
            errors += validate_job_on_update(
                old, obj, ctx, new_suspended=is_suspended(obj), old_suspended=is_suspended(old),
                group=self.group, kind=self.kind,
            )
            errors += self._update(obj, old)
        return errors

    def _annotations(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        errors: list[FieldError] = []
        ann = annotations_of(obj)
        min_p = ann.get(keys.JOB_MIN_PARALLELISM)
        path = annotation_path(keys.JOB_MIN_PARALLELISM)
        changed = old is None or annotations_of(old).get(keys.JOB_MIN_PARALLELISM) != min_p
        if min_p is not None and changed:
            count = pods_count(obj)
            try:
                value = int(min_p)
            except ValueError:
                errors.append(invalid(path, min_p, f'strconv.Atoi: parsing "{min_p}": invalid syntax'))
            else:
                if not 0 < value < count:
                    errors.append(invalid(path, value, f"should be between 0 and {count - 1}"))
            if ann.get(keys.ELASTIC_JOB) == "true":
                errors.append(invalid(path, min_p, "cannot be combined with an elastic job"))
        equal = ann.get(keys.JOB_COMPLETIONS_EQUAL_PARALLELISM)
        if equal is not None:
            epath = annotation_path(keys.JOB_COMPLETIONS_EQUAL_PARALLELISM)
            parsed = parse_bool(equal)
            if parsed is None:
                errors.append(
                    invalid(epath, equal, f'strconv.ParseBool: parsing "{equal}": invalid syntax')
                )
            elif parsed:
                spec: Any = obj.get("spec") or {}
                if spec.get("completionMode") != "Indexed":
                    errors.append(invalid(epath, equal, "should not be enabled for NonIndexed jobs"))
                elif spec.get("completions") != int_or(spec.get("parallelism"), 1):
                    errors.append(
                        invalid(
                            "spec.completions",
                            spec.get("completions"),
                            f"should be equal to parallelism when {keys.JOB_COMPLETIONS_EQUAL_PARALLELISM}"
                            " is true",
                        )
                    )
        return errors

    def _topology(self, obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        template_meta = get_path(obj, "spec", "template", "metadata")
        template_meta = template_meta if isinstance(template_meta, dict) else {}
        base = "spec.template.metadata"
        errors = tas_podset_errors(template_meta, base, ctx, pods_count(obj))
        if elastic_enabled(obj, ctx) and ctx.gate("TopologyAwareScheduling"):
            ann = annotations_of({"metadata": template_meta})
            for key in (keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY):
                if key in ann:
                    errors.append(
                        forbidden(
                            annotation_path(key, base), "elastic jobs support only unconstrained topology"
                        )
                    )
        return errors

    def _update(self, obj: JSON, old: JSON) -> list[FieldError]:
        errors: list[FieldError] = []
        old_ann, new_ann = annotations_of(old), annotations_of(obj)
        old_running = get_path(old, "spec", "suspend") is not True
        if keys.JOB_MIN_PARALLELISM in old_ann and old_running:
            old_p, new_p = get_path(old, "spec", "parallelism"), get_path(obj, "spec", "parallelism")
            if old_p != new_p:
                errors.append(
                    forbidden(
                        "spec.parallelism",
                        "cannot change when partial admission is enabled and the job is not suspended",
                    )
                )
        key = keys.JOB_COMPLETIONS_EQUAL_PARALLELISM
        if (
            is_suspended(old) == is_suspended(obj)
            and not is_suspended(obj)
            and old_ann.get(key) != new_ann.get(key)
        ):
            errors.append(
                forbidden(annotation_path(key), "cannot change while the job is not suspended")
            )
        return errors


WEBHOOK = JobWebhook()
