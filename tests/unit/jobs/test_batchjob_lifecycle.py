"""batch/v1 Job: start on admission, stop and restore on eviction, finished, pods ready."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.batchjob.lifecycle import LIFECYCLE as JOB
from pykueue.manager.jobs.lifecycle import Replace, StartConflict, podset_infos

from .helpers import FLAVORS, admitted

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "x"}},
    "spec": {"nodeSelector": {"zone": "a"}, "containers": [{"name": "c", "image": "busybox"}]},
}


def _job(suspend: bool = True, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "name",
            "namespace": "ns",
            "uid": "uid",
            "resourceVersion": "7",
            "labels": {keys.QUEUE_NAME: "lq"},
        },
        "spec": {"suspend": suspend, "parallelism": 2, "template": TEMPLATE, **spec},
    }


def _started() -> dict[str, Any]:
    job = _job()
    [wl] = JOB.workloads(job)
    wl = admitted(wl, ["main"])
    [action] = JOB.start(job, wl, podset_infos(wl, FLAVORS))
    assert isinstance(action, Replace)
    return action.obj


def test_workload_name_and_content_follow_kueue() -> None:
    [wl] = JOB.workloads(_job())
    assert wl["metadata"]["name"] == JOB.workload_name(_job()) == "job-name-ef3a1"
    assert wl["spec"]["podSets"] == [{"name": "main", "count": 2, "template": TEMPLATE}]
    assert wl["metadata"]["ownerReferences"][0]["controller"] is True


def test_start_unsuspends_and_merges_flavor_labels_tolerations_and_podset_label() -> None:
    started = _started()
    assert started["spec"]["suspend"] is False
    assert started["metadata"]["resourceVersion"] == "7", "the write is a compare-and-swap"
    template = started["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"zone": "a", "instance-type": "on-demand"}
    assert template["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert template["metadata"]["labels"][keys.PODSET] == "main"
    assert not JOB.is_suspended(started) and JOB.is_active(started)


def test_a_node_selector_conflict_cannot_start() -> None:
    job = _job()
    [wl] = JOB.workloads(job)
    wl["spec"]["podSets"][0]["template"] = {"spec": {"nodeSelector": {"instance-type": "spot"}}}
    wl = admitted(wl, ["main"])
    with pytest.raises(StartConflict):
        JOB.start(job, wl, podset_infos(wl, FLAVORS))


def test_stop_then_restore_brings_back_the_original_template() -> None:
    job = _job()
    [wl] = JOB.workloads(job)
    [stop] = JOB.stop(_started())
    stopped = stop.obj
    assert stopped["spec"]["suspend"] is True
    assert JOB.restore(_started(), wl) == [], "no restore while the job still runs"
    [restore] = JOB.restore(stopped, wl)
    assert restore.obj["spec"]["template"] == TEMPLATE
    assert JOB.restore(restore.obj, wl) == [], "nothing left to restore"


def test_finished_reads_complete_and_failed_with_their_message() -> None:
    job = _job(suspend=False)
    assert JOB.finished(job) is None
    job["status"] = {"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}
    verdict = JOB.finished(job)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Failed", "BackoffLimitExceeded")
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    verdict = JOB.finished(job)
    assert verdict is not None and verdict.reason == "Succeeded"


def test_pods_ready_counts_ready_and_succeeded_against_min_of_parallelism_and_completions() -> None:
    job = _job(suspend=False, completions=1)
    assert not JOB.pods_ready(job)
    job["status"] = {"ready": 1}
    assert JOB.pods_ready(job), "completions=1 caps the count at 1"
    job = _job(suspend=False)
    job["status"] = {"ready": 1}
    assert not JOB.pods_ready(job)
    job["status"] = {"ready": 1, "succeeded": 1}
    assert JOB.pods_ready(job)


def test_a_job_owned_by_a_managed_kind_is_left_to_its_owner() -> None:
    policy = AdmissionPolicy.from_config(
        {"integrations": {"frameworks": ["batch/job", "kubeflow.org/pytorchjob"]}}
    )
    job = _job()
    ns = {"kubernetes.io/metadata.name": "ns"}
    assert JOB.is_managed(job, policy, ns)
    job["metadata"]["ownerReferences"] = [
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "p", "uid": "u", "controller": True}
    ]
    assert not JOB.is_managed(job, policy, ns)


def test_a_podset_started_with_a_topology_assignment_is_marked_for_the_tas_scheduler() -> None:
    job = _job()
    [wl] = JOB.workloads(job)
    wl = admitted(wl, ["main"])
    assert keys.TAS_LABEL not in _started()["spec"]["template"]["metadata"]["labels"]
    wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {
        "levels": ["kubernetes.io/hostname"], "slices": [{"domainCount": 1, "podCounts": {"universal": 2},
                                                          "valuesPerLevel": [{"universal": "node-1"}]}]}
    [action] = JOB.start(job, wl, podset_infos(wl, FLAVORS))
    assert isinstance(action, Replace)
    template = action.obj["spec"]["template"]
    assert template["metadata"]["labels"][keys.TAS_LABEL] == "true"
    assert template["metadata"]["annotations"][keys.WORKLOAD_ANNOTATION] == wl["metadata"]["name"]
    [stop] = JOB.stop(action.obj)
    [restore] = JOB.restore(stop.obj, JOB.workloads(job)[0])
    assert keys.TAS_LABEL not in (restore.obj["spec"]["template"]["metadata"].get("labels") or {})


def _partial_job(**annotations: str) -> dict[str, Any]:
    job = _job(parallelism=20, completions=20)
    job["metadata"]["annotations"] = {keys.JOB_MIN_PARALLELISM: "5", **annotations}
    return job


def _admit_count(wl: dict[str, Any], count: int) -> dict[str, Any]:
    wl = admitted(wl, ["main"])
    wl["status"]["admission"]["podSetAssignments"][0]["count"] = count
    return wl


def test_a_partially_admitted_job_runs_with_the_admitted_count_as_parallelism() -> None:
    job = _partial_job()
    [wl] = JOB.workloads(job)
    assert wl["spec"]["podSets"][0]["count"] == 20 and wl["spec"]["podSets"][0]["minCount"] == 5
    wl = _admit_count(wl, 9)
    [action] = JOB.start(job, wl, podset_infos(wl, FLAVORS))
    assert action.obj["spec"]["parallelism"] == 9, "no more pods run than the quota admitted"
    assert action.obj["spec"]["completions"] == 20, "completions stay as the user set them"
    assert action.obj["spec"]["suspend"] is False


def test_completions_follow_the_admitted_count_when_the_job_asks_for_it() -> None:
    job = _partial_job(**{keys.JOB_COMPLETIONS_EQUAL_PARALLELISM: "true"})
    [wl] = JOB.workloads(job)
    wl = _admit_count(wl, 7)
    [action] = JOB.start(job, wl, podset_infos(wl, FLAVORS))
    assert (action.obj["spec"]["parallelism"], action.obj["spec"]["completions"]) == (7, 7)


def test_restore_puts_the_requested_parallelism_back_after_a_partial_admission() -> None:
    job = _partial_job()
    [wl] = JOB.workloads(job)
    [start] = JOB.start(job, _admit_count(wl, 9), podset_infos(_admit_count(wl, 9), FLAVORS))
    [stop] = JOB.stop(start.obj)
    assert stop.obj["spec"]["parallelism"] == 9, "stopping only suspends"
    [restore] = JOB.restore(stop.obj, wl)
    assert restore.obj["spec"]["parallelism"] == 20
    assert restore.obj["spec"]["template"] == TEMPLATE
    assert JOB.restore(restore.obj, wl) == [], "nothing left to restore"


def test_a_job_without_partial_admission_keeps_its_parallelism() -> None:
    job = _job(parallelism=4)
    [wl] = JOB.workloads(job)
    wl = _admit_count(wl, 3)  # an admission never counts fewer, but the job must not follow one
    [action] = JOB.start(job, wl, podset_infos(wl, FLAVORS))
    assert action.obj["spec"]["parallelism"] == 4
    stopped = {**action.obj, "spec": {**action.obj["spec"], "suspend": True, "parallelism": 5}}
    [restore] = JOB.restore(stopped, wl)
    assert restore.obj["spec"]["parallelism"] == 5, "restore leaves a plain Job's parallelism alone"
