"""Deployments and StatefulSets run through the pod integration, as Kueue v0.19.2 runs them:
a Deployment's pods one Workload each (scaled out, the new pods wait for quota one by one;
scaled in, the removed pods' Workloads go with them), a StatefulSet's pods as one serving
group under the StatefulSet's Workload (gated until it is admitted, deleted on eviction and
recreated gated, never finished)."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.deployment.webhook import WEBHOOK as DEPLOYMENT_WEBHOOK
from pykueue.manager.jobs.lifecycle import Delete, Replace, podset_infos
from pykueue.manager.jobs.pod.lifecycle import LIFECYCLE as POD
from pykueue.manager.jobs.pod.lifecycle import single_pod_workload_name
from pykueue.manager.jobs.pod.webhook import WEBHOOK as POD_WEBHOOK
from pykueue.manager.jobs.registry import enabled_registry
from pykueue.manager.jobs.statefulset.kind import workloads as sts_workloads
from pykueue.manager.jobs.statefulset.lifecycle import LIFECYCLE as STS
from pykueue.manager.jobs.statefulset.webhook import WEBHOOK as STS_WEBHOOK

from .helpers import FLAVORS, admitted
from .serving_objects import ctx, deployment, queue, replicas, statefulset, sts_pod, uid

JSON = dict[str, Any]
NS = {keys.NAMESPACE_NAME_LABEL: "ns"}
SERVING_ONLY = AdmissionPolicy(frameworks=frozenset({"deployment", "statefulset"}))


def _deployment_pod(name: str = "web-abc12-x1") -> JSON:
    """A pod as a ReplicaSet of a stamped Deployment creates it, after the pod webhook."""
    d = DEPLOYMENT_WEBHOOK.default(queue(deployment("web", "ns"), "lq"), ctx())
    template = d["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **template["metadata"],
            "name": name,
            "namespace": "ns",
            "uid": f"{name}-uid",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-abc12",
                    "uid": "rs-uid",
                    "controller": True,
                }
            ],
        },
        "spec": dict(template["spec"]),
        "status": {"phase": "Pending"},
    }
    return POD_WEBHOOK.default(pod, ctx(frameworks=("deployment",)))


def test_serving_kinds_imply_the_pod_integration_for_their_pods_only() -> None:
    for framework in ("deployment", "statefulset"):
        policy = AdmissionPolicy(frameworks=frozenset({framework}))
        assert policy.integration_enabled("pod") and not policy.explicitly_enabled("pod")
    assert enabled_registry(SERVING_ONLY).kinds() == ["StatefulSet", "Pod"]  # a Deployment is not reconciled
    plain = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {},
    }
    assert POD_WEBHOOK.default(plain, ctx(frameworks=("deployment",))) == plain, "plain pods are not Kueue's"


def test_a_deployment_pod_is_held_by_its_parent_and_runs_as_a_single_pod() -> None:
    pod = _deployment_pod()
    assert {"name": keys.ADMISSION_GATE} in pod["spec"]["schedulingGates"]
    assert pod["metadata"]["labels"][keys.MANAGED] == "true" and "finalizers" not in pod["metadata"]
    name = POD.group_name(pod)
    assert name == single_pod_workload_name(pod) and name.startswith("pod-web-abc12-x1-")
    group = POD.assemble("ns", name, [pod])
    assert POD.is_managed(group, SERVING_ONLY, NS)
    [wl] = POD.workloads(group)
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("main", 1)]
    assert wl["spec"]["queueName"] == "lq"
    assert wl["metadata"]["ownerReferences"][0] | {} == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "web-abc12-x1",
        "uid": "web-abc12-x1-uid",
        "controller": True,
    }
    assert POD.is_suspended(group)
    wl = admitted(wl, ["main"])
    [start] = POD.start(group, wl, podset_infos(wl, FLAVORS))
    assert isinstance(start, Replace) and "schedulingGates" not in start.obj["spec"]
    assert start.obj["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
    running = POD.assemble("ns", name, [{**start.obj, "status": {"phase": "Running"}}])
    assert POD.stop(running) == [Delete(running["pods"][0])], "evicted: deleted, its ReplicaSet makes another"
    assert POD.finished(running) is None


def test_statefulset_pods_wait_for_adoption_then_run_as_one_serving_group() -> None:
    sts = replicas(uid(STS_WEBHOOK.default(queue(statefulset("web", "ns"), "lq"), ctx()), "sts-uid"), 2)
    pods = [POD_WEBHOOK.default(sts_pod(sts, i), ctx(frameworks=("statefulset",))) for i in range(2)]
    assert all(keys.MANAGED not in p["metadata"]["labels"] for p in pods)
    assert [POD.group_name(p) for p in pods] == [None, None], "not the pod kind's until adopted"
    assert [STS.pod_owner(p) for p in pods] == ["web", "web"]
    adopted = [STS.adopt(sts, p) for p in pods]
    assert all(a is not None for a in adopted)
    group_name = sts_workloads(sts)[0]["metadata"]["name"]
    assert [POD.group_name(a) for a in adopted if a] == [group_name, group_name]
    group = POD.assemble("ns", group_name, [a for a in adopted if a])
    assert POD.is_managed(group, SERVING_ONLY, NS)
    assert POD.workloads(group) == [], "the StatefulSet's Workload, never one of the pods'"
    assert POD.workload_name(group) == group_name
    wl = admitted(sts_workloads(sts)[0], ["main"])
    started = POD.start(group, wl, podset_infos(wl, FLAVORS))
    assert len(started) == 2 and all("schedulingGates" not in a.obj["spec"] for a in started)
    running = POD.assemble("ns", group_name, [{**a.obj, "status": {"phase": "Running"}} for a in started])
    assert POD.finished(running) is None, "serving: never finished"
    assert len(POD.stop(running)) == 2


def test_statefulset_pods_created_before_admission_of_a_fast_admission_group_start_as_they_come() -> None:
    """OrderedReady: pod 1 appears only once pod 0 runs; the admitted group ungates it then."""
    sts = replicas(uid(STS_WEBHOOK.default(queue(statefulset("web", "ns"), "lq"), ctx()), "sts-uid"), 2)
    wl = admitted(sts_workloads(sts)[0], ["main"])
    group_name = wl["metadata"]["name"]
    first = STS.adopt(sts, sts_pod(sts, 0))
    assert first is not None
    [start0] = POD.start(POD.assemble("ns", group_name, [first]), wl, podset_infos(wl, FLAVORS))
    second = STS.adopt(sts, sts_pod(sts, 1))
    assert second is not None
    group = POD.assemble("ns", group_name, [{**start0.obj, "status": {"phase": "Running"}}, second])
    assert POD.is_suspended(group)
    [start1] = POD.start(group, wl, podset_infos(wl, FLAVORS))
    assert start1.obj["metadata"]["name"] == "web-1"


def test_a_statefulset_of_an_lws_is_not_the_statefulset_integrations() -> None:
    lws_parent = "leaderworkerset.x-k8s.io/leaderworkerset"
    sts = queue(statefulset("web", "ns"), "lq")
    sts["spec"]["template"]["metadata"]["annotations"] = {keys.POD_SUSPENDING_PARENT: lws_parent}
    assert STS_WEBHOOK.default(sts, ctx()) == sts
    assert not STS.is_managed(sts, SERVING_ONLY, NS)
    pod = sts_pod(sts, 0)
    assert STS.pod_owner(pod) is None


def test_scaling_a_statefulset_to_zero_holds_its_workload_and_creates_none() -> None:
    sts = uid(queue(statefulset("web", "ns"), "lq"), "sts-uid")
    assert STS.on_hold(replicas(sts, 0)) is not None
    assert sts_workloads(replicas(sts, 0)) == []
    assert [w["metadata"]["name"] for w in STS.workloads(replicas(sts, 0))] == [
        w["metadata"]["name"] for w in sts_workloads(replicas(sts, 3))
    ]
    assert STS.on_hold(replicas(sts, 3)) is None


def test_the_group_size_follows_the_replicas_the_pods_are_adopted_with() -> None:
    sts = replicas(uid(queue(statefulset("web", "ns"), "lq"), "sts-uid"), 3)
    adopted = STS.adopt(sts, sts_pod(STS_WEBHOOK.default(sts, ctx()), 0))
    assert adopted is not None
    assert adopted["metadata"]["annotations"][keys.POD_GROUP_TOTAL_COUNT] == "3"
    assert sts_workloads(sts)[0]["spec"]["podSets"][0]["count"] == 3


def test_during_a_rolling_update_a_current_revision_pod_is_adopted_then_ungated() -> None:
    """The group name is written while the pod is still gated (the pod webhook keeps it
    immutable once the pod runs); the ungating follows in the next write, as Kueue's two
    reconcilers do it."""
    sts = replicas(uid(STS_WEBHOOK.default(queue(statefulset("web", "ns"), "lq"), ctx()), "sts-uid"), 2)
    sts["status"] = {"currentRevision": "rev-1", "updateRevision": "rev-2"}
    adopted = STS.adopt(sts, sts_pod(sts, 0, revision="rev-1"))
    assert adopted is not None and adopted["spec"]["schedulingGates"] == [{"name": keys.ADMISSION_GATE}]
    ungated = STS.adopt(sts, adopted)
    assert ungated is not None and "schedulingGates" not in ungated["spec"]
    assert STS.adopt(sts, ungated) is None
    newer = STS.adopt(sts, sts_pod(sts, 1, revision="rev-2"))
    assert newer is not None
    assert STS.adopt(sts, newer) is None, "the update revision's pods wait for admission"
