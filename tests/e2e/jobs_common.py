"""Queues, lookups and checks shared by the job-integration e2e tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pykueue.api import keys

from .conftest import DevCluster, wait_until

FLAVOR = "on-demand"
NODE_LABELS = {"instance-type": "on-demand"}
NAMESPACE_LABEL = "kubernetes.io/metadata.name"


def condition(obj: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or ()
    )


def queues(dev_cluster: DevCluster, namespace: str, cpu: str, memory: str | None = None) -> str:
    """A flavor with node labels, a ClusterQueue of ``cpu`` CPUs (and ``memory``, when the jobs
    ask for it: a resource no quota covers is never admitted) for this namespace, LocalQueue ``lq``."""
    quotas = [{"name": "cpu", "nominalQuota": cpu}]
    if memory is not None:
        quotas.append({"name": "memory", "nominalQuota": memory})
    cq = f"cq-{namespace}"
    dev_cluster.apply(
        {
            "apiVersion": keys.API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": {"name": FLAVOR},
            "spec": {"nodeLabels": NODE_LABELS},
        }
    )
    dev_cluster.apply(
        {
            "apiVersion": keys.API_VERSION,
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": [q["name"] for q in quotas],
                        "flavors": [{"name": FLAVOR, "resources": quotas}],
                    }
                ],
            },
        }
    )
    dev_cluster.apply(
        {
            "apiVersion": keys.API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace},
            "spec": {"clusterQueue": cq},
        }
    )
    return cq


def remove_queues(dev_cluster: DevCluster, namespace: str, cq: str, *others: tuple[str, str]) -> None:
    """Delete, without waiting, the namespace's Jobs, its LocalQueue ``lq``, the ClusterQueue
    ``cq`` and the (kind, name) ``others``."""
    dev_cluster.kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=false", check=False)
    dev_cluster.kubectl("delete", "localqueue.kueue.x-k8s.io", "lq", "-n", namespace, "--wait=false",
                        check=False)
    for kind, name in (("clusterqueues.kueue.x-k8s.io", cq), *others):
        dev_cluster.kubectl("delete", kind, name, "--wait=false", check=False)


def workloads_owned_by(dev_cluster: DevCluster, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
    return [
        wl
        for wl in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
        if any(r["kind"] == kind and r["name"] == name for r in wl["metadata"].get("ownerReferences") or ())
    ]


def cq_cpu_usage(dev_cluster: DevCluster, cq: str) -> str | None:
    return cpu_usage(dev_cluster.get_json("clusterqueues.kueue.x-k8s.io", cq).get("status") or {})


def cpu_usage(status: dict[str, Any]) -> str | None:
    """The CPU usage of the flavor in a ClusterQueue status; None before it shows any."""
    for flavor in status.get("flavorsUsage") or ():
        for res in flavor.get("resources") or ():
            if flavor["name"] == FLAVOR and res["name"] == "cpu":
                return str(res["total"])
    return None


@dataclass(frozen=True)
class OperatorKind:
    """How the e2e tests of a job kind its operator runs read it: the kubectl resource, the
    owner kind of its Workload, the condition of success, where it is suspended, and the
    label its operator puts on its pods (valued with its name) with how many it runs. A kind
    that never ends on kwok (``done`` None: a Ray cluster or service, a RayJob whose job needs
    a live Ray head) is ended by deleting it instead."""

    resource: str
    kind: str
    done: str | None
    suspended: Callable[[dict[str, Any]], bool]
    pod_label: str = ""
    pod_count: int = 0

    def pods(self, dev_cluster: DevCluster, namespace: str, name: str) -> list[dict[str, Any]]:
        """Its pods that are not being deleted."""
        pods = dev_cluster.get_json("pods", "-n", namespace, "-l", f"{self.pod_label}={name}")["items"]
        return [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    def running(self, dev_cluster: DevCluster, namespace: str, name: str) -> bool:
        pods = self.pods(dev_cluster, namespace, name)
        return len(pods) == self.pod_count and all(p["status"].get("phase") == "Running" for p in pods)

    def get(self, dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = dev_cluster.get_json(self.resource, name, "-n", namespace)
        return obj

    def workload(self, dev_cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
        wls = workloads_owned_by(dev_cluster, namespace, self.kind, name)
        return wls[0] if wls else {}

    def create(self, dev_cluster: DevCluster, namespace: str, obj: dict[str, Any]) -> None:
        dev_cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(obj))

    def is_done(self, obj: dict[str, Any]) -> bool:
        """Has it ended as ``done`` says (a condition; a kind that reports a phase overrides this)?"""
        return self.done is not None and condition(obj, self.done)

    def end(self, dev_cluster: DevCluster, namespace: str, name: str) -> None:
        """Wait until it is done and its Workload Finished; for a kind that never ends, delete
        it and wait until its Workload and its pods are gone."""
        if self.done is not None:
            wait_until(f"{name} to be {self.done}",
                       lambda: self.is_done(self.get(dev_cluster, namespace, name)), 150.0)
            wait_until(f"{name}'s Workload Finished",
                       lambda: condition(self.workload(dev_cluster, namespace, name), "Finished"), 60.0)
            return
        dev_cluster.kubectl("delete", self.resource, name, "-n", namespace, "--wait=false")
        wait_until(f"{name}'s Workload deleted with it",
                   lambda: not workloads_owned_by(dev_cluster, namespace, self.kind, name), 60.0)
        wait_until(f"{name}'s pods gone", lambda: not self.pods(dev_cluster, namespace, name), 60.0)


@contextmanager
def kind_queues(dev_cluster: DevCluster, namespace: str, kind: OperatorKind, cpu: str,
                memory: str | None = None) -> Iterator[str]:
    """``queues`` for a test of ``kind``; its objects and the queues are deleted after the test."""
    cq = queues(dev_cluster, namespace, cpu, memory=memory)
    try:
        yield cq
    finally:
        dev_cluster.kubectl("delete", kind.resource, "--all", "-n", namespace, "--wait=false", check=False)
        remove_queues(dev_cluster, namespace, cq)


def waits_for_quota(workload: dict[str, Any]) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "QuotaReserved" and c["status"] == "False" for c in conditions)


def check_the_second_waits_until_the_first_is_done(
        dev_cluster: DevCluster, namespace: str, cq: str, kind: OperatorKind,
        make: Callable[[str, str], dict[str, Any]], podsets: list[tuple[str, int]]) -> None:
    """``make(name, run time)``: the first runs on the flavor's nodes with ``podsets``; the
    second waits suspended, without pods, for quota; both end (a kind that never ends is
    deleted, and the second runs once the first is gone), their Workloads finish or go and the
    quota is free again."""
    def pods(name: str) -> list[dict[str, Any]]:
        return kind.pods(dev_cluster, namespace, name)

    def running(name: str) -> bool:
        return kind.running(dev_cluster, namespace, name)

    kind.create(dev_cluster, namespace, make("first", "6s"))
    wait_until(f"the first {kind.kind}'s pods running", lambda: running("first"), 90.0)
    wl = kind.workload(dev_cluster, namespace, "first")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == podsets
    for pod in pods("first"):
        assert NODE_LABELS.items() <= (pod["spec"].get("nodeSelector") or {}).items()  # injected at start
    kind.create(dev_cluster, namespace, make("second", "2s"))
    wait_until("the second's Workload to wait for quota",
               lambda: waits_for_quota(kind.workload(dev_cluster, namespace, "second")), 60.0)
    assert kind.suspended(kind.get(dev_cluster, namespace, "second"))
    assert pods("second") == []
    kind.end(dev_cluster, namespace, "first")
    if kind.done is None:  # the second runs once the first is gone
        wait_until(f"the second {kind.kind}'s pods running", lambda: running("second"), 90.0)
    kind.end(dev_cluster, namespace, "second")
    wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "0", 30.0)


def check_a_higher_priority_one_preempts(
        dev_cluster: DevCluster, namespace: str, cq: str, kind: OperatorKind,
        make: Callable[[str, str, str | None], dict[str, Any]]) -> None:
    """``make(name, run time, priority class)``: a running low-priority object is preempted
    (Evicted, suspended again) by an urgent one of the same kind, then both end (a kind that
    never ends runs again once the urgent one is deleted, and is deleted in turn)."""
    def running(name: str) -> bool:
        return kind.running(dev_cluster, namespace, name)

    high = f"high-{namespace}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "WorkloadPriorityClass",
                       "metadata": {"name": high}, "value": 1000})
    try:
        dev_cluster.kubectl("patch", "clusterqueues.kueue.x-k8s.io", cq, "--type=merge", "-p",
                            '{"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}')
        kind.create(dev_cluster, namespace, make("low", "8s", None))
        wait_until(f"the low-priority {kind.kind} running", lambda: running("low"), 90.0)
        kind.create(dev_cluster, namespace, make("urgent", "2s", high))

        def preempted() -> bool:
            wl = kind.workload(dev_cluster, namespace, "low")
            evicted = any(c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == "Preempted"
                          for c in (wl.get("status") or {}).get("conditions") or ())
            return evicted and kind.suspended(kind.get(dev_cluster, namespace, "low"))

        wait_until(f"the low-priority {kind.kind} preempted and suspended again", preempted, 60.0)
        if kind.done is None:
            wait_until(f"the urgent {kind.kind} running", lambda: running("urgent"), 90.0)
            kind.end(dev_cluster, namespace, "urgent")
            wait_until(f"the preempted {kind.kind} running again", lambda: running("low"), 90.0)
            kind.end(dev_cluster, namespace, "low")
        else:
            kind.end(dev_cluster, namespace, "urgent")
            wait_until(f"the preempted {kind.kind} to run again and be {kind.done}",
                       lambda: kind.is_done(kind.get(dev_cluster, namespace, "low")), 180.0)
        wait_until("no quota used", lambda: cq_cpu_usage(dev_cluster, cq) == "0", 30.0)
    finally:
        dev_cluster.kubectl("delete", "workloadpriorityclasses.kueue.x-k8s.io", high, "--wait=false",
                            check=False)
