"""Admission of ToyJobs: the shared job defaults and checks, nothing of its own."""

from __future__ import annotations

from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.validation import validate_job_on_create

from .lifecycle import TOY, spec_of


class ToyWebhook:
    integration = TOY.name

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, lambda o: o.setdefault("spec", {}),
                           lambda o: bool(spec_of(o).get("suspend")), "example.com/toy-controller")
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        return validate_job_on_create(obj, ctx, TOY.group, TOY.kind) if old is None else []


WEBHOOK = ToyWebhook()
