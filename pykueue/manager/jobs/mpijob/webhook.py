"""Admission of kubeflow.org/v2beta1 MPIJobs: the generic job rules, suspension in ``runPolicy``.

Kueue's MPIJob webhook defaults as its other job kinds do (queue, priority, suspend,
managedBy) and then, with TopologyAwareScheduling on and ``runLauncherAsWorker`` set, offsets
the workers' pod indexes by one (the launcher is rank 0) unless the launcher's template
joins a podset group. It validates the creation rules and the topology annotations of each
replica type on create and on update alike (an update adds the shared update rules).
"""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.job_fields import get_path, set_annotation, str_map
from pykueue.manager.jobs.mpijob.lifecycle import MPI_OPERATOR, MPIJOB, pods_count, replica_specs, roles
from pykueue.manager.jobs.run_policy import is_suspended, run_policy
from pykueue.manager.jobs.tas_annotations import podset_group_errors, tas_podset_errors
from pykueue.manager.jobs.validation import validate_job_on_create, validate_job_on_update

OWN_CONTROLLER = MPI_OPERATOR


def _metadata_path(role: str) -> str:
    return f"spec.mpiReplicaSpecs[{role}].template.metadata"


def _template(replica: dict[str, Any]) -> JSON:
    if not isinstance(replica.get("template"), dict):
        replica["template"] = {}
    template: JSON = replica["template"]
    return template


class MPIJobWebhook:
    integration = MPIJOB.name

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, run_policy, is_suspended, OWN_CONTROLLER)
        if ctx.gate("TopologyAwareScheduling") and get_path(obj, "spec", "runLauncherAsWorker") is True:
            specs = replica_specs(obj)
            launcher, worker = specs.get("Launcher"), specs.get("Worker")
            # Grouped pod sets get their offset from the topology ungater instead.
            launcher_annotations = str_map(get_path(specs, "Launcher", "template", "metadata", "annotations"))
            grouped = keys.PODSET_GROUP_NAME in launcher_annotations
            if isinstance(launcher, dict) and isinstance(worker, dict) and not grouped:
                set_annotation(_template(worker), keys.POD_INDEX_OFFSET, "1")
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        if old is None:
            # Kueue sorts the errors of a create by field, not those of an update.
            return sorted(self._common(obj, ctx), key=lambda e: e.path)
        errors = validate_job_on_update(
            old, obj, ctx, new_suspended=is_suspended(obj), old_suspended=is_suspended(old),
            group=MPIJOB.group, kind=MPIJOB.kind,
        )
        return errors + self._common(obj, ctx)

    def _common(self, obj: JSON, ctx: AdmissionContext) -> list[FieldError]:
        errors = validate_job_on_create(obj, ctx, MPIJOB.group, MPIJOB.kind)
        if not ctx.gate("TopologyAwareScheduling"):
            return errors
        specs = replica_specs(obj)
        members = []
        for role in roles(obj):
            replica = specs[role]
            meta = get_path(replica, "template", "metadata")
            meta = meta if isinstance(meta, dict) else {}
            count = pods_count(replica)
            errors += tas_podset_errors(meta, _metadata_path(role), ctx, count)
            members.append((_metadata_path(role), str_map(meta.get("annotations")), count))
        return errors + podset_group_errors(members)


WEBHOOK = MPIJobWebhook()
