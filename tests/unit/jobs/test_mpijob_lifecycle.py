"""MPIJob: runPolicy.suspend, podsets launcher/worker, Succeeded/Failed, Running, and the
registry's view of the kind (names, paths, MultiKueue copy)."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.lifecycle import DispatchedByMultiKueue, StartConflict, podset_infos
from pykueue.manager.jobs.mpijob.kind import KIND
from pykueue.manager.jobs.mpijob.lifecycle import LIFECYCLE as MPI
from pykueue.manager.jobs.registry import by_cli_name, kind_of, webhook_path, workloads_for
from pykueue.manager.runtime.job_resources import resource_for
from pykueue.webhook.app import routes

from .helpers import FLAVORS, admitted


def _template(image: str) -> dict[str, Any]:
    container = {"name": "mpi", "image": image, "resources": {"requests": {"cpu": "1"}}}
    return {"spec": {"containers": [container]}}


def mpijob(suspend: bool = True, launcher: bool = True, workers: int | None = 2,
           run_launcher_as_worker: bool | None = None) -> dict[str, Any]:
    specs: dict[str, Any] = {}
    # Worker first: the podset order must not follow the mapping's order.
    worker: dict[str, Any] = {"template": _template("w")}
    if workers is not None:
        worker["replicas"] = workers
    specs["Worker"] = worker
    if launcher:
        specs["Launcher"] = {"replicas": 1, "template": _template("l")}
    spec: dict[str, Any] = {"runPolicy": {"suspend": suspend}, "mpiReplicaSpecs": specs}
    if run_launcher_as_worker is not None:
        spec["runLauncherAsWorker"] = run_launcher_as_worker
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "train", "namespace": "ns", "uid": "u1", "resourceVersion": "3",
                     "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": spec,
    }


def _podsets(job: dict[str, Any]) -> list[tuple[str, int]]:
    [wl] = MPI.workloads(job)
    return [(p["name"], p["count"]) for p in wl["spec"]["podSets"]]


def test_podsets_are_launcher_then_worker_with_their_replicas() -> None:
    job = mpijob()
    [wl] = workloads_for(job)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("launcher", 1), ("worker", 2)]
    assert wl["spec"]["podSets"][1]["template"] == job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert wl["spec"]["queueName"] == "lq"
    assert wl["metadata"]["ownerReferences"][0] == {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                                                    "name": "train", "uid": "u1", "controller": True}
    assert wl["metadata"]["name"] == MPI.workload_name(job)
    assert wl["metadata"]["name"].startswith("mpijob-train-")


def test_the_launcher_running_as_a_worker_changes_neither_order_nor_counts() -> None:
    assert _podsets(mpijob(run_launcher_as_worker=True)) == [("launcher", 1), ("worker", 2)]


def test_replicas_default_to_one_and_a_missing_or_null_replica_type_is_no_podset() -> None:
    assert _podsets(mpijob(workers=None)) == [("launcher", 1), ("worker", 1)]
    assert _podsets(mpijob(launcher=False)) == [("worker", 2)]
    job = mpijob()
    job["spec"]["mpiReplicaSpecs"]["Launcher"] = None
    assert _podsets(job) == [("worker", 2)]
    job["spec"]["mpiReplicaSpecs"] = {"Launcher": None}
    with pytest.raises(ValueError, match="no replica specs"):
        MPI.workloads(job)


def test_a_topology_annotation_becomes_the_podsets_topology_request() -> None:
    job = mpijob()
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {keys.PODSET_REQUIRED_TOPOLOGY: "cloud.com/block"}}
    [wl] = MPI.workloads(job)
    launcher, worker = wl["spec"]["podSets"]
    assert "topologyRequest" not in launcher
    assert worker["topologyRequest"] == {"required": "cloud.com/block"}


def test_start_unsuspends_and_edits_each_replica_template() -> None:
    job = mpijob()
    [wl] = MPI.workloads(job)
    wl = admitted(wl, ["launcher", "worker"])
    [action] = MPI.start(job, wl, podset_infos(wl, FLAVORS))
    started = action.obj
    assert started["spec"]["runPolicy"]["suspend"] is False and MPI.is_active(started)
    for role, podset in (("Launcher", "launcher"), ("Worker", "worker")):
        template = started["spec"]["mpiReplicaSpecs"][role]["template"]
        assert template["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
        assert template["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
        assert template["metadata"]["labels"][keys.PODSET] == podset
    assert job["spec"]["runPolicy"]["suspend"] is True, "the input is not mutated"


def test_an_admission_for_other_podsets_cannot_start() -> None:
    job = mpijob()
    [wl] = MPI.workloads(mpijob(launcher=False))
    wl = admitted(wl, ["worker"])
    with pytest.raises(StartConflict):
        MPI.start(job, wl, podset_infos(wl, FLAVORS))


def test_stop_and_restore_undo_the_start() -> None:
    job = mpijob()
    [wl] = MPI.workloads(job)
    done = admitted(wl, ["launcher", "worker"])
    [start] = MPI.start(job, done, podset_infos(done, FLAVORS))
    [stop] = MPI.stop(start.obj)
    assert MPI.is_suspended(stop.obj) and not MPI.is_active(stop.obj)
    [restore] = MPI.restore(stop.obj, wl)
    for role, replica in job["spec"]["mpiReplicaSpecs"].items():
        template = restore.obj["spec"]["mpiReplicaSpecs"][role]["template"]
        assert template["spec"] == replica["template"]["spec"]
        assert not template.get("metadata"), "the podset label and queue labels are gone"
    assert MPI.restore(restore.obj, wl) == []
    assert MPI.restore(start.obj, wl) == [], "a running job is not restored"
    assert MPI.restore(stop.obj, MPI.workloads(mpijob(launcher=False))[0]) == [], "podsets mismatch: skipped"


def test_stop_creates_a_missing_run_policy() -> None:
    job = mpijob()
    del job["spec"]["runPolicy"]
    assert not MPI.is_suspended(job)
    [stop] = MPI.stop(job)
    assert stop.obj["spec"]["runPolicy"] == {"suspend": True}


def test_finished_is_the_first_true_verdict_and_ready_is_running() -> None:
    job = mpijob(suspend=False)
    assert MPI.finished(job) is None and not MPI.pods_ready(job)
    job["status"] = {"conditions": [{"type": "Created", "status": "True"},
                                    {"type": "Running", "status": "True"}]}
    assert MPI.pods_ready(job) and MPI.finished(job) is None
    job["status"]["conditions"] = [{"type": "Succeeded", "status": "False"},
                                   {"type": "Failed", "status": "True", "message": "launcher failed"},
                                   {"type": "Succeeded", "status": "True", "message": "done"}]
    verdict = MPI.finished(job)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Failed", "launcher failed")
    job["status"]["conditions"] = [{"type": "Running", "status": "False"},
                                   {"type": "Succeeded", "status": "True", "message": "done"}]
    verdict = MPI.finished(job)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Succeeded", "done")
    assert not MPI.pods_ready(job)


def test_it_runs_while_a_replica_type_has_active_pods() -> None:
    job: dict[str, Any] = {"spec": {"runPolicy": {"suspend": True}}, "status": {
        "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {"active": 2}}}}
    assert MPI.still_running(job) and not MPI.is_active(job)
    job["status"]["replicaStatuses"]["Worker"] = {"active": 0, "failed": 2}
    assert not MPI.still_running(job)
    assert not MPI.still_running({"spec": {}, "status": {}})


def test_without_queue_name_managed_only_under_mjwqn() -> None:
    job = mpijob()
    del job["metadata"]["labels"][keys.QUEUE_NAME]
    ns = {keys.NAMESPACE_NAME_LABEL: "ns"}
    assert not MPI.is_managed(job, AdmissionPolicy(), ns)
    assert MPI.is_managed(job, AdmissionPolicy(manage_jobs_without_queue_name=True), ns)
    assert workloads_for(job) == []
    [wl] = MPI.workloads(job)
    assert "queueName" not in wl["spec"], "the Workload waits until a queue name is added"


def test_a_workload_priority_class_label_is_the_workloads_priority_class() -> None:
    job = mpijob()
    job["metadata"]["labels"][keys.PRIORITY_CLASS] = "high"
    [wl] = MPI.workloads(job)
    assert wl["spec"]["priorityClassRef"] == {"group": keys.GROUP, "kind": "WorkloadPriorityClass",
                                              "name": "high"}


def test_multikueue_copies_it_without_run_policy_managed_by() -> None:
    assert isinstance(MPI, DispatchedByMultiKueue)
    job = mpijob()
    job["spec"]["runPolicy"]["managedBy"] = keys.MULTIKUEUE_CONTROLLER
    assert MPI.multikueue.managed_by(job) == keys.MULTIKUEUE_CONTROLLER
    copy = MPI.multikueue.remote_copy(job, "wl-1", "manager")
    assert "managedBy" not in copy["spec"]["runPolicy"]
    assert copy["spec"]["mpiReplicaSpecs"] == job["spec"]["mpiReplicaSpecs"]
    # WorkloadIdentifierAnnotations (on by default): the prebuilt name is an annotation.
    assert copy["metadata"]["annotations"][keys.PREBUILT_WORKLOAD_NAME] == "wl-1"
    assert keys.PREBUILT_WORKLOAD_NAME not in copy["metadata"]["labels"]
    assert copy["metadata"]["labels"][keys.MULTIKUEUE_ORIGIN] == "manager"


def test_the_registry_knows_the_kind_by_its_names_and_paths() -> None:
    job = mpijob()
    assert kind_of(job) is KIND and KIND.integration.prebuilt and not KIND.integration.elastic
    assert by_cli_name("mpijob") is by_cli_name("mpijobs") is by_cli_name("MPIJob.kubeflow.org") is KIND
    assert KIND.name == "kubeflow.org/mpijob"
    assert webhook_path("mutate", KIND.gvk) == "/mutate-kubeflow-org-v2beta1-mpijob"
    assert {webhook_path("mutate", KIND.gvk), webhook_path("validate", KIND.gvk)} <= set(routes())
    path = resource_for(job).object_path("train", "ns")
    assert path == "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs/train"
