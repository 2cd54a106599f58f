"""Topology-aware scheduling by the running manager, through ``kubectl apply`` only.

The test writes no Workload status, no assignment and no unhealthy node: it creates a
Topology, a TAS flavor, queues and plain Jobs whose pod template asks for one rack, and
reads back what the manager decided. The dev cluster's nodes are two blocks of two racks,
two 8-CPU nodes per rack (``devcluster.nodes``).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from api import keys
from devcluster import cluster, processes
from devcluster.nodes import NODES_PER_RACK, RACK_LABEL, node_name
from manager.core.tas.assignment import decode_v1beta2

from .conftest import DevCluster, wait_until

BLOCK = "cloud.provider.com/topology-block"
KWOK_COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"
RACK_OF = {node_name(i): f"r{i // NODES_PER_RACK}" for i in range(8)}


@dataclass(frozen=True)
class TasQueue:
    namespace: str
    flavor: str
    topology: str


@pytest.fixture
def tas_queue(dev_cluster: DevCluster, namespace: str) -> Iterator[TasQueue]:
    suffix = uuid.uuid4().hex[:6]
    topo, flavor, cq = f"e2e-topo-{suffix}", f"e2e-tas-{suffix}", f"e2e-tas-cq-{suffix}"
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "Topology", "metadata": {"name": topo},
                       "spec": {"levels": [{"nodeLabel": level}
                                           for level in (BLOCK, RACK_LABEL, keys.HOSTNAME_LABEL)]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor},
                       "spec": {"nodeLabels": {"instance-type": "on-demand"}, "topologyName": topo}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq},
                       "spec": {"namespaceSelector": {
                                    "matchLabels": {"kubernetes.io/metadata.name": namespace}},
                                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                    {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 64}]}]}]}})
    dev_cluster.apply({"apiVersion": keys.API_VERSION, "kind": "LocalQueue",
                       "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cq}})
    try:
        yield TasQueue(namespace, flavor, topo)
    finally:
        dev_cluster.kubectl("delete", "jobs,pods", "--all", "-n", namespace, "--wait=false", check=False)
        for kind, name, where in (("localqueues.kueue.x-k8s.io", "lq", ("-n", namespace)),
                                  ("clusterqueues.kueue.x-k8s.io", cq, ()),
                                  ("resourceflavors.kueue.x-k8s.io", flavor, ()),
                                  ("topologies.kueue.x-k8s.io", topo, ())):
            dev_cluster.kubectl("delete", kind, name, *where, "--wait=false", check=False)


def rack_job(name: str, pods: int, cpu: str = "2") -> dict[str, Any]:
    """A plain Job as a user writes it: the queue label and a rack annotation on the template."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {keys.QUEUE_NAME: "lq"}},
        "spec": {"parallelism": pods, "completions": pods, "template": {
            "metadata": {"annotations": {keys.PODSET_REQUIRED_TOPOLOGY: RACK_LABEL,
                                         KWOK_COMPLETE_DELAY: "1h"}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": cpu}}}]}}},
    }


def busy_pod(name: str, node: str, cpu: str) -> dict[str, Any]:
    """A pod of no queued workload, bound to a node: its requests come off that node."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def workload_of(dev_cluster: DevCluster, namespace: str, job: str) -> dict[str, Any] | None:
    items = dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
    owned = (w for w in items if any(o.get("name") == job for o in w["metadata"].get("ownerReferences", [])))
    return next(owned, None)


def assigned(wl: dict[str, Any]) -> dict[str, int] | None:
    """Node -> pod count of the Workload's topology assignment, read as Kueue writes it."""
    psas = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    if not psas or not psas[0].get("topologyAssignment"):
        return None
    ta = decode_v1beta2(psas[0]["topologyAssignment"])
    assert ta.levels == (keys.HOSTNAME_LABEL,), "Kueue's encoding: hostname-only levels"
    return dict(ta.leaf_values())


def condition(wl: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (wl.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def admitted_assignment(dev_cluster: DevCluster, namespace: str, job: str) -> dict[str, int]:
    def check() -> dict[str, int] | None:
        wl = workload_of(dev_cluster, namespace, job)
        return assigned(wl) if wl and condition(wl, keys.WorkloadCondition.ADMITTED).get("status") == "True" \
            else None
    result: dict[str, int] = wait_until(f"Job {job} admitted with a topology assignment", check, 90.0)
    return result


TAS_SCHEDULER = "pykueue-tas-scheduler"


def bound_pods(dev_cluster: DevCluster, namespace: str, job: str, count: int) -> list[dict[str, Any]] | None:
    pods = [p for p in dev_cluster.get_json("pods", "-n", namespace, "-l", f"job-name={job}")["items"]
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]
    return pods if len(pods) == count else None


def test_a_rack_job_gets_one_rack_busy_racks_are_avoided_and_too_big_waits(
        dev_cluster: DevCluster, tas_queue: TasQueue) -> None:
    ns = tas_queue.namespace
    # Rack r0 keeps 2 of its 16 CPUs free: pods of no workload use the rest.
    for i, node in enumerate((node_name(0), node_name(1))):
        pod = busy_pod(f"busy-{i}", node, "7")
        dev_cluster.apply({**pod, "metadata": {"name": f"busy-{i}", "namespace": ns}})
    wait_until("the busy pods to be seen running",
               lambda: all(p["status"].get("phase") == "Running" for p in dev_cluster.get_json(
                   "pods", "-n", ns)["items"]) or None, 60.0)

    dev_cluster.kubectl("apply", "-n", ns, "-f", "-", stdin=json.dumps(rack_job("fits", pods=4)))
    nodes = admitted_assignment(dev_cluster, ns, "fits")
    assert sum(nodes.values()) == 4
    racks = {RACK_OF[n] for n in nodes}
    assert len(racks) == 1, f"one rack, got {nodes}"
    assert racks != {"r0"}, "rack r0 has only 2 CPUs free"
    # The pods, created by the Job controller from the user's template, went to the TAS
    # scheduler and landed exactly where the manager placed them.
    placed = wait_until("the Job's 4 pods bound", lambda: bound_pods(dev_cluster, ns, "fits", 4), 60.0)
    assert Counter(p["spec"]["nodeName"] for p in placed) == Counter(nodes)
    assert {p["spec"]["schedulerName"] for p in placed} == {TAS_SCHEDULER}

    dev_cluster.kubectl("apply", "-n", ns, "-f", "-", stdin=json.dumps(rack_job("too-big", pods=10)))

    def pending_for_topology() -> dict[str, Any] | None:
        wl = workload_of(dev_cluster, ns, "too-big")
        cond = condition(wl or {}, keys.WorkloadCondition.QUOTA_RESERVED)
        return cond if cond.get("status") == "False" and "topology" in cond.get("message", "") else None

    cond = wait_until("the 20-CPU rack job to wait with a topology reason", pending_for_topology, 60.0)
    assert "allows to fit only" in cond["message"] or "topology" in cond["message"]
    wl = workload_of(dev_cluster, ns, "too-big")
    assert wl is not None and not (wl.get("status") or {}).get("admission")


def test_a_restarted_manager_keeps_what_it_placed_and_places_nothing_twice(
        dev_cluster: DevCluster, tas_queue: TasQueue) -> None:
    ns = tas_queue.namespace
    dev_cluster.kubectl("apply", "-n", ns, "-f", "-", stdin=json.dumps(rack_job("first", pods=5)))
    first = admitted_assignment(dev_cluster, ns, "first")
    before = workload_of(dev_cluster, ns, "first")
    assert before is not None
    (rack,) = {RACK_OF[n] for n in first}

    state = cluster.current_state()
    record = state.record("pykueue") if state is not None else None
    assert record is not None and processes.stop(record)
    restarted = dev_cluster.dev("up")  # starts pykueue again, which reads everything back
    assert restarted.returncode == 0, restarted.stderr[-2000:]

    # 10 of the rack's 16 CPUs are taken by the first job: a second 10-CPU job must go elsewhere.
    dev_cluster.kubectl("apply", "-n", ns, "-f", "-", stdin=json.dumps(rack_job("second", pods=5)))
    second = admitted_assignment(dev_cluster, ns, "second")
    assert {RACK_OF[n] for n in second} != {rack}, f"the first job's rack {rack} was counted once: {second}"
    after = workload_of(dev_cluster, ns, "first")
    assert after is not None
    assert after["status"]["admission"] == before["status"]["admission"], "the first placement is kept as is"
    assert condition(after, keys.WorkloadCondition.EVICTED).get("status") != "True"


def test_a_lost_node_is_replaced_inside_the_rack_and_the_workload_keeps_running(
        dev_cluster: DevCluster, tas_queue: TasQueue) -> None:
    """Nothing but the node deletion is done by hand: the manager marks and replaces the node
    (or the extender swaps it at bind time), the Job recreates the lost pods and the TAS
    scheduler places them inside the same rack."""
    ns = tas_queue.namespace
    job = rack_job("survives", pods=4)
    # A pod lost with its node is replaced without counting as a failure.
    job["spec"]["podFailurePolicy"] = {"rules": [{"action": "Ignore",
                                                  "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    dev_cluster.kubectl("apply", "-n", ns, "-f", "-", stdin=json.dumps(job))
    first = admitted_assignment(dev_cluster, ns, "survives")
    (rack,) = {RACK_OF[n] for n in first}
    placed = wait_until("the Job's 4 pods bound", lambda: bound_pods(dev_cluster, ns, "survives", 4), 60.0)
    failed = max(first, key=lambda n: first[n])  # a node holding pods of the Job
    lost = {p["metadata"]["uid"] for p in placed if p["spec"]["nodeName"] == failed}
    try:
        dev_cluster.kubectl("delete", "node", failed)

        def replaced() -> list[dict[str, Any]] | None:
            # Pod GC removes the pods of the deleted node; the Job recreates them.
            pods = bound_pods(dev_cluster, ns, "survives", 4)
            fresh = [p for p in pods or () if p["metadata"]["uid"] not in lost]
            return pods if pods and len(fresh) >= len(lost) else None

        after = wait_until("the lost pods recreated and bound", replaced, 180.0)
        nodes = {p["spec"]["nodeName"] for p in after}
        assert failed not in nodes and {RACK_OF[n] for n in nodes} == {rack}, f"inside rack {rack}: {nodes}"
        wl = workload_of(dev_cluster, ns, "survives")
        assert wl is not None
        now_assigned = assigned(wl)
        assert now_assigned is not None and failed not in now_assigned
        assert Counter(p["spec"]["nodeName"] for p in after) == Counter(now_assigned)
        assert not wl["status"].get("unhealthyNodes")
        assert condition(wl, keys.WorkloadCondition.EVICTED).get("status") != "True"
        assert condition(wl, keys.WorkloadCondition.ADMITTED).get("status") == "True"
    finally:
        restored = dev_cluster.dev("up")  # recreates the deleted node
        assert restored.returncode == 0, restored.stderr[-2000:]
