"""The TAS adapter between the queueing core and the topology snapshots, at unit level."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api import keys
from pykueue.manager.core.assignment import Entry
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.flavor_assigner import FlavorAssigner
from pykueue.manager.core.preemption import ClassicalPreemption
from pykueue.manager.core.status import workload_status
from pykueue.manager.core.tas import NOT_SYNCED_REASON, DomainAssignment, TopologyAssignment, TopologySnapshot
from pykueue.manager.core.tas_hook import SECOND_PASS_FAILED, TasPlacer
from pykueue.manager.core.workload_state import ADMITTED, PENDING, QUOTA_RESERVED

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PROV = "kueue.x-k8s.io/provisioning-request"


def _objects(checks: list[str] | None = None) -> list[dict[str, Any]]:
    cq_spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["cpu"],
        "flavors": [{"name": "tas", "resources": [{"name": "cpu", "nominalQuota": 100}]}]}]}
    if checks:
        cq_spec["admissionChecks"] = checks
    objs: list[dict[str, Any]] = [
        {"kind": "Topology", "metadata": {"name": "default"},
         "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
        {"kind": "ResourceFlavor", "metadata": {"name": "tas"},
         "spec": {"nodeLabels": {"type": "kwok"}, "topologyName": "default"}},
        {"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": cq_spec},
        {"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}},
        {"kind": "AdmissionCheck", "metadata": {"name": "prov"}, "spec": {"controllerName": PROV}},
    ]
    for i in range(8):
        objs.append({"kind": "Node", "metadata": {"name": f"kwok-node-{i}", "labels": {
            "type": "kwok", BLOCK: f"b{i // 4}", RACK: f"r{i // 2}", HOST: f"kwok-node-{i}"}},
            "status": {"allocatable": {"cpu": "8", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    return objs


def _core(synced: bool = True, checks: list[str] | None = None) -> tuple[QueueingCore, TasPlacer]:
    tas = TasPlacer(synced=synced)
    core = QueueingCore(topology=tas)
    for obj in _objects(checks):
        if not tas.apply(obj) or obj["kind"] == "AdmissionCheck":
            core.apply(obj)
    return core, tas


def _wl(core: QueueingCore, name: str, count: int, level: str = RACK) -> None:
    core.apply({"kind": "Workload", "metadata": {"name": name, "namespace": "ns"}, "spec": {
        "queueName": "lq", "podSets": [{"name": "main", "count": count, "template": {
            "metadata": {"annotations": {REQUIRED: level}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}})


def _hosts(core: QueueingCore, key: str) -> dict[str, int]:
    rec = core.workload(key)
    assert rec.assignment is not None
    raw = rec.assignment.podsets[0].topology_assignment
    assert raw is not None
    return dict(TopologyAssignment.from_any(raw).leaf_values())


def test_no_placement_until_the_snapshot_is_synced() -> None:
    core, tas = _core(synced=False)
    assert not tas.synced
    _wl(core, "a", 4)
    core.run_until_idle()
    rec = core.workload("ns/a")
    assert rec.status == PENDING
    assert NOT_SYNCED_REASON in rec.reason
    tas.mark_synced()
    core.requeue_inadmissible()
    core.run_until_idle()
    assert core.workload("ns/a").status == ADMITTED
    assert _hosts(core, "ns/a") == {"kwok-node-0": 4}


def test_admission_writes_v1beta2_topology_assignment() -> None:
    core, _ = _core()
    _wl(core, "a", 10)
    core.run_until_idle()
    status = workload_status(core.workload("ns/a"), core.now)
    ta = status["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert ta["levels"] == [HOST]
    assert "slices" in ta and "domains" not in ta
    assert TopologyAssignment.from_v1beta2(ta).leaf_values() == [("kwok-node-0", 8), ("kwok-node-1", 2)]


def test_unhealthy_node_is_recorded_then_replaced_by_the_second_pass() -> None:
    core, tas = _core()
    _wl(core, "a", 4)
    core.run_until_idle()
    assert tas.fail_node("kwok-node-0") == []
    delayed, unhealthy = tas.status_fields("ns/a")
    assert unhealthy == ["kwok-node-0"]
    status = workload_status(core.workload("ns/a"), core.now, delayed_topology=delayed,
                             unhealthy_nodes=unhealthy)
    assert status["unhealthyNodes"] == [{"name": "kwok-node-0"}]
    core.run_until_idle()
    assert core.workload("ns/a").status == ADMITTED
    assert core.workload("ns/a").evictions == []
    assert _hosts(core, "ns/a") == {"kwok-node-1": 4}
    assert tas.status_fields("ns/a") == ({}, [])


def test_second_failed_node_before_replacement_evicts() -> None:
    core, tas = _core()
    _wl(core, "a", 12)  # kwok-node-0: 8, kwok-node-1: 4
    core.run_until_idle()
    assert tas.fail_node("kwok-node-0") == []
    assert tas.fail_node("kwok-node-1") == ["ns/a"]
    assert core.evict("ns/a", "NodeFailures")
    assert core.workload("ns/a").evictions == ["NodeFailures"]
    assert tas.status_fields("ns/a") == ({}, [])
    core.run_until_idle()
    assert _hosts(core, "ns/a") == {"kwok-node-2": 8, "kwok-node-3": 4}


def test_second_pass_without_cluster_queue_is_no_fit() -> None:
    core, tas = _core(checks=["prov"])
    _wl(core, "a", 4)
    core.run_until_idle()
    rec = core.workload("ns/a")
    assert rec.status == QUOTA_RESERVED
    assert tas.status_fields("ns/a")[0] == {"main": "Pending"}
    assert core.set_check_state("ns/a", "prov", "Ready")
    assert rec.status == QUOTA_RESERVED  # topology first
    core.delete("ClusterQueue", None, "cq")
    outcome = tas.second_pass(rec, core.cluster_queues(), core.flavors())
    assert outcome == (SECOND_PASS_FAILED, "ClusterQueue cq not found")
    core.run_until_idle()
    assert rec.status == QUOTA_RESERVED
    assert rec.assignment is not None and rec.assignment.podsets[0].topology_assignment is None


def test_second_pass_admits_and_marks_the_request_ready() -> None:
    core, tas = _core(checks=["prov"])
    _wl(core, "a", 4)
    core.run_until_idle()
    core.set_check_state("ns/a", "prov", "Ready")
    core.run_until_idle()
    rec = core.workload("ns/a")
    assert rec.status == ADMITTED
    delayed, _ = tas.status_fields("ns/a")
    psa = workload_status(rec, core.now, delayed_topology=delayed)["admission"]["podSetAssignments"][0]
    assert psa["delayedTopologyRequest"] == "Ready"
    assert TopologyAssignment.from_any(psa["topologyAssignment"]).leaf_values() == [("kwok-node-0", 4)]


def test_no_second_pass_for_finished_workloads() -> None:
    core, tas = _core(checks=["prov"])
    _wl(core, "a", 4)
    core.run_until_idle()
    rec = core.workload("ns/a")
    core.set_check_state("ns/a", "prov", "Ready")
    core.finish("ns/a")
    assert tas.second_pass_keys() == []
    assert tas.second_pass(rec, core.cluster_queues(), core.flavors()) == ("", "")


def test_replacement_claims_its_node_before_pending_workloads() -> None:
    core, tas = _core()
    for name in [f"kwok-node-{i}" for i in range(3, 8)]:
        tas.delete("Node", None, name)  # block b0 keeps kwok-node-0..2
    _wl(core, "a", 10, level=BLOCK)  # kwok-node-0: 8, kwok-node-1: 2
    core.run_until_idle()
    assert _hosts(core, "ns/a") == {"kwok-node-0": 8, "kwok-node-1": 2}
    tas.fail_node("kwok-node-0")
    _wl(core, "b", 8, level=HOST)  # would take kwok-node-2, the only host with 8 free
    core.run_until_idle()
    # The second pass runs before the heads are nominated: a's moved pods get kwok-node-2.
    assert _hosts(core, "ns/a") == {"kwok-node-1": 2, "kwok-node-2": 8}
    assert core.workload("ns/a").evictions == []
    b = core.workload("ns/b")
    assert b.status == PENDING
    assert "allows to fit only 6 out of 8 pod(s)" in b.reason


def test_reservation_read_from_status_keeps_its_delayed_topology() -> None:
    core, tas = _core(checks=["prov"])
    core.apply({"kind": "Workload", "metadata": {"name": "r", "namespace": "ns"}, "spec": {
        "queueName": "lq", "podSets": [{"name": "main", "count": 4, "template": {
            "metadata": {"annotations": {REQUIRED: RACK}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": 4, "flavors": {"cpu": "tas"}, "delayedTopologyRequest": "Pending"}]},
            "admissionChecks": [{"name": "prov", "state": "Pending"}],
            "conditions": [{"type": "QuotaReserved", "status": "True"}]}})
    assert core.workload("ns/r").status == QUOTA_RESERVED
    assert tas.holds_admission("ns/r")
    core.set_check_state("ns/r", "prov", "Ready")
    core.run_until_idle()
    assert core.workload("ns/r").status == ADMITTED
    assert _hosts(core, "ns/r") == {"kwok-node-0": 4}


def _stored(core: QueueingCore, key: str, hosts: dict[str, int], unhealthy: list[str]) -> dict[str, Any]:
    """The Workload as the API shows it after another writer rewrote its assignment."""
    rec = core.workload(key)
    assert rec.assignment is not None
    ns, name = key.split("/")
    ta = TopologyAssignment((HOST,), tuple(DomainAssignment((n,), c) for n, c in sorted(hosts.items())))
    psas = [{"name": p.name, "flavors": dict(p.flavors), "count": p.count,
             "topologyAssignment": ta.to_v1beta2()} for p in rec.assignment.podsets]
    return {"kind": "Workload", "metadata": {"name": name, "namespace": ns}, "spec": rec.wl.source["spec"],
            "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": psas},
                       "unhealthyNodes": [{"name": n} for n in unhealthy]}}


def test_a_topology_rewritten_by_another_writer_is_adopted_with_its_usage() -> None:
    core, tas = _core()
    _wl(core, "a", 4)
    core.run_until_idle()
    assert _hosts(core, "ns/a") == {"kwok-node-0": 4}
    tas.fail_node("kwok-node-0")
    # The extender swapped the node at bind time before the second pass ran.
    assert core.adopt_topology(_stored(core, "ns/a", {"kwok-node-1": 4}, []))
    assert _hosts(core, "ns/a") == {"kwok-node-1": 4}
    assert tas.status_fields("ns/a") == ({}, [])  # nothing left to replace
    assert not core.adopt_topology(_stored(core, "ns/a", {"kwok-node-1": 4}, []))  # unchanged
    core.run_until_idle()
    assert _hosts(core, "ns/a") == {"kwok-node-1": 4} and core.workload("ns/a").evictions == []
    # Its usage moved with it: kwok-node-1 is full, so the next rack job of 8 does not fit there.
    _wl(core, "b", 8, level=HOST)
    core.run_until_idle()
    assert "kwok-node-1" not in _hosts(core, "ns/b")


def test_an_assignment_of_another_shape_is_not_adopted() -> None:
    core, _ = _core()
    _wl(core, "a", 4)
    core.run_until_idle()
    stored = _stored(core, "ns/a", {"kwok-node-1": 4}, [])
    stored["status"]["admission"]["podSetAssignments"][0]["name"] = "other"
    assert not core.adopt_topology(stored)
    assert _hosts(core, "ns/a") == {"kwok-node-0": 4}
    _wl(core, "pending", 100)  # holds no quota: nothing to adopt into
    core.run_until_idle()
    assert not core.adopt_topology(_stored(core, "ns/a", {"kwok-node-2": 4}, []) | {
        "metadata": {"name": "pending", "namespace": "ns"}})


def test_a_node_heartbeat_is_not_a_change_placement_must_react_to() -> None:
    tas = TasPlacer()
    node = next(o for o in _objects() if o["kind"] == "Node")
    assert tas.apply(node)
    beat = copy.deepcopy(node)
    beat["metadata"]["resourceVersion"] = "2"
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-11-27T22:00:00Z"
    assert not tas.apply(beat)
    assert tas.nodes["kwok-node-0"] == beat  # kept, all the same
    changes: list[tuple[str, str, Any]] = [
        ("metadata", "labels", {**node["metadata"]["labels"], RACK: "r9"}),
        ("status", "allocatable", {"cpu": "4", "pods": "110"}),
        ("spec", "unschedulable", True),
        ("spec", "taints", [{"key": "k", "effect": "NoSchedule"}]),
        ("status", "conditions", [{"type": "Ready", "status": "False"}]),
    ]
    for part, field, value in changes:
        changed = copy.deepcopy(beat)
        changed.setdefault(part, {})[field] = value
        assert tas.apply(changed), field
        assert not tas.apply(copy.deepcopy(changed)), field


def _pod(name: str, node: str, *, tas: bool = False, phase: str = "Running") -> dict[str, Any]:
    labels = {keys.TAS_LABEL: "true"} if tas else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "labels": labels, "resourceVersion": "1"},
            "spec": {"nodeName": node,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": phase}}


def test_only_pods_that_take_node_capacity_change_what_placement_reads() -> None:
    """A TAS workload's pods are charged through its assignment: their events (and those of
    a plain pod that change nothing it takes) neither rebuild snapshots nor free capacity."""
    tas = TasPlacer()
    for obj in _objects():
        tas.apply(obj)
    version = tas._version
    tas_pod = _pod("tas-0", "kwok-node-0", tas=True)
    assert not tas.apply(tas_pod) and not tas.delete("Pod", "ns", "tas-0")
    assert tas._version == version and not tas.pods
    plain = _pod("plain-0", "kwok-node-0")
    assert tas.apply(plain) and tas._version == version + 1
    ready = copy.deepcopy(plain)
    ready["metadata"]["resourceVersion"] = "2"
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert not tas.apply(ready) and tas._version == version + 1
    assert tas.delete("Pod", "ns", "plain-0") and tas._version == version + 2
    assert not tas.delete("Pod", "ns", "plain-0")
    assert tas.apply(plain)
    done = copy.deepcopy(plain)
    done["status"]["phase"] = "Succeeded"
    assert tas.apply(done) and "ns/plain-0" not in tas.pods  # its requests are free again
    assert not tas.delete("Pod", "ns", "plain-0")


def _count_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per placement search over the nodes from now on."""
    searches: list[int] = []
    place = TopologySnapshot.place

    def counted(self: TopologySnapshot, *args: Any, **kwargs: Any) -> Any:
        searches.append(1)
        return place(self, *args, **kwargs)

    monkeypatch.setattr(TopologySnapshot, "place", counted)
    return searches


def test_placements_on_the_empty_cluster_are_reused_until_the_nodes_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every head that needs preemption asks whether it would fit the empty cluster; the
    answer reads only nodes and non-TAS pods, so it is searched once per snapshot."""
    core, tas = _core()
    _wl(core, "a", 16)  # a rack holds 2 nodes x 8 cpu
    rec = core.workload("ns/a")
    snap = core.snapshot()
    assignment = FlavorAssigner(snap, ClassicalPreemption()).assign(rec.wl, snap.cluster_queues["cq"], 0)
    entry = Entry(rec.wl, "cq", 0, rec.queue_ts)
    searches = _count_searches(monkeypatch)
    first = tas.place_freeing(snap, entry, assignment, 0, None)
    assert isinstance(first, dict) and first == tas.place_freeing(snap, entry, assignment, 0, None)
    assert len(searches) == 1
    node = next(o for o in _objects() if o["kind"] == "Node")
    tas.apply(copy.deepcopy(node) | {"status": {"allocatable": {"cpu": "8", "pods": "110"},
                                                "conditions": [{"type": "Ready", "status": "False"}]}})
    # One node of every rack gone: no rack offers 16 cpu any more.
    for i in (3, 5, 7):
        assert tas.delete("Node", None, f"kwok-node-{i}")
    assert tas.place_freeing(snap, entry, assignment, 0, None) is None
    assert len(searches) == 2


def test_heads_of_one_shape_share_a_placement_and_reservations_keep_theirs_while_it_fits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Placement is deterministic on the same usage: heads asking for the same pod sets get
    one search; a reservation takes its head's placement while its domains still hold it
    (as Kueue checks the nominated assignment) and places again only when they do not."""
    core, tas = _core()
    _wl(core, "a", 6)  # a node holds 8 cpu: two of these never share one
    _wl(core, "b", 6)
    _wl(core, "c", 1)
    snap = core.snapshot()
    cq = snap.cluster_queues["cq"]
    searches = _count_searches(monkeypatch)
    placed = {}
    nominated = {}
    for name in ("a", "b", "c"):
        rec = core.workload(f"ns/{name}")
        assignment = FlavorAssigner(snap, ClassicalPreemption()).assign(rec.wl, cq, 0)
        found = tas.place(snap, Entry(rec.wl, "cq", 0, rec.queue_ts), assignment, 0, "default")
        assert isinstance(found, dict)
        placed[name] = (rec.wl, assignment)
        nominated[name] = TopologyAssignment.from_any(found).leaf_values()
    assert nominated["a"] == nominated["b"]
    assert len(searches) == 2  # a and b ask for the same
    # b was placed on the same usage: its reservation takes that placement as it is.
    wl_b, assignment_b = placed["b"]
    assert tas.reserve("ns/b", wl_b, cq, snap.flavors, assignment_b) == ""
    assert len(searches) == 2
    # a was given the node b now holds 6 of 8 cpu of: a is placed again, beside b.
    wl_a, assignment_a = placed["a"]
    assert tas.reserve("ns/a", wl_a, cq, snap.flavors, assignment_a) == ""
    assert len(searches) == 3
    hosts = [TopologyAssignment.from_any(a.podsets[0].topology_assignment).leaf_values()
             for a in (assignment_a, assignment_b)]
    assert hosts == [[("kwok-node-1", 6)], [("kwok-node-0", 6)]]
    # c's one cpu still fits where it was placed, charges since or not: no new search.
    wl_c, assignment_c = placed["c"]
    assert tas.reserve("ns/c", wl_c, cq, snap.flavors, assignment_c) == ""
    assert len(searches) == 3
    raw_c = assignment_c.podsets[0].topology_assignment
    assert raw_c is not None and TopologyAssignment.from_any(raw_c).leaf_values() == nominated["c"]


def test_a_fit_with_targets_gone_is_asked_again_without_a_second_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The preemption search ends on the targets it last found to fit, and the cycle then
    asks for that placement to hold it: answered without a search, until capacity is
    charged or released."""
    core, tas = _core()
    _wl(core, "a", 16)  # a rack holds 2 nodes x 8 cpu
    _wl(core, "other", 2)
    rec = core.workload("ns/a")
    snap = core.snapshot()
    cq = snap.cluster_queues["cq"]
    assignment = FlavorAssigner(snap, ClassicalPreemption()).assign(rec.wl, cq, 0)
    entry = Entry(rec.wl, "cq", 0, rec.queue_ts)
    searches = _count_searches(monkeypatch)
    gone = frozenset({"ns/victim"})
    first = tas.place_freeing(snap, entry, assignment, 0, gone)
    assert isinstance(first, dict)
    assert tas.place_freeing(snap, entry, assignment, 0, gone) == first and len(searches) == 1
    assert tas.place_freeing(snap, entry, assignment, 0, frozenset()) == first and len(searches) == 2
    # Both answers stay known until capacity is charged or released.
    assert tas.place_freeing(snap, entry, assignment, 0, gone) == first and len(searches) == 2
    other = core.workload("ns/other")
    other_assignment = FlavorAssigner(snap, ClassicalPreemption()).assign(other.wl, cq, 0)
    assert tas.reserve("ns/other", other.wl, cq, snap.flavors, other_assignment) == ""
    tas.place_freeing(snap, entry, assignment, 0, gone)
    assert len(searches) == 4  # the reservation's own search, then this one again
