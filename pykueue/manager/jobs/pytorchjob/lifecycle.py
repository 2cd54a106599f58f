"""kubeflow.org/v1 PyTorchJob: ``spec.runPolicy.suspend`` is the switch, podsets Master, Worker.

The training-operator (v1.7+) creates no pods while ``runPolicy.suspend`` is true. Each
replica type present becomes a podset named in lower case, in Master, Worker order; start
and restore edit each replica's template the way a Job's template is edited. Finished and
ready are read from the operator's conditions (Succeeded/Failed, Running).
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
    condition_message,
    condition_true,
    infos_by_name,
    merge_into_template,
    restore_replica_templates,
    workload_template,
)
from pykueue.manager.jobs.multikueue.adapter import SpecCopyAdapter

ROLES = ("Master", "Worker")


def _replicas(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return (job.get("spec") or {}).get("pytorchReplicaSpecs") or {}


def roles(job: Mapping[str, Any]) -> list[str]:
    """Replica types present, in podset order."""
    return [r for r in ROLES if r in _replicas(job)]


class PyTorchJobLifecycle(TopLevelOwner):
    integration: Integration = Integration("kubeflow.org/pytorchjob", "kubeflow.org", "v1", "PyTorchJob",
                                           "pytorchjobs", prebuilt=True)
    # The training operator (v1.8+) honours spec.runPolicy.managedBy.
    multikueue: SpecCopyAdapter = SpecCopyAdapter(("spec", "runPolicy"))

    def workload_name(self, job: Mapping[str, Any]) -> str:
        m = meta(job)
        return workload_name("PyTorchJob", "kubeflow.org", str(m.get("name")), str(m.get("uid", "")))

    def is_suspended(self, job: Mapping[str, Any]) -> bool:
        return bool(((job.get("spec") or {}).get("runPolicy") or {}).get("suspend"))

    def is_active(self, job: Mapping[str, Any]) -> bool:
        return not self.is_suspended(job)

    def still_running(self, job: Mapping[str, Any]) -> bool:
        replicas = (job.get("status") or {}).get("replicaStatuses") or {}
        return any(int((r or {}).get("active") or 0) > 0 for r in replicas.values())

    def start(self, job: Mapping[str, Any], workload: Mapping[str, Any],
              infos: list[PodSetInfo]) -> list[Action]:
        present = roles(job)
        pairs = dict(infos_by_name(infos, [r.lower() for r in present]))
        out = copy.deepcopy(dict(job))
        replicas = out["spec"]["pytorchReplicaSpecs"]
        for role in present:
            base = workload_template(workload, role.lower()) or replicas[role].get("template") or {}
            replicas[role]["template"] = merge_into_template(base, pairs[role.lower()])
        out["spec"].setdefault("runPolicy", {})["suspend"] = False
        return [Replace(out)]

    def stop(self, job: Mapping[str, Any]) -> list[Action]:
        out = copy.deepcopy(dict(job))
        out.setdefault("spec", {}).setdefault("runPolicy", {})["suspend"] = True
        return [Replace(out)]

    def restore(self, job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Action]:
        if not self.is_suspended(job):
            return []
        return restore_replica_templates(job, workload, "pytorchReplicaSpecs", roles(job), str.lower)

    def finished(self, job: Mapping[str, Any]) -> Finished | None:
        if condition_true(job, "Succeeded"):
            message = condition_message(job, "Succeeded") or "PyTorchJob succeeded"
            return Finished(keys.Reason.SUCCEEDED, message)
        if condition_true(job, "Failed"):
            return Finished(keys.Reason.FAILED, condition_message(job, "Failed") or "PyTorchJob failed")
        return None

    def pods_ready(self, job: Mapping[str, Any]) -> bool:
        return condition_true(job, "Running")


LIFECYCLE = PyTorchJobLifecycle()
