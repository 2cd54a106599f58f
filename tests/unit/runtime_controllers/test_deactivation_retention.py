"""``objectRetentionPolicies.workloads.afterDeactivatedByKueue``: the job of a Workload Kueue
deactivated is deleted once the retention has run out.

The ``kueue_*`` cases are Kueue v0.19.2's: ``pkg/config/validation_test.go`` (the
objectRetentionPolicies cases, with the messages ``field.Error`` prints) and
``pkg/controller/jobs/job/job_controller_test.go`` (the afterDeactivatedByKueue cases of
TestReconciler), run through the job reconciler's ``reconcile`` with the Workload as the
Kueue case gives it.
"""

from __future__ import annotations

import asyncio
import copy
import time
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.config import ConfigError
from pykueue.manager.jobs.lifecycle import JobLifecycle
from pykueue.manager.runtime.controllers.manager import QueueManager
from pykueue.manager.runtime.controllers.retention import (
    after_deactivated_by_kueue,
    after_finished,
    deactivated_job_deletion_due,
)

from .test_events_recorded import Sent, _manager

BY_KUEUE = "DeactivatedDueToRequeuingLimitExceeded"


def _policy(name: str, value: Any) -> dict[str, Any]:
    return {"objectRetentionPolicies": {"workloads": {name: value}}}


# -- configuration -----------------------------------------------------------------------------


def test_kueue_negative_after_finished() -> None:
    with pytest.raises(ConfigError) as err:
        after_finished(_policy("afterFinished", "-1ns"))
    assert str(err.value) == ("objectRetentionPolicies.workloads.afterFinished: Invalid value: -1ns: "
                              "must be greater than or equal to 0")


def test_kueue_zero_and_positive_after_finished() -> None:
    assert after_finished(_policy("afterFinished", "0s")) == 0.0
    assert after_finished(_policy("afterFinished", "1ns")) == 1e-9


def test_kueue_negative_after_deactivated_by_kueue() -> None:
    with pytest.raises(ConfigError) as err:
        after_deactivated_by_kueue(_policy("afterDeactivatedByKueue", "-1ns"))
    assert str(err.value) == ("objectRetentionPolicies.workloads.afterDeactivatedByKueue: "
                              'Invalid value: "-1ns": must be greater than or equal to 0')


def test_kueue_zero_and_positive_after_deactivated_by_kueue() -> None:
    assert after_deactivated_by_kueue(_policy("afterDeactivatedByKueue", "0s")) == 0.0
    assert after_deactivated_by_kueue(_policy("afterDeactivatedByKueue", "1ns")) == 1e-9


def test_unset_keeps_forever_and_durations_read_as_go_does() -> None:
    assert after_deactivated_by_kueue({}) is None
    assert after_deactivated_by_kueue({"objectRetentionPolicies": {"workloads": {}}}) is None
    assert after_deactivated_by_kueue(_policy("afterDeactivatedByKueue", "1m30s")) == 90.0
    with pytest.raises(ConfigError) as err:
        after_deactivated_by_kueue(_policy("afterDeactivatedByKueue", "-90s"))
    assert '"-1m30s"' in str(err.value)


# -- the rule ----------------------------------------------------------------------------------


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _workload(active: bool, reason: str, evicted_at: float, *extra: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "wl", "namespace": "ns"}, "spec": {"active": active},
            "status": {"conditions": [{"type": "Evicted", "status": "True", "reason": reason,
                                       "message": "The workload is deactivated",
                                       "lastTransitionTime": _stamp(evicted_at)}, *extra]}}


NOW = 1767225600.0  # 2026-01-01T00:00:00Z


def test_a_deactivation_by_kueue_is_due_its_retention_after_the_eviction() -> None:
    assert deactivated_job_deletion_due(_workload(False, BY_KUEUE, NOW), 120.0) == NOW + 120.0
    for reason in ("DeactivatedDueToAdmissionCheck", "DeactivatedDueToMaximumExecutionTimeExceeded"):
        assert deactivated_job_deletion_due(_workload(False, reason, NOW), 0.0) == NOW


def test_what_is_not_a_deactivation_by_kueue_is_never_due() -> None:
    assert deactivated_job_deletion_due(_workload(True, BY_KUEUE, NOW), 0.0) is None  # active again
    assert deactivated_job_deletion_due(_workload(False, "Deactivated", NOW), 0.0) is None  # the user's
    assert deactivated_job_deletion_due(_workload(False, "Preempted", NOW), 0.0) is None
    evicted_no_more = _workload(False, BY_KUEUE, NOW)
    evicted_no_more["status"]["conditions"][0]["status"] = "False"
    assert deactivated_job_deletion_due(evicted_no_more, 0.0) is None
    finished = {"type": "Finished", "status": "True", "lastTransitionTime": _stamp(NOW)}
    assert deactivated_job_deletion_due(_workload(False, BY_KUEUE, NOW, finished), 0.0) is None
    deleting = _workload(False, BY_KUEUE, NOW)
    deleting["metadata"]["deletionTimestamp"] = _stamp(NOW)
    assert deactivated_job_deletion_due(deleting, 0.0) is None
    assert deactivated_job_deletion_due({}, 0.0) is None


# -- the job reconciler --------------------------------------------------------------------------


class _Store:
    """An informer's cache: objects by key."""

    def __init__(self, by_key: dict[str, dict[str, Any]]) -> None:
        self.by_key = by_key

    def get(self, key: str) -> dict[str, Any] | None:
        return self.by_key.get(key)

    def items(self) -> list[dict[str, Any]]:
        return list(self.by_key.values())


class _Api:
    """Replaces succeed; deletes are kept."""

    def __init__(self) -> None:
        self.deleted: list[tuple[str, dict[str, Any] | None]] = []

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return body

    async def delete(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        self.deleted.append((path, body))
        return {}


def _job() -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "job", "namespace": "ns", "uid": "job-uid", "resourceVersion": "3",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": False, "parallelism": 1, "completions": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}},
            "status": {}}


def _reconciled(active: bool, reason: str, evicted_ago_s: float,
                retention_s: float | None) -> tuple[_Api, Sent, float | None]:
    """Reconcile a running job whose Workload was admitted, then evicted for ``reason``
    ``evicted_ago_s`` ago; the Configuration's afterDeactivatedByKueue is ``retention_s``."""
    async def go() -> tuple[_Api, Sent, float | None]:
        manager, _, sent = _manager()
        manager.events.start()
        jobs = manager.jobs
        jobs.deactivated_retention_s = retention_s
        lc = jobs.registry.get("Job")
        assert isinstance(lc, JobLifecycle)
        job = _job()
        [wl] = lc.workloads(job)
        wl["metadata"]["uid"] = "wl-uid"
        admitted = copy.deepcopy(wl)
        admitted["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": "1"}}]},
            "conditions": [{"type": "QuotaReserved", "status": "True"},
                           {"type": "Admitted", "status": "True"}]}
        manager._core_handler(EventType.ADDED, admitted, None)
        evicted = copy.deepcopy(admitted)
        evicted["spec"]["active"] = active
        evicted["status"]["conditions"].append({
            "type": "Evicted", "status": "True", "reason": reason, "message": "The workload is deactivated",
            "lastTransitionTime": _stamp(time.time() - evicted_ago_s)})
        manager._core_handler(EventType.MODIFIED, evicted, admitted)
        manager.core.run_until_idle()
        api = _Api()
        jobs.client = cast(KubeClient, api)
        jobs.informers = {**jobs.informers,  # type: ignore[dict-item]
                          "Workload": _Store({f"ns/{wl['metadata']['name']}": evicted}),
                          "Namespace": _Store({"ns": {"metadata": {"name": "ns", "labels": {
                              "kubernetes.io/metadata.name": "ns"}}}})}
        jobs._sources = {"Job": [_Store({"ns/job": job})]}  # type: ignore[list-item]
        again = await jobs.reconcile("Job:ns/job")
        await manager.events.queue.join(5)
        await manager.events.stop()
        return api, sent, again

    return asyncio.run(go())


JOB_PATH = "/apis/batch/v1/namespaces/ns/jobs/job"
DELETE_OPTIONS = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                  "preconditions": {"uid": "job-uid"}}
DELETED = ("Normal", "Deleted", "Deleted job: deactivation retention period expired")


def _reasons(sent: Sent) -> list[str]:
    return [reason for _, reason, _ in sent.said("job")]


def test_kueue_workload_active_after_deactivation_does_not_delete_the_job() -> None:
    api, sent, again = _reconciled(True, BY_KUEUE, 0.0, 0.0)
    assert api.deleted == [] and again is None
    assert DELETED not in sent.said("job")


def test_kueue_workload_manually_deactivated_does_not_delete_the_job() -> None:
    api, sent, again = _reconciled(False, "Deactivated", 0.0, 0.0)
    assert api.deleted == [] and again is None
    assert _reasons(sent) == ["Stopped"]


def test_kueue_workload_deactivated_by_kueue_with_zero_retention_deletes_the_job() -> None:
    api, sent, again = _reconciled(False, BY_KUEUE, 0.0, 0.0)
    assert api.deleted == [(JOB_PATH, DELETE_OPTIONS)] and again is None
    assert _reasons(sent) == ["Stopped", "Deleted"]
    assert sent.said("job")[-1] == DELETED
    [deleted] = [r for r in sent.requests if r.body["reason"] == "Deleted"]
    assert deleted.body["reportingController"] == "batch/job-kueue-controller"


def test_kueue_workload_deactivated_by_kueue_retention_not_expired() -> None:
    """Retention 2m, evicted 1m ago: stopped, not deleted, looked at again in about 1m."""
    api, sent, again = _reconciled(False, BY_KUEUE, 60.0, 120.0)
    assert api.deleted == []
    assert again is not None and 55.0 < again <= 60.0
    assert _reasons(sent) == ["Stopped"]


def test_kueue_workload_deactivated_by_kueue_retention_expired() -> None:
    api, sent, again = _reconciled(False, BY_KUEUE, 60.0, 60.0)
    assert api.deleted == [(JOB_PATH, DELETE_OPTIONS)] and again is None
    assert _reasons(sent) == ["Stopped", "Deleted"]


def test_without_the_policy_nothing_is_deleted() -> None:
    api, _, again = _reconciled(False, BY_KUEUE, 3600.0, None)
    assert api.deleted == [] and again is None


def test_the_manager_reads_the_policy_from_its_configuration() -> None:
    manager = QueueManager(KubeClient(object()), job_config=_policy("afterDeactivatedByKueue", "5m"))
    assert manager.jobs.deactivated_retention_s == 300.0
    assert QueueManager(KubeClient(object())).jobs.deactivated_retention_s is None
