"""The Events of the job reconciler's actions, worded as Kueue's jobframework words them
(pkg/controller/jobframework/reconciler.go), on the objects the actions wrote."""

from __future__ import annotations

import re
from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs import events, registry
from pykueue.manager.jobs.lifecycle import Delete, GroupedObjects, PodSetInfo, Replace
from pykueue.manager.jobs.pod.lifecycle import LIFECYCLE as POD
from pykueue.manager.jobs.pod_shape import role_hash

# What kube-apiserver accepts as an Event's reportingController (a qualified name).
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
QUALIFIED = re.compile(rf"^({_SUBDOMAIN}/)?{_NAME}$")


def _pod(name: str, group: str = "g") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                            "schedulingGates": [{"name": keys.ADMISSION_GATE}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "9",
                         "labels": {keys.QUEUE_NAME: "lq", keys.MANAGED: "true", keys.POD_GROUP_NAME: group},
                         "annotations": {keys.ROLE_HASH: role_hash(spec), keys.POD_GROUP_TOTAL_COUNT: "2"}},
            "spec": spec, "status": {"phase": "Pending"}}


def test_every_integration_reports_under_kueues_valid_controller_name() -> None:
    names = {k.integration.name: events.reporter(k.integration) for k in registry.kinds()}
    assert names["batch/job"] == "batch/job-kueue-controller"
    assert names["pod"] == "pod-kueue-controller"
    for name in names.values():
        assert QUALIFIED.match(name) and len(name.rpartition("/")[2]) <= 63, name


def test_the_texts_of_workload_creation_deletion_and_finish() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    wl = {"metadata": {"name": "job-j-5f6a1", "namespace": "ns"}}
    batch = next(k.integration for k in registry.kinds() if k.integration.kind == "Job")
    assert events.created_workload(batch, job, wl).note == "Created Workload: ns/job-j-5f6a1"
    assert events.deleted_workload(batch, job, wl).note == "Deleted not matching Workload: ns/job-j-5f6a1"
    finished = events.finished_workload(batch, job, "ns/job-j-5f6a1")
    assert (finished.reason, finished.note) == (
        "FinishedWorkload", "Workload 'ns/job-j-5f6a1' is declared finished")
    assert finished.regarding.uid == "u" and finished.regarding.resource_version == ""


def test_a_group_starts_and_stops_pod_by_pod_and_is_represented_by_its_first_pod() -> None:
    group = POD.assemble("ns", "g", [_pod("b"), _pod("a")])
    assert isinstance(POD, GroupedObjects)
    rep = POD.representative(group)
    assert rep is not None and rep["metadata"]["name"] == "a"
    admitted = {"status": {"admission": {"clusterQueue": "cq"}}}
    info = PodSetInfo(role_hash(_pod("a")["spec"]), 2)
    actions = POD.start(group, admitted, [info])
    started = events.started(POD.integration, actions, admitted)
    assert [(e.regarding.kind, e.regarding.name, e.reason, e.note) for e in started] == [
        ("Pod", "a", "Started", "Admitted by clusterQueue cq"),
        ("Pod", "b", "Started", "Admitted by clusterQueue cq")]
    assert all(e.reporter == "pod-kueue-controller" for e in started)
    running = POD.assemble("ns", "g", [a.obj for a in actions if isinstance(a, Replace)])
    stops = POD.stop(running)
    assert all(isinstance(a, Delete) for a in stops)
    stopped = events.stopped(POD.integration, stops, events.NOT_ADMITTED)
    assert [(e.regarding.name, e.note) for e in stopped] == [("a", "Not admitted by cluster queue"),
                                                            ("b", "Not admitted by cluster queue")]


def test_an_evicted_job_stops_with_the_eviction_message() -> None:
    workload = {"status": {"conditions": [{"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout",
                                           "message": "Exceeded the PodsReady timeout ns/w"}]}}
    assert events.eviction_message(workload) == "Exceeded the PodsReady timeout ns/w"
    assert events.eviction_message(workload, "The workload is deactivated") == "The workload is deactivated"
    assert events.MISSING_WORKLOAD == "Missing Workload; unable to restore pod templates"


def test_pending_checks_with_a_message_are_told_on_the_job() -> None:
    batch = next(k.integration for k in registry.kinds() if k.integration.kind == "Job")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    workload: dict[str, Any] = {"status": {"admissionChecks": [
        {"name": "a-check", "state": "Pending", "message": "waiting for capacity"},
        {"name": "b-check", "state": "Ready", "message": "provisioned"},
        {"name": "c-check", "state": "Pending", "message": ""},
        {"name": "d-check", "state": "Pending", "message": "queued in the cloud"}]}}
    update = events.admission_check_update(batch, job, workload)
    assert update is not None and (update.reason, update.note) == (
        "UpdatedAdmissionCheck", "a-check: waiting for capacity; d-check: queued in the cloud")
    workload["status"]["admissionChecks"] = [{"name": "a-check", "state": "Pending", "message": ""}]
    assert events.admission_check_update(batch, job, workload) is None
