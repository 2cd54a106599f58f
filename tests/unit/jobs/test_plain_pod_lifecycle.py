"""Plain pods and plain pod groups as Kueue's pod integration runs them (pod_controller.go):
the Workload a single pod or a complete group turns into, how each starts, when it
finishes, and whose ``kueue.x-k8s.io/managed`` finalizer may go."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.core.jobs_to_workloads import workload_name
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.lifecycle import PodSetInfo, Replace
from pykueue.manager.jobs.pod.lifecycle import LIFECYCLE as POD
from pykueue.manager.jobs.pod_shape import role_hash

NS = "team-a"
POD_ENABLED = AdmissionPolicy.from_config({"integrations": {"frameworks": ["pod"]}})
LWS_ONLY = AdmissionPolicy.from_config(
    {"integrations": {"frameworks": ["leaderworkerset.x-k8s.io/leaderworkerset"]}})


def _pod(name: str, cpu: str = "3", group: str | None = None, total: int | None = None,
         phase: str = "Pending", gated: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox",
                                            "resources": {"requests": {"cpu": cpu}}}]}
    labels = {keys.QUEUE_NAME: "user-queue", keys.MANAGED: "true"}
    annotations = {keys.ROLE_HASH: role_hash(spec)}
    if group is not None:
        labels[keys.POD_GROUP_NAME] = group
        annotations[keys.POD_GROUP_TOTAL_COUNT] = str(total)
    if gated:
        spec["schedulingGates"] = [{"name": keys.ADMISSION_GATE}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": labels,
                         "annotations": annotations, "finalizers": [keys.MANAGED_POD_FINALIZER],
                         "creationTimestamp": f"2026-01-01T00:00:0{len(name) % 10}Z"},
            "spec": spec, "status": {"phase": phase}}


def _group(*pods: dict[str, Any]) -> dict[str, Any]:
    name = POD.group_name(pods[0])
    assert name is not None
    return POD.assemble(NS, name, list(pods))


def test_a_single_pod_is_a_group_of_one_keyed_by_its_workload_name() -> None:
    pod = _pod("kueue-sleep-x7k2p")
    expected = workload_name("Pod", "", "kueue-sleep-x7k2p", "uid-kueue-sleep-x7k2p")
    assert POD.group_name(pod) == expected and expected.startswith("pod-kueue-sleep-x7k2p-")
    single = _group(pod)
    assert POD.workload_name(single) == expected
    [wl] = POD.workloads(single)
    assert wl["metadata"]["name"] == expected
    assert wl["spec"]["queueName"] == "user-queue"
    [ps] = wl["spec"]["podSets"]
    assert (ps["name"], ps["count"]) == ("main", 1)
    assert "schedulingGates" not in ps["template"]["spec"]
    [owner] = wl["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Pod", "kueue-sleep-x7k2p", True)


def test_an_unmanaged_or_lws_held_pod_forms_no_plain_group() -> None:
    pod = _pod("p")
    del pod["metadata"]["labels"][keys.MANAGED]
    assert POD.group_name(pod) is None
    held = _pod("lws-0")
    held["metadata"]["annotations"][keys.POD_SUSPENDING_PARENT] = "leaderworkerset.x-k8s.io/leaderworkerset"
    assert POD.group_name(held) is None, "an LWS pod waits for its owner to name its group"


def test_plain_pods_are_managed_only_while_the_pod_integration_itself_is_enabled() -> None:
    single = _group(_pod("p"))
    assert POD.is_managed(single, POD_ENABLED, {})
    assert not POD.is_managed(single, LWS_ONLY, {})


def test_a_group_waits_for_all_its_pods_then_gets_one_podset_per_role() -> None:
    leader = _pod("sample-leader-a", cpu="3", group="sample-group", total=3)
    assert POD.workloads(_group(leader)) == [], "1 of 3 pods: nothing to queue yet"
    w1 = _pod("sample-worker-b", cpu="1", group="sample-group", total=3)
    w2 = _pod("sample-worker-c", cpu="1", group="sample-group", total=3)
    group = _group(leader, w1, w2)
    assert POD.workload_name(group) == "sample-group"
    [wl] = POD.workloads(group)
    assert wl["metadata"]["name"] == "sample-group"
    assert wl["metadata"]["annotations"] == {keys.IS_GROUP_WORKLOAD: "true"}
    assert keys.JOB_UID not in wl["metadata"]["labels"]
    worker_role = w1["metadata"]["annotations"][keys.ROLE_HASH]
    leader_role = leader["metadata"]["annotations"][keys.ROLE_HASH]
    assert leader_role != worker_role
    got = {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]}
    assert got == {leader_role: 1, worker_role: 2}
    assert [ps["name"] for ps in wl["spec"]["podSets"]] == sorted(got), "sorted by role, as Kueue"
    owners = wl["metadata"]["ownerReferences"]
    assert sorted(o["name"] for o in owners) == ["sample-leader-a", "sample-worker-b", "sample-worker-c"]
    assert not any(o.get("controller") for o in owners)


def test_a_failed_pod_does_not_count_toward_the_group() -> None:
    a = _pod("a", group="g", total=2)
    b = _pod("b", group="g", total=2, phase="Failed", gated=False)
    assert POD.workloads(_group(a, b)) == []


def test_start_ungates_a_single_pod_with_the_main_podset_info() -> None:
    single = _group(_pod("p"))
    info = PodSetInfo("main", 1, labels={keys.PODSET: "main"}, node_selector={"instance-type": "on-demand"})
    [action] = POD.start(single, {}, [info])
    assert isinstance(action, Replace)
    started = action.obj
    assert "schedulingGates" not in started["spec"]
    assert started["spec"]["nodeSelector"] == {"instance-type": "on-demand"}


def test_a_single_pod_finishes_with_its_phase() -> None:
    pod = _pod("p", phase="Running", gated=False)
    assert POD.finished(_group(pod)) is None
    pod["status"] = {"phase": "Succeeded"}
    verdict = POD.finished(_group(pod))
    assert verdict is not None and verdict.reason == "Succeeded"
    pod["status"] = {"phase": "Failed", "message": "OOMKilled"}
    verdict = POD.finished(_group(pod))
    assert verdict is not None and (verdict.reason, verdict.message) == ("Failed", "OOMKilled")


def _released(actions: list[Any]) -> list[str]:
    out = []
    for a in actions:
        assert isinstance(a, Replace)
        assert keys.MANAGED_POD_FINALIZER not in a.obj["metadata"]["finalizers"]
        out.append(a.obj["metadata"]["name"])
    return out


def test_finalizers_go_when_the_workload_finished_or_the_pod_is_deleted() -> None:
    running = _pod("p", phase="Running", gated=False)
    assert POD.finalize(_group(running), False) == [], "a running pod keeps it: its end must be seen"
    assert _released(POD.finalize(_group(running), True)) == ["p"]
    running["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    assert _released(POD.finalize(_group(running), False)) == ["p"]
    running["metadata"]["finalizers"] = []
    assert POD.finalize(_group(running), True) == [], "nothing left to remove"


def test_a_failed_group_member_loses_its_finalizer_a_succeeded_one_keeps_it() -> None:
    ok = _pod("a", group="g", total=2, phase="Succeeded", gated=False)
    failed = _pod("b", group="g", total=2, phase="Failed", gated=False)
    assert _released(POD.finalize(_group(ok, failed), False)) == ["b"]
    assert _released(POD.finalize(_group(ok, failed), True)) == ["a", "b"]
