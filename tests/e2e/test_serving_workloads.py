"""Kueue's serving-workload examples (tasks/run/deployment, tasks/run/statefulset), applied
with kubectl as a user types them, run as Kueue v0.19.2 runs them.

``manifests/kueue-examples/sample-deployment.yaml`` and ``sample-statefulset.yaml`` are Kueue
v0.19.2's ``site/static/examples/serving-workloads`` files, copied as they are; only their
namespace (the test's own) and queue name (the test's LocalQueue) are adapted when applied.
kube-controller-manager's ReplicaSet and StatefulSet controllers make the pods, kwok plays
their kubelet; everything in between is pykueue's: each Deployment pod is a Workload of its
own, gated until admitted (scaled out beyond the quota, the extra pods wait gated; scaled in,
the quota is free again), the StatefulSet's pods are one group under one Workload (its
replicas may change only to and from zero; at zero the Workload is put on hold), and a
higher-priority Job preempts them: the evicted pods are deleted and made again, gated.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api import keys

from .conftest import DevCluster, wait_until
from .jobs_common import NODE_LABELS, condition, cq_cpu_usage, queues, remove_queues

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).parent / "manifests" / "kueue-examples"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"


def _example(name: str, namespace: str) -> dict[str, Any]:
    """The example's one object, in the test's namespace and LocalQueue ``lq``."""
    [doc] = [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]
    doc["metadata"]["namespace"] = namespace
    doc["metadata"]["labels"][keys.QUEUE_NAME] = "lq"
    return dict(doc)


def _gated(pod: dict[str, Any]) -> bool:
    return any(g["name"] == keys.ADMISSION_GATE for g in pod["spec"].get("schedulingGates") or ())


def _pods(dev_cluster: DevCluster, namespace: str) -> list[dict[str, Any]]:
    """The examples' pods (``app: nginx``) not being deleted."""
    items = dev_cluster.get_json("pods", "-n", namespace, "-l", "app=nginx")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not _gated(pod)


def _workloads(dev_cluster: DevCluster, namespace: str) -> list[dict[str, Any]]:
    items = dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
    return [w for w in items if not w["metadata"].get("deletionTimestamp")]


def _quota_reserved(wl: dict[str, Any]) -> dict[str, Any]:
    conditions = (wl.get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c["type"] == "QuotaReserved"), {})


def _preempted(wl: dict[str, Any]) -> bool:
    return any(c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == "Preempted"
               for c in (wl.get("status") or {}).get("conditions") or ())


@pytest.fixture
def urgent(dev_cluster: DevCluster, namespace: str) -> Iterator[str]:
    """A WorkloadPriorityClass above the examples' (none); its name."""
    name = f"high-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
                       "metadata": {"name": name}, "value": 1000})
    yield name
    dev_cluster.kubectl("delete", "workloadpriorityclasses.kueue.x-k8s.io", name, "--wait=false", check=False)


def _queues(dev_cluster: DevCluster, namespace: str, cpu: str) -> str:
    cq = queues(dev_cluster, namespace, cpu)
    dev_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", cq, "--type=merge", "-p",
                        json.dumps({"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}))
    return cq


def _urgent_job(dev_cluster: DevCluster, namespace: str, priority: str, cpu: str) -> None:
    """A Job of a higher priority that runs two seconds."""
    dev_cluster.apply({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "urgent", "namespace": namespace,
                     "labels": {keys.QUEUE_NAME: "lq", keys.PRIORITY_CLASS: priority}},
        "spec": {"template": {
            "metadata": {"annotations": {COMPLETE_AFTER: "2s"}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.9",
                 "resources": {"requests": {"cpu": cpu}}}]}}},
    })


def _job_done(dev_cluster: DevCluster, namespace: str) -> bool:
    return condition(dev_cluster.get_json("job", "urgent", "-n", namespace), "Complete")


def _scale(dev_cluster: DevCluster, namespace: str, what: str, replicas: int, check: bool = True) -> Any:
    return dev_cluster.kubectl("scale", what, f"--replicas={replicas}", "-n", namespace, check=check)


def test_each_deployment_pod_is_admitted_on_its_own_within_quota(
        dev_cluster: DevCluster, namespace: str, urgent: str) -> None:
    cq = _queues(dev_cluster, namespace, "500m")  # five of the example's 100m pods
    try:
        dev_cluster.apply(_example("sample-deployment.yaml", namespace))
        deployment = "deployment/nginx-deployment"

        # Three pods from the Deployment's ReplicaSet, each admitted as a Workload of its own.
        pods = wait_until("the example's 3 pods running", lambda: p if len(
            p := _pods(dev_cluster, namespace)) == 3 and all(map(_running, p)) else None, 90.0)
        for pod in pods:
            assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
            assert pod["metadata"]["annotations"][keys.POD_SUSPENDING_PARENT] == "deployment"
            assert pod["metadata"]["labels"][keys.MANAGED] == "true"
            assert pod["spec"]["nodeSelector"] == NODE_LABELS, "the flavor's, injected when it was admitted"
            assert not pod["metadata"].get("finalizers")
        wls = _workloads(dev_cluster, namespace)
        assert sorted(w["metadata"]["ownerReferences"][0]["name"] for w in wls) == \
            sorted(p["metadata"]["name"] for p in pods)
        assert all([(s["name"], s["count"]) for s in w["spec"]["podSets"]] == [("main", 1)] for w in wls)
        assert all(condition(w, "Admitted") for w in wls)

        # Scaled out beyond the quota: two more run, the sixth waits gated, its Workload pending.
        _scale(dev_cluster, namespace, deployment, 6)

        def five_and_one_gated() -> list[dict[str, Any]] | None:
            p = _pods(dev_cluster, namespace)
            return p if len(p) == 6 and sum(map(_running, p)) == 5 and sum(map(_gated, p)) == 1 else None

        pods = wait_until("five pods running and the sixth gated", five_and_one_gated, 90.0)
        [waiting] = [p for p in pods if _gated(p)]
        assert not waiting["spec"].get("nodeName")
        wait_until("the waiting pod's Workload pending", lambda: any(
            w["metadata"]["ownerReferences"][0]["name"] == waiting["metadata"]["name"]
            and _quota_reserved(w).get("status") == "False"
            for w in _workloads(dev_cluster, namespace)), 30.0)
        wait_until("the quota used up", lambda: cq_cpu_usage(dev_cluster, cq) == "500m", 30.0)

        # Scaled in: the ReplicaSet removes the gated pod first; the quota of the others is free.
        _scale(dev_cluster, namespace, deployment, 2)
        wait_until("two pods running, none gated", lambda: len(p := _pods(dev_cluster, namespace)) == 2
                   and all(map(_running, p)), 60.0)
        wait_until("two Workloads left", lambda: len(_workloads(dev_cluster, namespace)) == 2, 60.0)
        wait_until("two pods' quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "200m", 30.0)

        # A higher-priority Job needing 400m preempts one pod: deleted, made again, gated until
        # the Job is done.
        _urgent_job(dev_cluster, namespace, urgent, "400m")

        def replaced() -> list[dict[str, Any]] | None:
            p = _pods(dev_cluster, namespace)
            return p if len(p) == 2 and sum(map(_running, p)) == 1 and sum(map(_gated, p)) == 1 else None

        wait_until("one pod preempted and its replacement gated", replaced, 60.0)
        wait_until("the urgent Job complete", lambda: _job_done(dev_cluster, namespace), 60.0)
        wait_until("the replacement admitted and running",
                   lambda: len(p := _pods(dev_cluster, namespace)) == 2 and all(map(_running, p)), 60.0)
    finally:
        dev_cluster.kubectl("delete", "deployments", "--all", "-n", namespace, "--wait=false", check=False)
        remove_queues(dev_cluster, namespace, cq)


def test_a_statefulset_is_one_workload_held_at_zero_and_preempted_as_a_group(
        dev_cluster: DevCluster, namespace: str, urgent: str) -> None:
    cq = _queues(dev_cluster, namespace, "300m")  # the example's three 100m pods
    try:
        dev_cluster.apply(_example("sample-statefulset.yaml", namespace))
        sts = "statefulset/nginx-statefulset"

        def workload() -> dict[str, Any]:
            [wl] = [w for w in _workloads(dev_cluster, namespace)
                    if w["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"]
            return wl

        pods = wait_until("the StatefulSet's 3 pods running", lambda: p if len(
            p := _pods(dev_cluster, namespace)) == 3 and all(map(_running, p)) else None, 90.0)
        wl = workload()
        name = wl["metadata"]["name"]
        assert name.startswith("statefulset-nginx-statefulset-")
        assert [(s["name"], s["count"]) for s in wl["spec"]["podSets"]] == [("main", 3)]
        assert condition(wl, "Admitted")
        for pod in pods:
            assert pod["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
            annotations = pod["metadata"]["annotations"]
            assert annotations[keys.POD_GROUP_NAME] == annotations[keys.PREBUILT_WORKLOAD_NAME] == name
            assert annotations[keys.POD_GROUP_SERVING] == "true"
            assert pod["spec"]["nodeSelector"] == NODE_LABELS
        wait_until("the group's quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "300m", 30.0)

        # As in Kueue v0.19.2, a managed StatefulSet is resized only to or from zero (its webhook
        # sees updates of the StatefulSet, not of its scale subresource, as Kueue's).
        refused = dev_cluster.kubectl("patch", sts, "-n", namespace, "--type=merge", "-p",
                                      json.dumps({"spec": {"replicas": 5}}), check=False)
        assert refused.returncode != 0 and "spec.replicas" in refused.stderr

        # A higher-priority Job preempts the group: all its pods are deleted and made again,
        # gated, until the Job is done; then the group is admitted again.
        _urgent_job(dev_cluster, namespace, urgent, "100m")
        wait_until("the group preempted", lambda: _preempted(workload()), 60.0)
        wait_until("the group's pods made again, gated", lambda: (p := _pods(dev_cluster, namespace))
                   and all(_gated(x) for x in p), 60.0)
        wait_until("the urgent Job complete", lambda: _job_done(dev_cluster, namespace), 60.0)
        wait_until("the group running again", lambda: len(p := _pods(dev_cluster, namespace)) == 3
                   and all(map(_running, p)), 90.0)
        assert workload()["metadata"]["name"] == name

        # Scaled to zero: the Workload is kept, on hold, its quota free at once.
        _scale(dev_cluster, namespace, sts, 0)
        held = wait_until("the Workload on hold", lambda: w if (w := workload()) and
                          _quota_reserved(w).get("reason") == "OnHold" else None, 60.0)
        assert _quota_reserved(held)["status"] == "False" and not held["status"].get("admission")
        wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "0", 30.0)
        wait_until("the pods gone", lambda: not _pods(dev_cluster, namespace)
                   and not dev_cluster.get_json("statefulset", "nginx-statefulset", "-n", namespace)
                   .get("status", {}).get("replicas"), 60.0)

        # Scaled back up: the same Workload is queued and admitted again.
        _scale(dev_cluster, namespace, sts, 3)
        wait_until("the group running again", lambda: len(p := _pods(dev_cluster, namespace)) == 3
                   and all(map(_running, p)), 90.0)
        assert workload()["metadata"]["name"] == name and condition(workload(), "Admitted")
    finally:
        dev_cluster.kubectl("delete", "statefulsets", "--all", "-n", namespace, "--wait=false", check=False)
        remove_queues(dev_cluster, namespace, cq)
