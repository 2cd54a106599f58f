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

from pykueue.api import keys
from pykueue.devcluster import cluster, processes
from pykueue.devcluster.nodes import NODES_PER_RACK, RACK_LABEL, node_name
from pykueue.manager.core.tas.assignment import decode_v1beta2

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


BOUND_UNFINISHED = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


def room_taken_elsewhere(dev_cluster: DevCluster, namespace: str) -> list[str]:
    """What else takes room on the nodes, as the manager counts it: bound, unfinished pods
    of other namespaces (terminating ones too) and the topology assignments of Workloads of
    other namespaces that hold quota. Earlier tests share the dev cluster, and their
    teardown deletes without waiting."""
    taken = [f"pod {p['metadata']['namespace']}/{p['metadata']['name']} on {p['spec']['nodeName']}"
             for p in dev_cluster.get_json("pods", "-A", "--field-selector", BOUND_UNFINISHED)["items"]
             if p["metadata"]["namespace"] != namespace]
    for wl in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-A")["items"]:
        psas = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ()
        if wl["metadata"]["namespace"] != namespace \
                and condition(wl, keys.WorkloadCondition.QUOTA_RESERVED).get("status") == "True" \
                and condition(wl, keys.WorkloadCondition.FINISHED).get("status") != "True" \
                and any(psa.get("topologyAssignment") for psa in psas):
            taken.append(f"Workload {wl['metadata']['namespace']}/{wl['metadata']['name']}")
    return taken


def wait_for_empty_nodes(dev_cluster: DevCluster, namespace: str, deadline_s: float = 180.0) -> None:
    left: list[str] = []

    def empty() -> bool:
        left[:] = room_taken_elsewhere(dev_cluster, namespace)
        return not left

    try:
        wait_until("the nodes to be free of what earlier tests left", empty, deadline_s, poll_s=1.0)
    except pytest.fail.Exception:
        pytest.fail(f"the nodes are still in use after {deadline_s:.0f}s: {', '.join(left)}")


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


# Waiting for free nodes, Pod GC and the Job's backoff take several minutes under load.
@pytest.mark.timeout(900)
def test_a_lost_node_is_replaced_inside_the_rack_and_the_workload_keeps_running(
        dev_cluster: DevCluster, tas_queue: TasQueue) -> None:
    """Nothing but the node deletion is done by hand: the manager marks and replaces the node
    (or the extender swaps it at bind time), the Job recreates the lost pods and the TAS
    scheduler places them inside the same rack."""
    ns = tas_queue.namespace
    # Which rack the pods end up in depends on what else uses the nodes: placement takes
    # the tightest rack that fits, and a lost node is replaced only where the rest of its
    # rack has room (or, when all the Job's pods were on it, again in the tightest rack).
    # Pods or placements that earlier tests leave behind while they are deleted could move
    # the Job to another rack, so it starts on nodes that nothing else uses.
    wait_for_empty_nodes(dev_cluster, ns)
    job = rack_job("survives", pods=4)
    # A pod lost with its node is replaced without counting as a failure. Each index keeps its
    # own failure backoff (10 s for a first failure), where a non-indexed Job's is shared and
    # doubles per failed pod: 80 s when all four pods were on the lost node.
    job["spec"].update(completionMode="Indexed", backoffLimitPerIndex=1, podFailurePolicy={
        "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]})
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

        # Pod GC removes a deleted node's pods 40-60 s later; the Job then waits out each
        # index's failure backoff (10 s) before it recreates them.
        after = wait_until("the lost pods recreated and bound", replaced, 300.0)
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


def _placed_pods(dev_cluster: DevCluster, namespace: str, kind: str, name: str, count: int
                 ) -> list[dict[str, Any]] | None:
    def ours(pod: dict[str, Any]) -> bool:
        refs = pod["metadata"].get("ownerReferences") or ()
        pod_labels = pod["metadata"].get("labels") or {}
        return any(r["kind"] == kind and r["name"] == name for r in refs) or \
            pod_labels.get(keys.LWS_NAME) == name or pod_labels.get(JOBSET_NAME) == name

    pods = [p for p in dev_cluster.get_json("pods", "-n", namespace)["items"]
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp") and ours(p)]
    return pods if len(pods) == count else None


JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
TOPOLOGY_AND_LONG_RUN = {keys.PODSET_REQUIRED_TOPOLOGY: RACK_LABEL, KWOK_COMPLETE_DELAY: "1h"}


def _podset_assignments(wl: dict[str, Any]) -> dict[str, dict[str, int]]:
    out = {}
    for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
        if psa.get("topologyAssignment"):
            out[psa["name"]] = dict(decode_v1beta2(psa["topologyAssignment"]).leaf_values())
    return out


def _check_operator_job_placed(dev_cluster: DevCluster, ns: str, kind: str, name: str, pods: int) -> None:
    def admitted() -> dict[str, Any] | None:
        wls = [w for w in dev_cluster.get_json("workloads.kueue.x-k8s.io", "-n", ns)["items"]
               if condition(w, keys.WorkloadCondition.ADMITTED).get("status") == "True"]
        return wls[0] if len(wls) == 1 else None

    wl = wait_until(f"the {kind}'s Workload admitted", admitted, 90.0)
    by_podset = _podset_assignments(wl)
    assert len(by_podset) == 2, f"every PodSet has a topology assignment: {by_podset}"
    for podset, nodes in by_podset.items():
        assert len({RACK_OF[n] for n in nodes}) == 1, f"{podset} in one rack: {nodes}"
    placed = wait_until(f"the operator's {pods} pods bound", lambda: _placed_pods(
        dev_cluster, ns, kind, name, pods), 90.0)
    assert {p["spec"]["schedulerName"] for p in placed} == {TAS_SCHEDULER}
    assigned_total: Counter[str] = Counter()
    for nodes in by_podset.values():
        assigned_total.update(nodes)
    assert Counter(p["spec"]["nodeName"] for p in placed) == assigned_total


def test_a_pytorchjob_with_a_required_rack_runs_where_the_manager_placed_it(
        dev_cluster: DevCluster, tas_queue: TasQueue) -> None:
    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {
            "metadata": {"annotations": TOPOLOGY_AND_LONG_RUN},
            "spec": {"containers": [{"name": "pytorch", "image": "pytorch",
                                     "resources": {"requests": {"cpu": "2"}}}]}}}

    ptj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": "ranked", "labels": {keys.QUEUE_NAME: "lq"}},
           "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(3)}}}
    try:
        dev_cluster.kubectl("apply", "-n", tas_queue.namespace, "-f", "-", stdin=json.dumps(ptj))
        _check_operator_job_placed(dev_cluster, tas_queue.namespace, "PyTorchJob", "ranked", 4)
    finally:
        dev_cluster.kubectl("delete", "pytorchjobs.kubeflow.org", "ranked", "-n", tas_queue.namespace,
                            "--wait=false", check=False)


def test_a_jobset_with_a_required_rack_lands_in_one_rack(
        dev_cluster: DevCluster, tas_queue: TasQueue) -> None:
    def replicated(name: str, replicas: int, pods: int) -> dict[str, Any]:
        return {"name": name, "replicas": replicas, "template": {"spec": {
            "parallelism": pods, "completions": pods, "backoffLimit": 0, "template": {
                "metadata": {"annotations": TOPOLOGY_AND_LONG_RUN},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.10",
                     "resources": {"requests": {"cpu": "2"}}}]}}}}}

    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "racked", "labels": {keys.QUEUE_NAME: "lq"}},
              "spec": {"replicatedJobs": [replicated("driver", 1, 1), replicated("workers", 2, 2)]}}
    try:
        dev_cluster.kubectl("apply", "-n", tas_queue.namespace, "-f", "-", stdin=json.dumps(jobset))
        _check_operator_job_placed(dev_cluster, tas_queue.namespace, "JobSet", "racked", 5)
    finally:
        dev_cluster.kubectl("delete", "jobsets.jobset.x-k8s.io", "racked", "-n", tas_queue.namespace,
                            "--wait=false", check=False)


def test_a_leaderworkerset_group_with_a_required_rack_runs_where_the_manager_placed_it(
        dev_cluster: DevCluster, tas_queue: TasQueue) -> None:
    def template() -> dict[str, Any]:
        return {"metadata": {"annotations": TOPOLOGY_AND_LONG_RUN},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": "2"}}}]}}

    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "serve", "labels": {keys.QUEUE_NAME: "lq"}},
           "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 3, "leaderTemplate": template(),
                                                            "workerTemplate": template()}}}
    try:
        dev_cluster.kubectl("apply", "-n", tas_queue.namespace, "-f", "-", stdin=json.dumps(lws))
        _check_operator_job_placed(dev_cluster, tas_queue.namespace, "LeaderWorkerSet", "serve", 3)
    finally:
        dev_cluster.kubectl("delete", "leaderworkersets.leaderworkerset.x-k8s.io", "serve", "-n",
                            tas_queue.namespace, "--wait=false", check=False)
