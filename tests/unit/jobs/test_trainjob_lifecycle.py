"""TrainJob: spec.suspend, pod sets from the training runtime, start through Kueue's runtime
patch (written suspended, then unsuspended), restore, Complete/Failed, pods ready from
jobsStatus, the MultiKueue copy; with Kueue v0.19.2's own cases ported."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.lifecycle import (
    JobLifecycle,
    PodSetInfo,
    Replace,
    StartConflict,
    managed_by_multikueue,
    podset_infos,
)
from pykueue.manager.jobs.registry import kind_of, workloads_for
from pykueue.manager.jobs.related import ReadsRelated, RelatedMissing
from pykueue.manager.jobs.trainjob.lifecycle import LIFECYCLE, NoKueuePatch, kueue_patch
from pykueue.manager.jobs.trainjob.runtime import CLUSTER_TRAINING_RUNTIME

from .helpers import FLAVORS, admitted
from .trainjob_objects import (
    TRAINER_LABELS,
    cluster_runtime,
    related,
    replicated_job,
    rj_patch,
    runtime_patch,
    trainjob,
)

JSON = dict[str, Any]
KUEUE = "kueue.x-k8s.io/manager"
USER = "example.com/user-manager"
TOLERATION_1 = {"key": "t1k", "operator": "Equal", "value": "t1v", "effect": "NoExecute"}
TOLERATION_2 = {"key": "t2k", "operator": "Exists", "effect": "NoSchedule"}


def _two_job_runtime() -> JSON:
    return cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS), replicated_job("foo"))


def _bound(*runtimes: JSON) -> Any:
    return LIFECYCLE.bind(related(*runtimes))


def _final(actions: list[Any]) -> JSON:
    """The object the last of the start's writes leaves."""
    obj: JSON = actions[-1].obj
    return obj


# -- the related-objects capability ----------------------------------------------------------


def test_it_reads_its_runtime_and_is_bound_to_it() -> None:
    assert isinstance(LIFECYCLE, ReadsRelated) and isinstance(LIFECYCLE, JobLifecycle)
    assert [k.kind for k in LIFECYCLE.related_kinds] == ["ClusterTrainingRuntime", "TrainingRuntime"]
    assert LIFECYCLE.needs(trainjob()) == (CLUSTER_TRAINING_RUNTIME.key("test"),)
    bound = _bound(_two_job_runtime())
    assert isinstance(bound, type(LIFECYCLE)) and bound is not LIFECYCLE and not LIFECYCLE.related
    with pytest.raises(RelatedMissing):
        LIFECYCLE.workloads(trainjob(queue="lq"))  # unbound: nothing to build from
    [wl] = bound.workloads(trainjob(queue="lq"))
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("node", 1), ("foo", 1)]
    assert wl["metadata"]["name"] == LIFECYCLE.workload_name(trainjob())
    assert wl["metadata"]["name"].startswith("trainjob-trainjob-")
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    assert wl["spec"]["queueName"] == "lq"


def test_the_registry_builds_it_from_the_runtime_handed_in() -> None:
    tj = trainjob(queue="lq")
    kind = kind_of(tj)
    assert kind is not None and kind.name == "trainer.kubeflow.org/trainjob"
    assert kind.integration.prebuilt and not kind.integration.elastic
    [wl] = workloads_for(tj, related(_two_job_runtime()))
    assert len(wl["spec"]["podSets"]) == 2
    assert workloads_for(trainjob(), related(_two_job_runtime())) == []  # no queue name


def test_suspended_active_and_still_running() -> None:
    tj = trainjob()
    assert LIFECYCLE.is_suspended(tj) and not LIFECYCLE.is_active(tj)
    running = trainjob(suspend=False)
    assert LIFECYCLE.is_active(running) and not LIFECYCLE.is_suspended(running)
    assert not LIFECYCLE.still_running(running)
    running["status"] = {"jobsStatus": [{"name": "node", "active": 0}, {"name": "foo", "active": 1}]}
    assert LIFECYCLE.still_running(running)


# -- start, stop, restore --------------------------------------------------------------------


def test_start_writes_the_patch_suspended_then_unsuspends() -> None:
    tj = trainjob(queue="lq", patches=[runtime_patch(KUEUE)])
    bound = _bound(_two_job_runtime())
    [wl] = bound.workloads(tj)
    wl = admitted(wl, ["node", "foo"])
    first, second = bound.start(tj, wl, podset_infos(wl, FLAVORS))
    assert isinstance(first, Replace) and isinstance(second, Replace)
    assert first.obj["spec"]["suspend"] is True and second.obj["spec"]["suspend"] is False
    assert first.obj["spec"]["runtimePatches"] == second.obj["spec"]["runtimePatches"]
    node = kueue_patch(second.obj)["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]  # type: ignore[index]
    pod = node["template"]["spec"]["template"]
    assert node["name"] == "node"
    assert pod["spec"] == {"nodeSelector": {"instance-type": "on-demand"},
                           "tolerations": [{"key": "spot", "operator": "Exists"}]}
    assert pod["metadata"]["labels"][keys.PODSET] == "node"
    assert pod["metadata"]["annotations"][keys.WORKLOAD_ANNOTATION] == wl["metadata"]["name"]
    assert tj["spec"]["runtimePatches"] == [runtime_patch(KUEUE)], "the input is not mutated"
    # The trainer would now make the JobSet with the admission in its pods.
    started = bound.workloads({**second.obj, "metadata": {**second.obj["metadata"], "labels": {}}})
    pod_spec = started[0]["spec"]["podSets"][0]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {"instance-type": "on-demand"}


def test_start_without_kueues_patch_fails_and_is_retried() -> None:
    bound = _bound(_two_job_runtime())
    tj = trainjob(queue="lq")
    [wl] = bound.workloads(tj)
    wl = admitted(wl, ["node", "foo"])
    with pytest.raises(NoKueuePatch, match="kueue runtime patch not found"):
        bound.start(tj, wl, podset_infos(wl, FLAVORS))
    assert not isinstance(NoKueuePatch(), StartConflict)  # not permanent: Kueue retries


def test_stop_suspends_and_restore_waits_until_no_job_is_active() -> None:
    bound = _bound(_two_job_runtime())
    tj = trainjob(queue="lq", patches=[runtime_patch(KUEUE)])
    [wl] = bound.workloads(tj)
    wl = admitted(wl, ["node", "foo"])
    started = _final(bound.start(tj, wl, podset_infos(wl, FLAVORS)))
    [stop] = bound.stop(started)
    assert stop.obj["spec"]["suspend"] is True
    stopped = copy.deepcopy(stop.obj)
    assert bound.restore(started, wl) == []  # not suspended yet
    stopped["status"] = {"jobsStatus": [{"name": "node", "active": 1}]}
    assert bound.restore(stopped, wl) == []  # its Jobs still run
    stopped["status"] = {"jobsStatus": [{"name": "node", "active": 0}]}
    [restore] = bound.restore(stopped, wl)
    assert restore.obj["spec"]["runtimePatches"] == [runtime_patch(KUEUE)]
    assert bound.restore(restore.obj, wl) == []  # nothing left to undo


def test_finished_from_complete_or_failed() -> None:
    tj = trainjob()
    assert LIFECYCLE.finished(tj) is None
    tj["status"] = {"conditions": [{"type": "Complete", "status": "True", "message": "done"}]}
    finished = LIFECYCLE.finished(tj)
    assert finished is not None and (finished.reason, finished.message) == (keys.Reason.SUCCEEDED, "done")
    tj["status"] = {"conditions": [{"type": "Complete", "status": "False"},
                                   {"type": "Failed", "status": "True", "message": "oom"}]}
    finished = LIFECYCLE.finished(tj)
    assert finished is not None and (finished.reason, finished.message) == (keys.Reason.FAILED, "oom")


def test_pods_ready_counts_every_job_of_the_jobset() -> None:
    rt = cluster_runtime("test", replicated_job("node", labels=TRAINER_LABELS, replicas=4),
                         replicated_job("foo", replicas=2))
    bound = _bound(rt)
    tj = trainjob(suspend=False, num_nodes=3)
    assert not bound.pods_ready(tj)
    # The trainer step runs one Job whatever the runtime says; foo runs two.
    tj["status"] = {"jobsStatus": [{"name": "node", "ready": 1}, {"name": "foo", "ready": 1, "succeeded": 0}]}
    assert not bound.pods_ready(tj)
    tj["status"]["jobsStatus"][1]["succeeded"] = 1
    assert bound.pods_ready(tj)


# -- the MultiKueue copy ------------------------------------------------------------------------


def test_the_worker_copy_drops_managed_by_and_kueues_patch_only() -> None:
    tj = trainjob(queue="lq", patches=[runtime_patch(USER, rj_patch("node", node_selector={"a": "b"})),
                                       runtime_patch(KUEUE)])
    tj["spec"]["managedBy"] = keys.MULTIKUEUE_CONTROLLER
    remote = LIFECYCLE.multikueue.remote_copy(tj, "wl1", "origin1")
    assert "managedBy" not in remote["spec"]
    assert [p["manager"] for p in remote["spec"]["runtimePatches"]] == [USER]
    assert [p["manager"] for p in tj["spec"]["runtimePatches"]] == [USER, KUEUE], "the input is not mutated"


# -- Kueue v0.19.2 trainjob_controller_test.go TestRunWithPodsetsInfo --------------------------


def _run_case_job(patches: list[JSON] | None) -> JSON:
    return trainjob(patches=patches)


def _run_runtime() -> JSON:
    # MakeJobSet("", "").ReplicatedJobs({Name: "node", Labels: trainer}): zero replicas,
    # parallelism and completions, as Kueue's wrapper sets them.
    return cluster_runtime("test", replicated_job("node", replicas=0, parallelism=0, completions=0,
                                                  labels=TRAINER_LABELS))


def _info(name: str, *, annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
          node_selector: dict[str, str] | None = None, tolerations: tuple[JSON, ...] = ()) -> PodSetInfo:
    return PodSetInfo(name, 1, labels or {}, annotations or {}, node_selector or {}, tolerations)


@pytest.mark.parametrize("case", [
    "should add to the TrainJob the config specified in the PodSet info",
    "should respect user provided RuntimePatches when adding PodSet info config to the trainjob",
    "should replace existing Kueue overrides (idempotency)",
])
def test_kueue_run_with_podsets_info(case: str) -> None:
    """kueue v0.19.2 trainjob_controller_test.go TestRunWithPodsetsInfo (the cases that start;
    pykueue's PodSetInfo has no scheduling gates -- TAS pods are routed by scheduler name -- so
    the cases' SchedulingGate lines are left out on both sides)."""
    user = runtime_patch(USER, rj_patch("node", node_selector={"disktype": "sdd"},
                                        tolerations=[TOLERATION_1]))
    if case.startswith("should add"):
        before = [runtime_patch(KUEUE, empty_metadata=True)]
        infos = [_info("node", annotations={"test-annotation": "test"},
                       labels={keys.PODSET: "node", "test-label": "label"},
                       node_selector={"disktype": "ssd"}, tolerations=(TOLERATION_1,))]
        after = [runtime_patch(KUEUE, rj_patch(
            "node", pod_annotations={"test-annotation": "test"},
            pod_labels={keys.PODSET: "node", "test-label": "label"}, node_selector={"disktype": "ssd"},
            tolerations=[TOLERATION_1]), empty_metadata=True)]
    elif case.startswith("should respect"):
        before = [user, runtime_patch(KUEUE, empty_metadata=True)]
        infos = [_info("node", annotations={"test-annotation": "test"},
                       labels={keys.PODSET: "node", "test-label": "label"},
                       node_selector={"gpu": "nvidia"}, tolerations=(TOLERATION_2,))]
        after = [user, runtime_patch(KUEUE, rj_patch(
            "node", pod_annotations={"test-annotation": "test"},
            pod_labels={keys.PODSET: "node", "test-label": "label"}, node_selector={"gpu": "nvidia"},
            tolerations=[TOLERATION_2]), empty_metadata=True)]
    else:
        user = runtime_patch(USER, rj_patch("user-provided", node_selector={"disktype": "sdd"}))
        before = [user, runtime_patch(KUEUE, rj_patch(
            "node", pod_annotations={"test-annotation": "old-value"}, pod_labels={keys.PODSET: "node"},
            node_selector={"old-selector": "value"}), empty_metadata=True)]
        infos = [_info("node", annotations={"test-annotation": "new-value"}, labels={keys.PODSET: "node"},
                       node_selector={"new-selector": "value"})]
        after = [user, runtime_patch(KUEUE, rj_patch(
            "node", pod_annotations={"test-annotation": "new-value"}, pod_labels={keys.PODSET: "node"},
            node_selector={"new-selector": "value"}), empty_metadata=True)]
    tj = _run_case_job(before)
    got = _final(_bound(_run_runtime()).start(tj, {}, infos))
    want = trainjob(patches=after, suspend=False)
    assert got == want


@pytest.mark.parametrize("case", [
    "should not modify the TrainJob if the wrong number of PodSet infos is provided",
    "should return an error if the trainjob references an unknown training runtime",
])
def test_kueue_run_with_podsets_info_errors(case: str) -> None:
    """kueue v0.19.2 trainjob_controller_test.go TestRunWithPodsetsInfo (the failing cases).
    The second case's runtime exists in Kueue's fake client and it passes no infos: it fails on
    the count, as here; a runtime that is really missing is the next test."""
    tj = trainjob()
    before = copy.deepcopy(tj)
    infos = [] if "unknown" in case else [
        _info("node", node_selector={"disktype": "ssd"}, tolerations=(TOLERATION_1,)),
        _info("non-existent-job", node_selector={"gpu": "nvidia"}, tolerations=(TOLERATION_2,))]
    with pytest.raises(StartConflict, match="expecting 1 podset, got"):
        _bound(_run_runtime()).start(tj, {}, infos)
    assert tj == before


def test_a_start_without_its_runtime_fails_and_changes_nothing() -> None:
    tj = trainjob(patches=[runtime_patch(KUEUE)])
    with pytest.raises(RelatedMissing, match="runtime 'test' not found"):
        LIFECYCLE.bind({}).start(tj, {}, [_info("node")])


# -- Kueue v0.19.2 trainjob_controller_test.go TestRestorePodSetsInfo -------------------------


def test_kueue_restore_clears_replicated_job_patches_from_the_kueue_runtime_patch() -> None:
    """kueue v0.19.2 trainjob_controller_test.go TestRestorePodSetsInfo
    "should clear replicated job patches from the kueue RuntimePatch"."""
    user = runtime_patch(USER, rj_patch("user-provided-1"), rj_patch("user-provided-2"))
    kueue = runtime_patch(KUEUE, rj_patch("kueue-provided-1"), rj_patch("kueue-provided-2"),
                          empty_metadata=True)
    tj = trainjob(patches=[user, kueue])
    [restore] = LIFECYCLE.restore(tj, {})
    assert restore.obj == trainjob(patches=[user, runtime_patch(KUEUE, empty_metadata=True)])


# -- Kueue v0.19.2 trainjob_controller_test.go TestReconciler -----------------------------------


@pytest.mark.parametrize(("case", "num_nodes", "want"), [
    ("workload is created with the corresponding podsets", None, [("node", 1), ("foo", 1)]),
    ("podset count for the trainer job is set to .Spec.Trainer.NumNodes", 2, [("node", 2), ("foo", 1)]),
])
def test_kueue_reconciler_workload_podsets(case: str, num_nodes: int | None,
                                           want: list[tuple[str, int]]) -> None:
    """kueue v0.19.2 trainjob_controller_test.go TestReconciler: the Workload's pod sets (names
    and counts; Kueue's comparison ignores templates). Kueue also writes each pod set's pod index
    and sub-group labels as a topology request even without topology annotations; pykueue writes
    a topology request only for pod sets that ask for a topology, for every kind."""
    tj = trainjob(num_nodes=num_nodes)  # manageJobsWithoutQueueName: built whatever the queue
    [wl] = _bound(_two_job_runtime()).workloads(tj)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == want


# -- Kueue v0.19.2 trainjob_multikueue_adapter_test.go TestMultiKueueAdapter ------------------


def _managed(tj: JSON) -> JSON:
    tj["spec"]["managedBy"] = keys.MULTIKUEUE_CONTROLLER
    return tj


@pytest.mark.parametrize("case", [
    "sync creates missing remote TrainJob",
    "sync creates remote TrainJob stripping kueue runtime patch",
])
def test_kueue_multikueue_remote_copy(case: str) -> None:
    """kueue v0.19.2 trainjob_multikueue_adapter_test.go TestMultiKueueAdapter (these cases
    turn WorkloadIdentifierAnnotations off: the prebuilt Workload is named in a label)."""
    local = _managed(trainjob("trainjob1", suspend=False))
    del local["metadata"]["uid"], local["metadata"]["resourceVersion"]
    if "stripping" in case:
        local["spec"]["runtimePatches"] = [runtime_patch(KUEUE)]
    remote = LIFECYCLE.multikueue.remote_copy(local, "wl1", "origin1", identifier_annotations=False)
    want = trainjob("trainjob1", suspend=False)
    del want["metadata"]["uid"], want["metadata"]["resourceVersion"]
    want["metadata"]["labels"] = {keys.PREBUILT_WORKLOAD_NAME: "wl1", keys.MULTIKUEUE_ORIGIN: "origin1"}
    assert remote == want


@pytest.mark.parametrize("case", [
    "sync status from remote trainjob",
    "sync status from remote while local trainjob is suspended",
])
def test_kueue_multikueue_status_is_copied_back(case: str) -> None:
    """kueue v0.19.2 trainjob_multikueue_adapter_test.go TestMultiKueueAdapter."""
    suspend = "suspended" in case
    local = _managed(trainjob("trainjob1", suspend=suspend))
    remote = trainjob("trainjob1", suspend=suspend)
    remote["status"] = {"jobsStatus": [
        {"name": "replicated-job-1", "ready": 1, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0},
        {"name": "replicated-job-2", "ready": 3, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}]}
    mirrored = LIFECYCLE.multikueue.with_remote_status(local, remote)
    assert mirrored == {**local, "status": remote["status"]}
    assert LIFECYCLE.multikueue.with_remote_status(mirrored, remote) is None


@pytest.mark.parametrize(("case", "managed_by", "want"), [
    ("job with wrong managedBy is not considered managed", None, False),
    ("job managedBy multikueue", keys.MULTIKUEUE_CONTROLLER, True),
])
def test_kueue_multikueue_is_job_managed(case: str, managed_by: str | None, want: bool) -> None:
    """kueue v0.19.2 trainjob_multikueue_adapter_test.go TestMultiKueueAdapter."""
    tj = trainjob("trainjob1", suspend=False)
    if managed_by is not None:
        tj["spec"]["managedBy"] = managed_by
    assert managed_by_multikueue(LIFECYCLE, tj) is want
