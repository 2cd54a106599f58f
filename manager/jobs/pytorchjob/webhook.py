"""Admission of kubeflow.org/v1 PyTorchJobs: the generic job rules, suspension in ``runPolicy``.

Kueue serves PyTorchJob through its generic ``BaseWebhook``: the same defaulting steps as a
Job (queue, priority, suspend, managedBy) and, on update, only the shared update rules
(creation rules are not re-run), plus TAS annotation checks per replica type.
"""

from __future__ import annotations

from manager.jobs import framework as fw
from manager.jobs.framework import JSON, AdmissionContext, FieldError

OWN_CONTROLLER = "kubeflow.org/training-operator"
REPLICA_TYPES = ("Master", "Worker")


def is_suspended(job: JSON) -> bool:
    return fw.get_path(job, "spec", "runPolicy", "suspend") is True


class PyTorchJobWebhook:
    integration = "kubeflow.org/pytorchjob"
    group, kind = "kubeflow.org", "PyTorchJob"

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        fw.apply_default_local_queue(obj, ctx)
        fw.apply_default_priority_class(obj, ctx)
        spec = obj.setdefault("spec", {})
        if not isinstance(spec.get("runPolicy"), dict):
            spec["runPolicy"] = {}
        run_policy = spec["runPolicy"]
        if fw.workload_should_be_suspended(obj, ctx) and not is_suspended(obj):
            run_policy["suspend"] = True
        managed_by = fw.managed_by_default(run_policy.get("managedBy"), OWN_CONTROLLER, ctx, obj)
        if managed_by is not None:
            run_policy["managedBy"] = managed_by
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        if old is None:
            errors = fw.validate_job_on_create(obj, ctx, self.group, self.kind)
        else:
            errors = fw.validate_job_on_update(
                old, obj, ctx, new_suspended=is_suspended(obj), old_suspended=is_suspended(old)
            )
        replicas = fw.get_path(obj, "spec", "pytorchReplicaSpecs")
        for rtype in REPLICA_TYPES:
            replica = replicas.get(rtype) if isinstance(replicas, dict) else None
            if not isinstance(replica, dict):
                continue
            meta = fw.get_path(replica, "template", "metadata")
            errors += fw.tas_podset_errors(
                meta if isinstance(meta, dict) else {},
                f"spec.pytorchReplicaSpecs[{rtype}].template.metadata",
                ctx,
                fw.int_or(replica.get("replicas"), 1),
            )
        return errors


WEBHOOK = PyTorchJobWebhook()
