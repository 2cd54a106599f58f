"""TAS usage of admitted workloads: charged per domain, released, kept across node churn."""

from __future__ import annotations

from typing import Any

from pykueue.manager.core.tas import DomainAssignment, NoFit, TopologyAssignment, workload_tas_usage

from .fixtures import HOST, RACK, UNCONSTRAINED, counts, node, pod, podset, podset_dict, required, snapshot


def host_assignment(**per_host: int) -> TopologyAssignment:
    return TopologyAssignment(
        (HOST,), tuple(DomainAssignment((f"kwok-node-{h[1:]}",), c) for h, c in per_host.items())
    )


def test_add_usage_reduces_and_remove_usage_restores_capacity() -> None:
    snap = snapshot([node(0), node(1)])
    ta = host_assignment(n0=3, n1=1)
    snap.add_usage(ta, {"cpu": 2000})
    assert snap.free_capacity(["kwok-node-0"])["cpu"] == 2000
    assert snap.free_capacity(["kwok-node-0"])["pods"] == 107
    assert snap.free_capacity(["kwok-node-1"])["cpu"] == 6000
    snap.remove_usage(ta, {"cpu": 2000})
    assert snap.free_capacity(["kwok-node-0"])["cpu"] == 8000
    assert snap.free_capacity(["kwok-node-0"])["pods"] == 110


def test_admitted_usage_blocks_later_placements() -> None:
    snap = snapshot([node(0), node(1)])
    first = snap.place([podset(count=4, cpu="4", annotations=required(RACK))])
    assert first
    snap.add_usage(first.assignments["main"], {"cpu": 4000})
    assert isinstance(snap.place([podset(count=1, cpu="1", annotations=UNCONSTRAINED)]), NoFit)


def test_domain_capacity_sums_its_leaves() -> None:
    snap = snapshot()
    snap.add_usage(host_assignment(n0=1), {"cpu": 8000})
    assert snap.free_capacity(["b0", "r0"])["cpu"] == 8000
    assert snap.free_capacity(["b0"])["cpu"] == 24000


def workload(podsets: list[dict[str, Any]], assignments: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "spec": {"podSets": podsets},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": assignments}},
    }


def test_multi_podset_workload_usage_uses_each_podsets_own_requests() -> None:
    wl = workload(
        [podset_dict("leader", 1, cpu="2"), podset_dict("workers", 2, cpu="3")],
        [
            {
                "name": "leader",
                "flavors": {"cpu": "tas-flavor"},
                "topologyAssignment": host_assignment(n0=1).to_v1beta2(),
            },
            {
                "name": "workers",
                "flavors": {"cpu": "tas-flavor"},
                "topologyAssignment": host_assignment(n0=2).to_v1beta2(),
            },
        ],
    )
    usage = workload_tas_usage(wl, "tas-flavor")
    snap = snapshot([node(0)])
    snap.add_workload_usage(usage)
    assert snap.free_capacity(["kwok-node-0"])["cpu"] == 8000 - 2000 - 2 * 3000
    snap.remove_workload_usage(usage)
    assert snap.free_capacity(["kwok-node-0"])["cpu"] == 8000
    assert workload_tas_usage(wl, "other-flavor") == []


def test_usage_on_a_missing_node_is_kept_for_its_return() -> None:
    snap = snapshot([node(0), node(1)])
    snap.add_usage(host_assignment(n1=2), {"cpu": 4000})
    snap.remove_node("kwok-node-1")
    assert not snap.has_leaf(["kwok-node-1"])
    snap.upsert_node(node(1))
    assert snap.free_capacity(["kwok-node-1"])["cpu"] == 0


def test_node_turning_not_ready_leaves_the_tree_and_comes_back() -> None:
    snap = snapshot([node(0), node(1)])
    snap.upsert_node(node(0, ready="False"))
    assert counts(snap.place([podset(count=2, cpu="4", annotations=UNCONSTRAINED)])) == {"kwok-node-1": 2}
    snap.upsert_node(node(0))
    assert snap.has_leaf(["kwok-node-0"])


def test_simulate_empty_ignores_tas_usage_but_not_foreign_pods() -> None:
    snap = snapshot([node(0), node(1)], pods=[pod("foreign", "kwok-node-1", cpu="8")])
    snap.add_usage(host_assignment(n0=2), {"cpu": 4000})
    request = [podset(count=2, cpu="4", annotations=required(HOST))]
    assert isinstance(snap.place(request), NoFit)
    assert counts(snap.place(request, simulate_empty=True)) == {"kwok-node-0": 2}
