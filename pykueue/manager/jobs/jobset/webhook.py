"""Admission of jobset.x-k8s.io/v1alpha2 JobSets (Kueue's ``jobset_webhook.go``).

Defaulting: default LocalQueue and priority class, ``spec.suspend`` when Kueue manages it,
MultiKueue ``spec.managedBy``. Validation runs the creation rules on create and on update
(the update adds the shared update rules), with the topology annotations of every
replicated job's pod template and the pairing rules of pod set groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.job_fields import get_path, str_map
from pykueue.manager.jobs.tas_annotations import podset_group_errors, tas_podset_errors
from pykueue.manager.jobs.validation import validate_job_rerunning_creation_rules

from .lifecycle import GROUP, OWN_CONTROLLER, pods_count, replicated_jobs


def is_suspended(jobset: Mapping[str, Any]) -> bool:
    return get_path(jobset, "spec", "suspend") is True


def _spec(jobset: JSON) -> JSON:
    spec: JSON = jobset.setdefault("spec", {})
    return spec


class JobSetWebhook:
    integration = "jobset.x-k8s.io/jobset"
    group, kind = GROUP, "JobSet"

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, _spec, is_suspended, OWN_CONTROLLER)
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        errors = validate_job_rerunning_creation_rules(obj, old, ctx, group=self.group, kind=self.kind,
                                                        suspended=is_suspended)
        return errors + self._topology_errors(obj, ctx)

    @staticmethod
    def _topology_errors(obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        if not ctx.gate("TopologyAwareScheduling"):
            return []
        errors: list[FieldError] = []
        grouped: list[tuple[str, dict[str, str], int]] = []
        for i, rj in enumerate(replicated_jobs(obj)):
            base = f"spec.replicatedJobs[{i}].template.spec.template.metadata"
            meta = get_path(rj, "template", "spec", "template", "metadata")
            meta = meta if isinstance(meta, dict) else {}
            errors += tas_podset_errors(meta, base, ctx, pods_count(rj))
            grouped.append((base, str_map(meta.get("annotations")), pods_count(rj)))
        return errors + podset_group_errors(grouped)


WEBHOOK = JobSetWebhook()
