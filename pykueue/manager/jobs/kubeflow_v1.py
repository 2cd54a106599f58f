"""The Kubeflow training operator's ``kubeflow.org/v1`` job kinds (PyTorchJob, TFJob,
XGBoostJob, PaddleJob, JAXJob), one implementation for all, as Kueue's kubeflowjob adapter.

Those kinds differ only in the field holding their replica specs and the replica types it
may name; a :class:`KubeflowJobType` states both, and each kind's folder builds its lifecycle,
webhook and ``JobKind`` from its type with the classes below. The MPI operator's MPIJob
(``kubeflow.org/v2beta1``) runs on the same lifecycle, with a webhook of its own.

* ``spec.runPolicy.suspend`` is the switch (the operator creates no pods while it is true)
  and ``spec.runPolicy.managedBy`` the controller (``run_policy``).
* Each replica type present (a null replica spec counts as absent) becomes a pod set named
  in lower case, in the kind's order of replica types, with ``replicas`` pods (1 when
  unset). Start and restore edit each replica's template the way a Job's template is edited.
* Finished is the first of the operator's Succeeded/Failed conditions that is true, in the
  order the operator listed them; pods are ready once its Running condition is; pods still
  run while a replica type counts active ones.
* Admission: the generic job rules, then the topology annotations of each replica type's
  template (their pod set count bounds a slice size), on create and on update alike.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys
from pykueue.api.fields import FieldError
from pykueue.api.wire import JSON, meta
from pykueue.manager.core.jobs_to_workloads import owned_workload, workload_name
from pykueue.manager.core.objects import ObjectError, named_meta
from pykueue.manager.jobs.admission import AdmissionContext
from pykueue.manager.jobs.defaulting import apply_job_defaults
from pykueue.manager.jobs.integrations import Integration
from pykueue.manager.jobs.job_fields import get_path
from pykueue.manager.jobs.lifecycle import (
    Action,
    Finished,
    PodSetInfo,
    Replace,
    TopLevelOwner,
    condition_true,
    infos_by_name,
    merge_into_template,
    restore_replica_templates,
    workload_template,
)
from pykueue.manager.jobs.multikueue.adapter import SpecCopyAdapter
from pykueue.manager.jobs.registry import JobKind, job_rbac
from pykueue.manager.jobs.related import NO_RELATED, Related
from pykueue.manager.jobs.run_policy import is_suspended, run_policy
from pykueue.manager.jobs.tas_annotations import tas_podset_errors
from pykueue.manager.jobs.validation import validate_job_on_create, validate_job_on_update

# spec.runPolicy.managedBy of a job the training operator itself runs (its
# KubeflowJobsController): Kueue's MultiKueue defaulting replaces it as it would an unset one.
TRAINING_OPERATOR = "kubeflow.org/training-operator"


@dataclass(frozen=True)
class KubeflowJobType:
    """What sets one training-operator kind apart from the others."""

    integration: Integration
    replicas_field: str  # under spec: "pytorchReplicaSpecs", "tfReplicaSpecs", ...
    replica_types: tuple[str, ...]  # in pod set order (Kueue's OrderedReplicaTypes)
    own_controller: str = TRAINING_OPERATOR

    def replica_specs(self, job: Mapping[str, Any]) -> Mapping[str, Any]:
        specs = (job.get("spec") or {}).get(self.replicas_field)
        return specs if isinstance(specs, Mapping) else {}

    def roles(self, job: Mapping[str, Any]) -> list[str]:
        """The replica types present (a null spec is absent), in pod set order."""
        specs = self.replica_specs(job)
        return [r for r in self.replica_types if isinstance(specs.get(r), Mapping)]

    def workload_name(self, job: Mapping[str, Any]) -> str:
        m, i = meta(job), self.integration
        return workload_name(i.kind, i.group, str(m.get("name")), str(m.get("uid", "")))

    def metadata_path(self, role: str) -> str:
        return f"spec.{self.replicas_field}[{role}].template.metadata"


def podset_name(role: str) -> str:
    return role.lower()


def pods_count(replica: Mapping[str, Any]) -> int:
    """``replicas``, 1 when unset (or not a number, which the API server would refuse)."""
    count = replica.get("replicas")
    return count if isinstance(count, int) and not isinstance(count, bool) else 1


class KubeflowJobLifecycle(TopLevelOwner):
    # The training operator (v1.9+) honours spec.runPolicy.managedBy.
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec", "runPolicy"))

    def __init__(self, job_type: KubeflowJobType) -> None:
        self.job_type = job_type
        self.integration = job_type.integration

    def workload_name(self, job: Mapping[str, Any]) -> str:
        return self.job_type.workload_name(job)

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        return is_suspended(job)

    def is_active(self, job: Mapping[str, Any]) -> bool:
        return not self.is_suspended(job)

    def still_running(self, job: Mapping[str, Any]) -> bool:
        replicas = (job.get("status") or {}).get("replicaStatuses") or {}
        return any(int((r or {}).get("active") or 0) != 0 for r in replicas.values())

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        present = self.job_type.roles(job)
        pairs = dict(infos_by_name(infos, [podset_name(r) for r in present]))
        out = copy.deepcopy(dict(job))
        specs = out["spec"][self.job_type.replicas_field]
        for role in present:
            name = podset_name(role)
            base = workload_template(workload, name) or specs[role].get("template") or {}
            specs[role]["template"] = merge_into_template(base, pairs[name])
        run_policy(out)["suspend"] = False
        return [Replace(out)]

    def stop(self, job: Mapping[str, Any]) -> list[Action]:
        out = copy.deepcopy(dict(job))
        run_policy(out)["suspend"] = True
        return [Replace(out)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        if not self.is_suspended(job):
            return []
        return restore_replica_templates(job, workload, self.job_type.replicas_field,
                                         self.job_type.roles(job), podset_name)

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        kind = self.integration.kind
        for cond in (job.get("status") or {}).get("conditions") or ():
            if not isinstance(cond, Mapping) or cond.get("status") != "True":
                continue
            message = str(cond.get("message") or "")
            if cond.get("type") == "Succeeded":
                return Finished(keys.Reason.SUCCEEDED, message or f"{kind} succeeded")
            if cond.get("type") == "Failed":
                return Finished(keys.Reason.FAILED, message or f"{kind} failed")
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return condition_true(job, "Running")


class KubeflowJobWebhook:
    """Kueue serves these kinds through its generic BaseWebhook: the defaulting of every job
    kind (queue, priority, suspend, managedBy); on create the creation rules, on update the
    shared update rules; both followed by the topology checks of each replica type."""

    def __init__(self, job_type: KubeflowJobType) -> None:
        self.job_type = job_type
        self.integration = job_type.integration.name

    def default(self, obj: JSON, ctx: AdmissionContext) -> JSON:
        apply_job_defaults(obj, ctx, run_policy, is_suspended, self.job_type.own_controller)
        return obj

    def validate(self, obj: JSON, old: JSON | None, ctx: AdmissionContext) -> list[FieldError]:
        i = self.job_type.integration
        if old is None:
            errors = validate_job_on_create(obj, ctx, i.group, i.kind)
        else:
            errors = validate_job_on_update(
                old, obj, ctx, new_suspended=is_suspended(obj), old_suspended=is_suspended(old),
                group=i.group, kind=i.kind,
            )
        specs = self.job_type.replica_specs(obj)
        for role in self.job_type.roles(obj):
            replica = specs[role]
            template_meta = get_path(replica, "template", "metadata")
            errors += tas_podset_errors(template_meta if isinstance(template_meta, dict) else {},
                                        self.job_type.metadata_path(role), ctx, pods_count(replica))
        return errors


def to_workloads(job_type: KubeflowJobType, job: JSON) -> list[JSON]:
    """The one Workload of a job: a pod set per replica type present."""
    specs = job_type.replica_specs(job)
    podsets = [{"name": podset_name(role), "count": pods_count(specs[role]),
                "template": copy.deepcopy(specs[role].get("template") or {})}
               for role in job_type.roles(job)]
    if not podsets:
        raise ObjectError(f"{job_type.integration.kind} {named_meta(job)['name']}: no replica specs")
    return [owned_workload(job, job_type.workload_name(job), podsets, controller=True)]


def kubeflow_job_kind(job_type: KubeflowJobType, lifecycle: KubeflowJobLifecycle,
                      webhook: KubeflowJobWebhook) -> JobKind:
    """The ``JobKind`` of a training-operator kind, registered like any other."""
    def workloads(job: JSON, related: Related = NO_RELATED) -> list[JSON]:
        return to_workloads(job_type, job)

    i = job_type.integration
    return JobKind(i, lifecycle, webhook, workloads, job_rbac(i.group, i.plural))
