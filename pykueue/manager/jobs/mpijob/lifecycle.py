"""kubeflow.org/v2beta1 MPIJob: ``spec.runPolicy.suspend`` is the switch, podsets launcher, worker.

The mpi-operator (v0.4+) creates no pods while ``runPolicy.suspend`` is true. Each replica
type present (a null replica spec counts as absent, as in Kueue) becomes a podset named in
lower case, Launcher before Worker whatever ``runLauncherAsWorker`` says, with
``replicas`` pods (1 when unset). Start and restore edit each replica's template the way a
Job's template is edited. Finished is the first of the operator's Succeeded/Failed
conditions that is true; pods are ready once its Running condition is.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import meta
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.integrations import Integration
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
from pykueue.manager.jobs.run_policy import is_suspended, run_policy

MPIJOB = Integration("kubeflow.org/mpijob", "kubeflow.org", "v2beta1", "MPIJob", "mpijobs", prebuilt=True)
REPLICA_TYPES = ("Launcher", "Worker")


def replica_specs(job: Mapping[str, Any]) -> Mapping[str, Any]:
    specs = (job.get("spec") or {}).get("mpiReplicaSpecs")
    return specs if isinstance(specs, Mapping) else {}


def roles(job: Mapping[str, Any]) -> list[str]:
    """Replica types present (a null spec is absent), in podset order: Kueue's orderedReplicaTypes."""
    specs = replica_specs(job)
    return [r for r in REPLICA_TYPES if isinstance(specs.get(r), Mapping)]


def podset_name(role: str) -> str:
    return role.lower()


def pods_count(replica: Mapping[str, Any]) -> int:
    """``replicas``, 1 when unset (or not a number, which the API server would refuse)."""
    count = replica.get("replicas")
    return count if isinstance(count, int) and not isinstance(count, bool) else 1


def mpijob_workload_name(job: Mapping[str, Any]) -> str:
    m = meta(job)
    return workload_name(MPIJOB.kind, MPIJOB.group, str(m.get("name")), str(m.get("uid", "")))


class MPIJobLifecycle(TopLevelOwner):
    integration: Integration = MPIJOB
    # The mpi-operator (v0.6+) honours spec.runPolicy.managedBy.
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec", "runPolicy"))

    def workload_name(self, job: Mapping[str, Any]) -> str:
        return mpijob_workload_name(job)

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        return is_suspended(job)

    def is_active(self, job: Mapping[str, Any]) -> bool:
        return not self.is_suspended(job)

    def still_running(self, job: Mapping[str, Any]) -> bool:
        replicas = (job.get("status") or {}).get("replicaStatuses") or {}
        return any(int((r or {}).get("active") or 0) != 0 for r in replicas.values())

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        present = roles(job)
        pairs = dict(infos_by_name(infos, [podset_name(r) for r in present]))
        out = copy.deepcopy(dict(job))
        specs = out["spec"]["mpiReplicaSpecs"]
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
        return restore_replica_templates(job, workload, "mpiReplicaSpecs", roles(job), podset_name)

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        # The first true condition of the two decides, in the order the operator listed them.
        for cond in (job.get("status") or {}).get("conditions") or ():
            if not isinstance(cond, Mapping) or cond.get("status") != "True":
                continue
            message = str(cond.get("message") or "")
            if cond.get("type") == "Succeeded":
                return Finished(keys.Reason.SUCCEEDED, message or "MPIJob succeeded")
            if cond.get("type") == "Failed":
                return Finished(keys.Reason.FAILED, message or "MPIJob failed")
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return condition_true(job, "Running")


LIFECYCLE = MPIJobLifecycle()
