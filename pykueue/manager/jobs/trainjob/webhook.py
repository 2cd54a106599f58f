"""Admission of trainer.kubeflow.org/v1alpha1 TrainJobs (Kueue's ``trainjob_webhook.go``).

Defaulting: default LocalQueue and priority class, MultiKueue ``spec.managedBy``,
``spec.suspend`` when Kueue manages it, and, on every TrainJob, Kueue's (empty) entry of
``spec.runtimePatches``, which start fills in later. Validation runs the creation rules on
create and on update (the update adds the shared update rules) and, under
TopologyAwareScheduling, the topology annotations of each pod set the TrainJob's runtime gives
it: the webhook reads that runtime (``ClusterFacts.related``), and a TrainJob whose runtime
cannot be read is denied with the reason, as Kueue's is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.core.objects import ObjectError
from pykueue.manager.jobs.admission import AdmissionContext, AdmissionDenied
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.job_fields import get_path
from pykueue.manager.jobs.tas_annotations import tas_podset_errors
from pykueue.manager.jobs.validation import validate_job_rerunning_creation_rules

from .lifecycle import KIND, OWN_CONTROLLER, empty_kueue_patch
from .runtime import GROUP, podsets

TOPOLOGY_HINT = ('. Adjust either the "TrainJob.spec.runtimePatches" or the "TrainingRuntime.Template" '
                 "annotations for the corresponding Job")


def is_suspended(trainjob: Mapping[str, Any]) -> bool:
    return get_path(trainjob, "spec", "suspend") is True


def _spec(trainjob: JSON) -> JSON:
    if not isinstance(trainjob.get("spec"), dict):
        trainjob["spec"] = {}
    spec: JSON = trainjob["spec"]
    return spec


class TrainJobWebhook:
    integration = "trainer.kubeflow.org/trainjob"
    group, kind = GROUP, KIND

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        spec = apply_job_defaults(obj, ctx, _spec, is_suspended, OWN_CONTROLLER)
        patches = spec.get("runtimePatches")
        spec["runtimePatches"] = [*(patches if isinstance(patches, list) else ()), empty_kueue_patch()]
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        errors = validate_job_rerunning_creation_rules(obj, old, ctx, group=self.group, kind=self.kind,
                                                        suspended=is_suspended)
        return errors + self._topology_errors(obj, ctx)

    @staticmethod
    def _topology_errors(obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        """Kueue's validateTopologyRequest: the annotations of each pod set, at ``job[<name>]``,
        with a hint of where to fix them; a TrainJob whose pod sets cannot be computed (its
        runtime is missing) is denied with that reason unless an annotation is wrong."""
        if not ctx.gate("TopologyAwareScheduling"):
            return []
        try:
            sets, failure = podsets(obj, ctx.facts.related), None
        except ObjectError as exc:
            sets, failure = [], exc
        errors: list[FieldError] = []
        for ps in sets:
            template_meta = (ps.get("template") or {}).get("metadata")
            errors += tas_podset_errors(template_meta if isinstance(template_meta, dict) else {},
                                        f"job[{ps['name']}]", ctx, int(ps["count"]))
        if errors:
            return [FieldError(e.path, e.problem + TOPOLOGY_HINT) for e in errors]
        if failure is not None:
            raise AdmissionDenied(str(failure))
        return []


WEBHOOK = TrainJobWebhook()
