"""``still_running``: Kueue's IsActive, what an evicted workload's quota waits for: a Job's
active pods, a PyTorchJob's active replicas, a pod group's pods in phase Running (deleted
ones included, until they are gone)."""

from __future__ import annotations

from typing import Any

from pykueue.manager.jobs.batchjob.lifecycle import LIFECYCLE as JOB
from pykueue.manager.jobs.pod.lifecycle import LIFECYCLE as POD
from pykueue.manager.jobs.pytorchjob.lifecycle import LIFECYCLE as PYTORCH


def test_a_job_runs_while_it_has_active_pods() -> None:
    job: dict[str, Any] = {"spec": {"suspend": True}, "status": {"active": 2}}
    assert JOB.still_running(job) and not JOB.is_active(job)  # suspended, pods not gone yet
    job["status"] = {"active": 0, "terminating": 1}
    assert not JOB.still_running(job)
    assert not JOB.still_running({"spec": {}})


def test_a_pytorchjob_runs_while_a_replica_type_has_active_pods() -> None:
    job: dict[str, Any] = {"spec": {"runPolicy": {"suspend": True}}, "status": {
        "replicaStatuses": {"Master": {"active": 0, "succeeded": 1}, "Worker": {"active": 1}}}}
    assert PYTORCH.still_running(job)
    job["status"]["replicaStatuses"]["Worker"] = {"active": 0, "failed": 1}
    assert not PYTORCH.still_running(job)
    assert not PYTORCH.still_running({"spec": {}, "status": {}})


def _pod(phase: str, deleted: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p-{phase}"}
    if deleted:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {}, "status": {"phase": phase}}


def test_a_pod_group_runs_while_a_pod_is_running_even_once_deleted() -> None:
    assert POD.still_running({"pods": [_pod("Pending"), _pod("Running", deleted=True)]})
    assert not POD.still_running({"pods": [_pod("Pending"), _pod("Succeeded"), _pod("Failed")]})
    assert not POD.still_running({"pods": []})
