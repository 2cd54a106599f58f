"""A LeaderWorkerSet gets one Workload per group; its group pods run only once admitted.

The dev cluster runs the real LWS controller (sigs.k8s.io/lws v0.7.0): it creates each
group's leader StatefulSet and pods from the templates pykueue's webhook stamped (labels
``leaderworkerset.sigs.k8s.io/{name,group-index,worker-index}``, the leader-name annotation
on workers, the ``pod-suspending-parent``/``pod-group-serving`` annotations), and pykueue's
pod webhook holds them with the ``kueue.x-k8s.io/admission`` scheduling gate. pykueue adopts
the pods into their groups, ungates the pods of the admitted group with the flavor's node
selector, and keeps the over-quota group gated. The test creates no pods.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import NODE_LABELS, condition, cpu_usage, cq_cpu_usage, queues, workloads_owned_by

pytestmark = pytest.mark.e2e

LWS_PARENT = "leaderworkerset.x-k8s.io/leaderworkerset"


def _template() -> dict[str, Any]:
    return {
        "metadata": {"annotations": {keys.POD_SUSPENDING_PARENT: LWS_PARENT, keys.POD_GROUP_SERVING: "true"}},
        "spec": {"containers": [{"name": "c", "image": "server", "resources": {"requests": {"cpu": "1"}}}]},
    }


def _lws(namespace: str, name: str, queue: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {keys.QUEUE_NAME: queue} if queue else {},
        },
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {"size": 2, "leaderTemplate": _template(), "workerTemplate": _template()},
        },
    }


def gated(pod: dict[str, Any]) -> bool:
    return any(g["name"] == keys.ADMISSION_GATE for g in pod["spec"].get("schedulingGates") or ())


def pods_of(dev_cluster: DevCluster, namespace: str, name: str, group: int) -> list[dict[str, Any]]:
    return list(
        dev_cluster.get_json(
            "pods", "-n", namespace, "-l", f"{keys.LWS_NAME}={name},{keys.LWS_GROUP_INDEX}={group}"
        )["items"]
    )


def adopted(pods: list[dict[str, Any]]) -> bool:
    return len(pods) == 2 and all(
        keys.POD_GROUP_NAME in (p["metadata"].get("annotations") or {}) for p in pods
    )


def test_lws_groups_are_admitted_one_workload_each_and_pods_ungated_only_when_admitted(
    dev_cluster: DevCluster, namespace: str
) -> None:
    cq = queues(dev_cluster, namespace, "2")  # room for one group of two 1-CPU pods
    dev_cluster.apply(_lws(namespace, "srv", "lq"))
    lws = dev_cluster.get_json("leaderworkersets.leaderworkerset.x-k8s.io", "srv", "-n", namespace)

    wls = wait_until(
        "one Workload per group",
        lambda: (
            w if len(w := workloads_owned_by(dev_cluster, namespace, "LeaderWorkerSet", "srv")) == 2 else None
        ),
        60.0,
    )
    by_index = {w["metadata"]["annotations"][keys.COMPONENT_WORKLOAD_INDEX]: w for w in wls}
    assert sorted(by_index) == ["0", "1"]
    for index, wl in by_index.items():
        assert wl["metadata"]["name"].startswith(f"leaderworkerset-srv-{index}-")
        assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("leader", 1), ("worker", 1)]
        assert wl["metadata"]["labels"][keys.JOB_UID] == lws["metadata"]["uid"]

    def one_admitted() -> str | None:
        admitted = [
            i
            for i, w in by_index.items()
            if condition(
                dev_cluster.get_json("workloads.kueue.x-k8s.io", w["metadata"]["name"], "-n", namespace),
                "Admitted",
            )
        ]
        return admitted[0] if len(admitted) == 1 else None

    winner = int(wait_until("exactly one group to be admitted", one_admitted, 60.0))
    loser = 1 - winner

    started = wait_until(
        "the admitted group's pods to be ungated",
        lambda: (
            p
            if len(p := pods_of(dev_cluster, namespace, "srv", winner)) == 2 and not any(gated(x) for x in p)
            else None
        ),
        60.0,
    )
    group_name = by_index[str(winner)]["metadata"]["name"]
    for pod in started:
        assert pod["spec"]["nodeSelector"] == NODE_LABELS
        assert pod["metadata"]["annotations"][keys.POD_GROUP_NAME] == group_name
        assert pod["metadata"]["labels"][keys.MANAGED] == "true"
        role = "worker" if keys.LWS_LEADER_NAME in pod["metadata"]["annotations"] else "leader"
        assert pod["metadata"]["annotations"][keys.ROLE_HASH] == role
        assert pod["metadata"]["labels"][keys.PODSET] == role
    wait_until(
        "the admitted group's pods to be bound",
        lambda: all(p["spec"].get("nodeName") for p in pods_of(dev_cluster, namespace, "srv", winner)),
        60.0,
    )

    # The over-quota group: adopted (so pykueue has seen it) yet still gated.
    waiting = wait_until(
        "the waiting group's pods to be adopted",
        lambda: p if adopted(p := pods_of(dev_cluster, namespace, "srv", loser)) else None,
        60.0,
    )
    assert all(gated(p) and not p["spec"].get("nodeName") for p in waiting)
    # The ClusterQueue's status is written after the Workloads' (and waits while the
    # manager's request budget is low), so its usage shows up a little later.
    wait_until("usage to be one group's 2 CPUs", lambda: cq_cpu_usage(dev_cluster, cq) == "2", 30.0)

    # Scale down to one group: the Workload of group 1 goes; if it held the quota, group 0 gets it.
    dev_cluster.kubectl(
        "patch",
        "leaderworkersets.leaderworkerset.x-k8s.io",
        "srv",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"replicas": 1}}),
    )
    wait_until(
        "the surplus group's Workload to be deleted",
        lambda: (
            [
                w["metadata"]["annotations"][keys.COMPONENT_WORKLOAD_INDEX]
                for w in workloads_owned_by(dev_cluster, namespace, "LeaderWorkerSet", "srv")
            ]
            == ["0"]
        ),
        60.0,
    )
    if winner == 1:
        for pod in pods_of(dev_cluster, namespace, "srv", 1):
            # The LWS controller deletes them too; whichever comes first.
            dev_cluster.kubectl("delete", "pod", pod["metadata"]["name"], "-n", namespace, "--wait=false",
                                "--ignore-not-found", check=False)
        wait_until(
            "group 0 to be ungated once the quota is free",
            lambda: not any(gated(p) for p in pods_of(dev_cluster, namespace, "srv", 0)),
            60.0,
        )


SLOW_EXIT = "e2e.pykueue.dev/slow-exit"  # a pod that takes its time to terminate, as a real one may


def _workload_of_group(dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    [wl] = workloads_owned_by(dev_cluster, namespace, "LeaderWorkerSet", name)
    return wl


def _urgent_job(namespace: str, priority_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "urgent", "namespace": namespace,
                     "labels": {keys.QUEUE_NAME: "lq", keys.PRIORITY_CLASS: priority_class}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "batch", "resources": {"requests": {"cpu": "2"}}}]}}},
    }


def test_a_preempted_group_keeps_its_quota_until_its_pods_have_stopped(
    dev_cluster: DevCluster, namespace: str
) -> None:
    """Kueue frees a preempted workload's quota once its job reports no running pods, not at
    eviction: until the group's last pod is gone, the preemptor waits and nothing runs over quota."""
    high = f"high-{namespace}"
    slow: str | None = None
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
                       "metadata": {"name": high}, "value": 1000})
    try:
        cq = queues(dev_cluster, namespace, "2")
        dev_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", cq, "--type=merge", "-p",
                            '{"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}')
        lws = _lws(namespace, "srv", "lq")
        lws["spec"]["replicas"] = 1
        dev_cluster.apply(lws)
        running = wait_until(
            "the group's two pods running",
            lambda: p if len(p := pods_of(dev_cluster, namespace, "srv", 0)) == 2 and all(
                (x.get("status") or {}).get("phase") == "Running" for x in p) else None,
            90.0,
        )
        slow = running[0]["metadata"]["name"]
        dev_cluster.kubectl("patch", "pod", slow, "-n", namespace, "--type=merge", "-p",
                            json.dumps({"metadata": {"finalizers": [SLOW_EXIT]}}))
        dev_cluster.apply(_urgent_job(namespace, high))

        def evicted_holding() -> dict[str, Any] | None:
            wl = _workload_of_group(dev_cluster, namespace, "srv")
            return wl if condition(wl, "Evicted") and condition(wl, "QuotaReserved") else None

        wl = wait_until("the group evicted, its quota still reserved", evicted_holding, 60.0)
        assert wl["status"]["admission"]["clusterQueue"] == cq
        wait_until("the slow pod asked to stop and still running", lambda: (
            (p := dev_cluster.get_json("pod", slow, "-n", namespace))["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") == "Running"), 60.0)
        # Every other pod of the group is gone; the slow one still runs, so the quota stays taken.
        wait_until("the group's other pod gone", lambda: not any(
            p["metadata"]["name"] != slow and (p.get("status") or {}).get("phase") == "Running"
            for p in pods_of(dev_cluster, namespace, "srv", 0)), 60.0)
        job_wl = wait_until("the urgent job's Workload", lambda: next(iter(
            workloads_owned_by(dev_cluster, namespace, "Job", "urgent")), None), 30.0)
        assert not condition(job_wl, "QuotaReserved"), job_wl.get("status")
        assert condition(_workload_of_group(dev_cluster, namespace, "srv"), "QuotaReserved")
        job = dev_cluster.get_json("job", "urgent", "-n", namespace)
        assert job["spec"]["suspend"] is True
        # The ClusterQueue's status is written after the Workloads', and waits while the
        # manager's request budget is low (up to 10 s, longer after failed writes): one
        # written before the group was admitted (usage 0) may still be there. Once it counts
        # one workload holding quota and one waiting, it was computed after the urgent
        # Workload came, and it must show the group's 2 CPUs still in use.
        def counts_one_holding_one_waiting() -> dict[str, Any] | None:
            status = dev_cluster.get_json("clusterqueues.kueue.x-k8s.io", cq).get("status") or {}
            waiting = (status.get("reservingWorkloads"), status.get("pendingWorkloads")) == (1, 1)
            return status if waiting else None

        cq_status = wait_until("the ClusterQueue's status to count the waiting urgent Workload",
                               counts_one_holding_one_waiting, 120.0)
        assert cpu_usage(cq_status) == "2", cq_status
        # ... and it is the group that holds them: nothing was admitted meanwhile.
        assert condition(_workload_of_group(dev_cluster, namespace, "srv"), "QuotaReserved")
        assert not condition(workloads_owned_by(dev_cluster, namespace, "Job", "urgent")[0], "QuotaReserved")
        assert dev_cluster.get_json("job", "urgent", "-n", namespace)["spec"]["suspend"] is True

        # The slow pod finally exits: the group gives its quota back and the job runs.
        dev_cluster.kubectl("patch", "pod", slow, "-n", namespace, "--type=merge", "-p",
                            json.dumps({"metadata": {"finalizers": None}}))
        wait_until("the urgent job to run", lambda: dev_cluster.get_json(
            "job", "urgent", "-n", namespace)["spec"].get("suspend") is False, 60.0)
        wl = _workload_of_group(dev_cluster, namespace, "srv")
        assert not condition(wl, "QuotaReserved")
        assert condition(wl, "Requeued")
    finally:
        if slow is not None:
            # A failure above must not leave the pod behind: it would keep its node's room
            # taken for every later test of the session.
            dev_cluster.kubectl("patch", "pod", slow, "-n", namespace, "--type=merge", "-p",
                                json.dumps({"metadata": {"finalizers": None}}), check=False)
        dev_cluster.kubectl("delete", "workloadpriorityclasses.kueue.x-k8s.io", high, "--wait=false",
                            check=False)
