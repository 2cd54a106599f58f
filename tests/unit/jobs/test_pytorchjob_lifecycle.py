"""PyTorchJob: runPolicy.suspend, podsets master/worker, Succeeded/Failed, Running."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.lifecycle import StartConflict, podset_infos
from pykueue.manager.jobs.pytorchjob.lifecycle import LIFECYCLE as PTJ

from .helpers import FLAVORS, admitted


def _template(image: str) -> dict[str, Any]:
    return {
        "spec": {"containers": [{"name": "pytorch", "image": image, "resources": {"requests": {"cpu": "1"}}}]}
    }


def _ptj(suspend: bool = True, worker: bool = True) -> dict[str, Any]:
    replicas: dict[str, Any] = {"Master": {"replicas": 1, "template": _template("m")}}
    if worker:
        replicas["Worker"] = {"replicas": 2, "template": _template("w")}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "train",
            "namespace": "ns",
            "uid": "u1",
            "resourceVersion": "3",
            "labels": {keys.QUEUE_NAME: "lq"},
        },
        "spec": {"runPolicy": {"suspend": suspend}, "pytorchReplicaSpecs": replicas},
    }


def test_podsets_are_master_then_worker_with_their_replicas() -> None:
    [wl] = PTJ.workloads(_ptj())
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("master", 1), ("worker", 2)]
    assert wl["metadata"]["name"] == PTJ.workload_name(_ptj())
    assert wl["metadata"]["name"].startswith("pytorchjob-train-")


def test_start_unsuspends_and_edits_each_replica_template() -> None:
    job = _ptj()
    [wl] = PTJ.workloads(job)
    wl = admitted(wl, ["master", "worker"])
    [action] = PTJ.start(job, wl, podset_infos(wl, FLAVORS))
    started = action.obj
    assert started["spec"]["runPolicy"]["suspend"] is False and PTJ.is_active(started)
    for role, podset in (("Master", "master"), ("Worker", "worker")):
        template = started["spec"]["pytorchReplicaSpecs"][role]["template"]
        assert template["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
        assert template["metadata"]["labels"][keys.PODSET] == podset
    assert job["spec"]["runPolicy"]["suspend"] is True, "the input is not mutated"


def test_an_admission_for_other_podsets_cannot_start() -> None:
    job = _ptj()
    [wl] = PTJ.workloads(_ptj(worker=False))
    wl = admitted(wl, ["master"])
    with pytest.raises(StartConflict):
        PTJ.start(job, wl, podset_infos(wl, FLAVORS))


def test_stop_and_restore_undo_the_start() -> None:
    job = _ptj()
    [wl] = PTJ.workloads(job)
    [start] = PTJ.start(
        job, admitted(wl, ["master", "worker"]), podset_infos(admitted(wl, ["master", "worker"]), FLAVORS)
    )
    [stop] = PTJ.stop(start.obj)
    assert PTJ.is_suspended(stop.obj)
    [restore] = PTJ.restore(stop.obj, wl)
    for role, replica in job["spec"]["pytorchReplicaSpecs"].items():
        template = restore.obj["spec"]["pytorchReplicaSpecs"][role]["template"]
        assert template["spec"] == replica["template"]["spec"]
        assert not template.get("metadata"), "the podset label and queue labels are gone"
    assert PTJ.restore(restore.obj, wl) == []
    assert PTJ.restore(stop.obj, PTJ.workloads(_ptj(worker=False))[0]) == [], "podsets mismatch: skipped"


def test_finished_and_ready_come_from_the_operator_conditions() -> None:
    job = _ptj(suspend=False)
    assert PTJ.finished(job) is None and not PTJ.pods_ready(job)
    job["status"] = {"conditions": [{"type": "Running", "status": "True"}]}
    assert PTJ.pods_ready(job)
    job["status"]["conditions"].append({"type": "Succeeded", "status": "True", "message": "done"})
    verdict = PTJ.finished(job)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Succeeded", "done")
    job["status"] = {"conditions": [{"type": "Failed", "status": "True"}]}
    verdict = PTJ.finished(job)
    assert verdict is not None and verdict.reason == "Failed"


def test_without_queue_name_managed_only_under_mjwqn() -> None:
    job = _ptj()
    del job["metadata"]["labels"][keys.QUEUE_NAME]
    ns = {"kubernetes.io/metadata.name": "ns"}
    assert not PTJ.is_managed(job, AdmissionPolicy(), ns)
    assert PTJ.is_managed(job, AdmissionPolicy(manage_jobs_without_queue_name=True), ns)
    [wl] = PTJ.workloads(job)
    assert "queueName" not in wl["spec"], "the Workload waits until a queue name is added"
