"""LeaderWorkerSet groups: one Workload per group, pods adopted into groups, gated until
their group's Workload is admitted, deleted on eviction, serving groups never finish."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.leaderworkerset.lifecycle import LIFECYCLE as LWS
from pykueue.manager.jobs.leaderworkerset.lifecycle import group_workload_name
from pykueue.manager.jobs.lifecycle import Delete, Replace, StartConflict, podset_infos
from pykueue.manager.jobs.pod.lifecycle import LIFECYCLE as POD

from .helpers import FLAVORS, admitted

NS = {"kubernetes.io/metadata.name": "ns"}


def _lws(queue: str | None = "lq", leader: bool = True) -> dict[str, Any]:
    template = {
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}
    }
    lwt: dict[str, Any] = {"size": 2, "workerTemplate": template}
    if leader:
        lwt["leaderTemplate"] = template
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": "srv",
            "namespace": "ns",
            "uid": "lws-uid",
            "labels": {keys.QUEUE_NAME: queue} if queue else {},
        },
        "spec": {"replicas": 2, "leaderWorkerTemplate": lwt},
    }


def _pod(group: int, worker: int, phase: str = "Pending", gated: bool = True) -> dict[str, Any]:
    """A pod as the LWS controller creates it from a template Kueue's webhook stamped."""
    annotations = {
        keys.POD_SUSPENDING_PARENT: "leaderworkerset.x-k8s.io/leaderworkerset",
        keys.POD_GROUP_SERVING: "true",
    }
    if worker:
        annotations[keys.LWS_LEADER_NAME] = f"srv-{group}"
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if gated:
        spec["schedulingGates"] = [{"name": keys.ADMISSION_GATE}, {"name": keys.TOPOLOGY_GATE}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"srv-{group}" + (f"-{worker}" if worker else ""),
            "namespace": "ns",
            "uid": f"pod-{group}-{worker}",
            "resourceVersion": "1",
            "labels": {
                keys.LWS_NAME: "srv",
                keys.LWS_GROUP_INDEX: str(group),
                keys.LWS_WORKER_INDEX: str(worker),
            },
            "annotations": annotations,
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def _group(*pods: dict[str, Any]) -> dict[str, Any]:
    adopted = [LWS.adopt(_lws(), p) or p for p in pods]
    names = {POD.group_name(p) for p in adopted}
    assert len(names) == 1
    name = names.pop()
    assert name is not None
    return POD.assemble("ns", name, adopted)


def test_one_workload_per_group_with_leader_and_worker_podsets() -> None:
    wls = LWS.workloads(_lws())
    assert [w["metadata"]["name"] for w in wls] == [group_workload_name(_lws(), i) for i in (0, 1)]
    assert all(w["metadata"]["name"].startswith(f"leaderworkerset-srv-{i}-") for i, w in enumerate(wls))
    assert [(p["name"], p["count"]) for p in wls[0]["spec"]["podSets"]] == [("leader", 1), ("worker", 1)]
    assert wls[1]["metadata"]["annotations"][keys.COMPONENT_WORKLOAD_INDEX] == "1"
    assert wls[0]["metadata"]["ownerReferences"][0]["controller"] is False


def test_queue_less_lws_under_mjwqn_gets_group_workloads_that_wait() -> None:
    """The v0.12 fix: one Workload per group (empty queue name), never one per pod."""
    lws = _lws(queue=None)
    assert not LWS.is_managed(lws, AdmissionPolicy(), NS)
    assert LWS.is_managed(lws, AdmissionPolicy(manage_jobs_without_queue_name=True), NS)
    assert ["queueName" in w["spec"] for w in LWS.workloads(lws)] == [False, False]
    adopted = LWS.adopt(lws, _pod(1, 0))
    assert adopted is not None
    assert adopted["metadata"]["annotations"][keys.PREBUILT_WORKLOAD_NAME] == group_workload_name(lws, 1)
    assert keys.QUEUE_NAME not in adopted["metadata"]["labels"]
    assert POD.workloads(_group(_pod(1, 0))) == [], "pods never get Workloads of their own"


def test_adoption_stamps_group_size_role_and_queue_once() -> None:
    leader = LWS.adopt(_lws(), _pod(0, 0))
    worker = LWS.adopt(_lws(), _pod(0, 1))
    assert leader is not None and worker is not None
    assert leader["metadata"]["labels"][keys.MANAGED] == "true"
    assert leader["metadata"]["labels"][keys.QUEUE_NAME] == "lq"
    assert leader["metadata"]["annotations"][keys.POD_GROUP_TOTAL_COUNT] == "2"
    assert (
        leader["metadata"]["annotations"][keys.ROLE_HASH],
        worker["metadata"]["annotations"][keys.ROLE_HASH],
    ) == ("leader", "worker")
    assert LWS.adopt(_lws(leader=False), _pod(0, 1))["metadata"]["annotations"][keys.ROLE_HASH] == "main"  # type: ignore[index]
    assert LWS.adopt(_lws(), leader) is None, "already adopted"
    unindexed = _pod(0, 0)
    del unindexed["metadata"]["labels"][keys.LWS_GROUP_INDEX]
    assert LWS.adopt(_lws(), unindexed) is None, "waits for the LWS controller's group index"
    assert LWS.pod_owner({"metadata": {"labels": {keys.LWS_NAME: "srv"}}}) is None, "no suspending parent"


@pytest.mark.parametrize("identifier_annotations", [True, False])
def test_adoption_names_the_group_where_the_gate_says(identifier_annotations: bool) -> None:
    # Kueue's SetPodGroupName and SetPrebuiltWorkloadName: annotations under
    # WorkloadIdentifierAnnotations, labels without it; the pod's group reads either.
    pod = LWS.adopt(_lws(), _pod(1, 0), identifier_annotations=identifier_annotations)
    assert pod is not None
    name = group_workload_name(_lws(), 1)
    here, there = ("annotations", "labels") if identifier_annotations else ("labels", "annotations")
    for key in (keys.POD_GROUP_NAME, keys.PREBUILT_WORKLOAD_NAME):
        assert pod["metadata"][here][key] == name
        assert key not in pod["metadata"][there]
    assert POD.group_name(pod) == name
    assert POD.workload_name(POD.assemble("ns", name, [pod])) == name


def test_gated_group_starts_with_node_selector_and_loses_its_gates() -> None:
    group = _group(_pod(0, 0), _pod(0, 1))
    assert POD.is_suspended(group) and not POD.is_active(group)
    [wl] = LWS.workloads(_lws())[:1]
    assert POD.workload_name(group) == wl["metadata"]["name"]
    wl = admitted(wl, ["leader", "worker"])
    actions = POD.start(group, wl, podset_infos(wl, FLAVORS))
    assert len(actions) == 2 and all(isinstance(a, Replace) for a in actions)
    for action, role in zip(actions, ("leader", "worker"), strict=True):
        pod = action.obj
        assert "schedulingGates" not in pod["spec"], "admission and topology gates removed"
        assert pod["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
        assert pod["metadata"]["labels"][keys.PODSET] == role
    started = POD.assemble("ns", "g", [a.obj for a in actions])
    assert not POD.is_suspended(started) and POD.is_active(started)


def test_a_topology_assigned_group_loses_both_gates_and_is_marked_for_the_tas_scheduler() -> None:
    group = _group(_pod(0, 0), _pod(0, 1))
    [wl] = LWS.workloads(_lws())[:1]
    wl = admitted(wl, ["leader", "worker"])
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        psa["topologyAssignment"] = {"levels": ["kubernetes.io/hostname"], "slices": [
            {"domainCount": 1, "podCounts": {"universal": 1}, "valuesPerLevel": [{"universal": "n1"}]}]}
    for action in POD.start(group, wl, podset_infos(wl, FLAVORS)):
        pod = action.obj
        # No topology ungater here: the TAS scheduler's extender places the pods.
        assert "schedulingGates" not in pod["spec"]
        assert pod["metadata"]["labels"][keys.TAS_LABEL] == "true"
        assert pod["metadata"]["annotations"][keys.WORKLOAD_ANNOTATION] == wl["metadata"]["name"]


def test_a_pod_whose_role_is_not_admitted_cannot_start() -> None:
    group = _group(_pod(0, 0))
    wl = admitted({"spec": {"podSets": [{"name": "main", "count": 1}]}}, ["main"])
    with pytest.raises(StartConflict, match="leader"):
        POD.start(group, wl, podset_infos(wl, FLAVORS))


def test_stop_deletes_running_pods_and_leaves_gated_ones() -> None:
    group = _group(_pod(0, 0, phase="Running", gated=False), _pod(0, 1))
    actions = POD.stop(group)
    assert [type(a) for a in actions] == [Delete]
    assert actions[0].obj["metadata"]["name"] == "srv-0"
    assert POD.restore(group, {}) == []


def test_serving_groups_never_finish_batch_groups_finish_as_kueue_counts_them() -> None:
    done = _group(_pod(0, 0, gated=False), _pod(0, 1, gated=False))
    for pod in done["pods"]:
        pod["status"]["phase"] = "Succeeded"
    assert POD.finished(done) is None, "LWS groups serve"
    for pod in done["pods"]:
        del pod["metadata"]["annotations"][keys.POD_GROUP_SERVING]
    verdict = POD.finished(done)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Succeeded", "Pods succeeded: 2/2.")
    done["pods"][1]["status"]["phase"] = "Failed"
    assert POD.finished(done) is None, "a failed pod of a retriable group waits for its replacement"
    done["pods"][0]["metadata"]["annotations"][keys.RETRIABLE_IN_GROUP] = "false"
    verdict = POD.finished(done)
    assert verdict is not None and (verdict.reason, verdict.message) == ("Succeeded", "Pods succeeded: 1/2.")
    done["pods"] = done["pods"][:1]
    done["pods"][0]["metadata"]["annotations"].pop(keys.RETRIABLE_IN_GROUP)
    assert POD.finished(done) is None, "one of two pods is not a finished group"


def test_pods_ready_needs_the_whole_group_ready() -> None:
    leader, worker = _pod(0, 0, phase="Running", gated=False), _pod(0, 1, phase="Running", gated=False)
    leader["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert not POD.pods_ready(_group(leader, worker))
    worker["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert POD.pods_ready(_group(leader, worker))


def test_unadopted_pods_form_no_group() -> None:
    assert POD.group_name(_pod(0, 0)) is None
