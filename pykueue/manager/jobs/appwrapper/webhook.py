"""Admission of workload.codeflare.dev/v1beta2 AppWrappers (Kueue's BaseWebhook, which its
AppWrapper integration uses unchanged).

Defaulting: default LocalQueue and priority class, ``spec.suspend`` when Kueue manages it,
MultiKueue ``spec.managedBy``. Validation: the shared creation rules on create, the shared
update rules on update. The AppWrapper controller's own webhook checks the components.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.job_fields import get_path
from pykueue.manager.jobs.validation import validate_job_on_create, validate_job_on_update

from .lifecycle import GROUP, KIND, OWN_CONTROLLER


def is_suspended(aw: Mapping[str, Any]) -> bool:
    return get_path(aw, "spec", "suspend") is True


def _spec(aw: JSON) -> JSON:
    if not isinstance(aw.get("spec"), dict):
        aw["spec"] = {}
    spec: JSON = aw["spec"]
    return spec


class AppWrapperWebhook:
    integration = "workload.codeflare.dev/appwrapper"
    group, kind = GROUP, KIND

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, _spec, is_suspended, OWN_CONTROLLER)
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        if old is None:
            return validate_job_on_create(obj, ctx, GROUP, KIND)
        return validate_job_on_update(old, obj, ctx, new_suspended=is_suspended(obj),
                                      old_suspended=is_suspended(old), group=GROUP, kind=KIND)


WEBHOOK = AppWrapperWebhook()
