"""A JobSet under MultiKueue: the worker's copy runs it (spec.managedBy cleared, the prebuilt
Workload and origin labels added) and its status is written back to the manager's JobSet.

The tests named after Kueue's ``pkg/controller/jobs/jobset/jobset_multikueue_adapter_test.go``
(v0.19.2, TestMultiKueueAdapter) take their inputs and outcomes from that table.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.jobset.lifecycle import LIFECYCLE as JS
from pykueue.manager.jobs.jobset.lifecycle import OWN_CONTROLLER
from pykueue.manager.jobs.lifecycle import DispatchedByMultiKueue, managed_by_multikueue
from pykueue.manager.jobs.prebuilt import prebuilt_workload_name
from tests.unit.jobs.jobset_objects import jobs_status, jobset, replicated_job

SOURCE = "kueue v0.19.2 jobset_multikueue_adapter_test.go TestMultiKueueAdapter"
STATUS = jobs_status(("replicated-job-1", 1, 1), ("replicated-job-2", 3, 0))


def _local(**kwargs: Any) -> dict[str, Any]:
    job = jobset("jobset1", "ns", replicated_job("replicated-job-1"), replicated_job("replicated-job-2"),
                 queue="lq", **kwargs)
    job["metadata"]["resourceVersion"] = "5"
    return job


def test_a_jobset_is_dispatched_by_multikueue() -> None:
    assert isinstance(JS, DispatchedByMultiKueue)


def test_the_copy_runs_in_the_worker_under_the_prebuilt_workload() -> None:
    local = _local(suspend=False, managed_by=keys.MULTIKUEUE_CONTROLLER, annotations={"team": "a"})
    local["metadata"]["labels"][keys.JOB_UID] = "uid-jobset1"
    local["status"] = copy.deepcopy(STATUS)
    remote = JS.multikueue.remote_copy(local, "wl1", "origin1")
    assert "managedBy" not in remote["spec"], "the worker's JobSet controller runs it"
    assert remote["spec"]["replicatedJobs"] == local["spec"]["replicatedJobs"]
    assert remote["spec"]["suspend"] is False
    assert remote["metadata"] == {
        "name": "jobset1", "namespace": "ns",
        "annotations": {"team": "a", keys.PREBUILT_WORKLOAD_NAME: "wl1"},
        "labels": {keys.QUEUE_NAME: "lq", keys.MULTIKUEUE_ORIGIN: "origin1"}}
    assert "status" not in remote
    assert prebuilt_workload_name(remote, True) == "wl1"
    assert local["spec"]["managedBy"] == keys.MULTIKUEUE_CONTROLLER, "the local JobSet is not changed"


def test_the_remote_status_is_mirrored_whole_and_only_when_it_differs() -> None:
    local = _local(suspend=False, managed_by=keys.MULTIKUEUE_CONTROLLER)
    remote = JS.multikueue.remote_copy(local, "wl1", "origin1")
    assert JS.multikueue.with_remote_status(local, remote) is None, "no status yet"
    remote["status"] = {**STATUS, "conditions": [{"type": "Completed", "status": "True"}]}
    mirrored = JS.multikueue.with_remote_status(local, remote)
    assert mirrored is not None and mirrored["status"] == remote["status"]
    assert mirrored["spec"] == local["spec"] and mirrored["metadata"]["resourceVersion"] == "5"
    assert JS.finished(mirrored) is not None, "the manager sees the end the worker reached"
    assert JS.multikueue.with_remote_status(mirrored, remote) is None


@pytest.mark.parametrize(
    "suspend",
    [
        pytest.param(False, id=f'{SOURCE} "sync creates missing remote jobset"'),
        pytest.param(True, id="a suspended JobSet travels suspended"),
    ],
)
def test_kueue_sync_creates_missing_remote_jobset(suspend: bool) -> None:
    # With WorkloadIdentifierAnnotations off, as Kueue's case: the Workload's name is a label.
    local = jobset("jobset1", "ns", suspend=suspend, managed_by=keys.MULTIKUEUE_CONTROLLER)
    want = jobset("jobset1", "ns", suspend=suspend, labels={keys.PREBUILT_WORKLOAD_NAME: "wl1",
                                                             keys.MULTIKUEUE_ORIGIN: "origin1"})
    del want["metadata"]["uid"]
    before = copy.deepcopy(local)
    assert JS.multikueue.remote_copy(local, "wl1", "origin1", identifier_annotations=False) == want
    assert local == before, "the manager's JobSet is unchanged"


def test_kueue_sync_creates_missing_remote_jobset_with_identifier_annotations() -> None:
    # kueue v0.19.2 jobset_multikueue_adapter_test.go TestMultiKueueAdapter
    # "sync creates missing remote jobset, WorkloadIdentifierAnnotations enabled"
    local = jobset("jobset1", "ns", managed_by=keys.MULTIKUEUE_CONTROLLER)
    want = jobset("jobset1", "ns", labels={keys.MULTIKUEUE_ORIGIN: "origin1"},
                  annotations={keys.PREBUILT_WORKLOAD_NAME: "wl1"})
    del want["metadata"]["uid"]
    assert JS.multikueue.remote_copy(local, "wl1", "origin1", identifier_annotations=True) == want


@pytest.mark.parametrize(
    "suspend",
    [
        pytest.param(False, id=f'{SOURCE} "sync status from remote jobset"'),
        pytest.param(True, id=f'{SOURCE} "sync status from remote while local jobset is suspended"'),
    ],
)
def test_kueue_sync_status_from_remote_jobset(suspend: bool) -> None:
    local = jobset("jobset1", "ns", suspend=suspend, managed_by=keys.MULTIKUEUE_CONTROLLER)
    remote = jobset("jobset1", "ns", suspend=suspend, status=copy.deepcopy(STATUS),
                    labels={keys.PREBUILT_WORKLOAD_NAME: "wl1", keys.MULTIKUEUE_ORIGIN: "origin1"})
    mirrored = JS.multikueue.with_remote_status(local, remote)
    want = jobset("jobset1", "ns", suspend=suspend, managed_by=keys.MULTIKUEUE_CONTROLLER,
                  status=copy.deepcopy(STATUS))
    assert mirrored == want, "the status comes over; spec (suspend and managedBy) stays the manager's"


@pytest.mark.parametrize(
    ("managed_by", "managed"),
    [
        pytest.param(None, False, id=f'{SOURCE} "job with wrong managedBy is not considered managed"'),
        pytest.param(OWN_CONTROLLER, False, id="the JobSet controller's own name"),
        pytest.param(keys.MULTIKUEUE_CONTROLLER, True, id=f'{SOURCE} "job managedBy multikueue"'),
    ],
)
def test_kueue_is_job_managed_by_kueue(managed_by: str | None, managed: bool) -> None:
    job = jobset("jobset1", "ns", suspend=False, managed_by=managed_by)
    assert managed_by_multikueue(JS, job) is managed
    assert JS.multikueue.managed_by(job) == managed_by
