"""Admission of kubeflow.org/v1 PyTorchJobs: the generic job rules, suspension in ``runPolicy``.

Kueue serves PyTorchJob through its generic ``BaseWebhook``: the same defaulting steps as a
Job (queue, priority, suspend, managedBy) and, on update, only the shared update rules
(creation rules are not re-run), plus TAS annotation checks per replica type.
"""

from __future__ import annotations

from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.job_fields import get_path, int_or
from pykueue.manager.jobs.run_policy import is_suspended, run_policy
from pykueue.manager.jobs.tas_annotations import tas_podset_errors
from pykueue.manager.jobs.validation import validate_job_on_create, validate_job_on_update

OWN_CONTROLLER = "kubeflow.org/training-operator"
REPLICA_TYPES = ("Master", "Worker")


class PyTorchJobWebhook:
    integration = "kubeflow.org/pytorchjob"
    group, kind = "kubeflow.org", "PyTorchJob"

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, run_policy, is_suspended, OWN_CONTROLLER)
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        if old is None:
            errors = validate_job_on_create(obj, ctx, self.group, self.kind)
        else:
            errors = validate_job_on_update(
                old, obj, ctx, new_suspended=is_suspended(obj), old_suspended=is_suspended(old),
                group=self.group, kind=self.kind,
            )
        replicas = get_path(obj, "spec", "pytorchReplicaSpecs")
        for rtype in REPLICA_TYPES:
            replica = replicas.get(rtype) if isinstance(replicas, dict) else None
            if not isinstance(replica, dict):
                continue
            meta = get_path(replica, "template", "metadata")
            errors += tas_podset_errors(
                meta if isinstance(meta, dict) else {},
                f"spec.pytorchReplicaSpecs[{rtype}].template.metadata",
                ctx,
                int_or(replica.get("replicas"), 1),
            )
        return errors


WEBHOOK = PyTorchJobWebhook()
