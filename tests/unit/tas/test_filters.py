"""Which nodes and how much of them a PodSet may use: readiness, taints, selectors, pods."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.core.tas import NoFit, PodSetRequest

from .fixtures import RACK, UNCONSTRAINED, counts, node, nodes, pod, podset, podset_dict, required, snapshot

NO_SCHEDULE = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def hosts_used(result: Any) -> set[str]:
    return set(counts(result))


def test_untolerated_taint_excludes_node_and_is_reported() -> None:
    node_list = [node(0, taints=[NO_SCHEDULE]), node(1)]
    snap = snapshot(node_list)
    assert hosts_used(snap.place([podset(count=2, cpu="4", annotations=required(RACK))])) == {"kwok-node-1"}
    result = snap.place([podset(count=3, cpu="4", annotations=required(RACK))])
    assert isinstance(result, NoFit)
    assert result.reason.endswith('. Total nodes: 2; excluded: taint "dedicated=gpu:NoSchedule": 1')


def test_pod_toleration_admits_tainted_node() -> None:
    snap = snapshot([node(0, taints=[NO_SCHEDULE]), node(1)])
    tol = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    ps = podset(count=4, cpu="4", annotations=required(RACK), tolerations=tol)
    assert hosts_used(snap.place([ps])) == {"kwok-node-0", "kwok-node-1"}


def test_flavor_toleration_admits_tainted_node() -> None:
    snap = snapshot(
        [node(0, taints=[NO_SCHEDULE]), node(1)], tolerations=[{"key": "dedicated", "operator": "Exists"}]
    )
    assert hosts_used(snap.place([podset(count=4, cpu="4", annotations=required(RACK))])) == {
        "kwok-node-0",
        "kwok-node-1",
    }


def test_prefer_no_schedule_taint_does_not_exclude() -> None:
    soft = {"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}
    snap = snapshot([node(0, taints=[soft]), node(1, taints=[soft])])
    assert sum(counts(snap.place([podset(count=4, cpu="4", annotations=required(RACK))])).values()) == 4


def test_flavor_node_taints_need_a_toleration() -> None:
    taint = {"key": "spot", "value": "true", "effect": "NoSchedule"}
    snap = snapshot(node_taints=[taint])
    assert isinstance(snap.place([podset(count=1, annotations=required(RACK))]), NoFit)
    tol = [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
    assert snap.place([podset(count=1, annotations=required(RACK), tolerations=tol)])


def test_node_selector_restricts_nodes() -> None:
    node_list = [node(i, labels={"gpu": "a100"} if i in (5, 6) else None) for i in range(8)]
    ps = podset(count=4, cpu="4", annotations=UNCONSTRAINED, node_selector={"gpu": "a100"})
    assert hosts_used(snapshot(node_list).place([ps])) == {"kwok-node-5", "kwok-node-6"}


def test_node_selector_mismatch_is_reported() -> None:
    result = snapshot().place([podset(count=1, annotations=UNCONSTRAINED, node_selector={"gpu": "h100"})])
    assert isinstance(result, NoFit)
    assert "nodeSelector: 8" in result.reason


def affinity(expressions: list[dict[str, Any]], fields: bool = False) -> dict[str, Any]:
    term_key = "matchFields" if fields else "matchExpressions"
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{term_key: expressions}]}
        }
    }


def test_required_affinity_in_and_not_in() -> None:
    aff_in = affinity([{"key": RACK, "operator": "In", "values": ["r3"]}])
    placed = hosts_used(
        snapshot().place([podset(count=4, cpu="4", annotations=UNCONSTRAINED, affinity=aff_in)])
    )
    assert placed == {"kwok-node-6", "kwok-node-7"}
    aff_not = affinity([{"key": RACK, "operator": "NotIn", "values": ["r0", "r1", "r2"]}])
    placed = hosts_used(
        snapshot().place([podset(count=4, cpu="4", annotations=UNCONSTRAINED, affinity=aff_not)])
    )
    assert placed == {"kwok-node-6", "kwok-node-7"}


def test_required_affinity_gt_and_match_fields() -> None:
    node_list = [node(i, labels={"gen": str(i)}) for i in range(8)]
    aff = affinity([{"key": "gen", "operator": "Gt", "values": ["5"]}])
    assert hosts_used(
        snapshot(node_list).place([podset(count=4, cpu="4", annotations=UNCONSTRAINED, affinity=aff)])
    ) == {
        "kwok-node-6",
        "kwok-node-7",
    }
    by_name = affinity([{"key": "metadata.name", "operator": "In", "values": ["kwok-node-2"]}], fields=True)
    result = snapshot().place([podset(count=3, cpu="4", annotations=UNCONSTRAINED, affinity=by_name)])
    assert isinstance(result, NoFit)
    assert "affinity: 7" in result.reason


def test_not_ready_and_unschedulable_nodes_are_excluded() -> None:
    node_list = [node(0, ready="False"), node(1, unschedulable=True), node(2), node(3)]
    snap = snapshot(node_list)
    assert {leaf.id for leaf in snap.leaves()} == {"kwok-node-2", "kwok-node-3"}
    assert hosts_used(snap.place([podset(count=4, cpu="4", annotations=UNCONSTRAINED)])) == {
        "kwok-node-2",
        "kwok-node-3",
    }


def test_nodes_outside_the_flavor_or_missing_a_level_label_are_excluded() -> None:
    other_pool = node(0, labels={"pool": "other"})
    no_rack = node(1)
    del no_rack["metadata"]["labels"][RACK]
    snap = snapshot([other_pool, no_rack, node(2)])
    assert [leaf.id for leaf in snap.leaves()] == ["kwok-node-2"]


def test_foreign_bound_pods_consume_capacity_but_unbound_terminal_and_tas_pods_do_not() -> None:
    tas_ann = {keys.PODSET_REQUIRED_TOPOLOGY: RACK}
    pods = [
        pod("bound", "kwok-node-0", cpu="6"),
        pod("unbound", None, cpu="8"),
        pod("done", "kwok-node-1", cpu="8", phase="Succeeded"),
        pod("tas", "kwok-node-1", cpu="8", annotations=tas_ann),
    ]
    snap = snapshot([node(0), node(1)], pods=pods)
    assert snap.free_capacity(["kwok-node-0"])["cpu"] == 2000
    assert snap.free_capacity(["kwok-node-0"])["pods"] == 109
    assert snap.free_capacity(["kwok-node-1"])["cpu"] == 8000
    placed = counts(snap.place([podset(count=5, cpu="2", annotations=required(RACK))]))
    assert placed == {"kwok-node-0": 1, "kwok-node-1": 4}


def test_removing_a_foreign_pod_frees_its_capacity() -> None:
    snap = snapshot([node(0)], pods=[pod("bound", "kwok-node-0", cpu="8")])
    assert isinstance(snap.place([podset(count=1, annotations=UNCONSTRAINED)]), NoFit)
    snap.remove_pod("default/bound")
    assert snap.place([podset(count=1, annotations=UNCONSTRAINED)])


def test_effective_request_includes_init_containers() -> None:
    raw = podset_dict(count=2, cpu="1", annotations=UNCONSTRAINED)
    raw["template"]["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "6"}}}]
    request = PodSetRequest.from_podset(raw)
    assert request.per_pod["cpu"] == 6000
    # Only one such pod fits a node, so two pods need two nodes.
    assert len(counts(snapshot([node(0), node(1)]).place([request]))) == 2


def test_pods_allocatable_limits_pod_count() -> None:
    snap = snapshot(nodes(2, pods="3"))
    assert counts(snap.place([podset(count=6, cpu="100m", annotations=required(RACK))])) == {
        "kwok-node-0": 3,
        "kwok-node-1": 3,
    }
    assert isinstance(snap.place([podset(count=7, cpu="100m", annotations=required(RACK))]), NoFit)


def test_memory_is_a_limiting_resource() -> None:
    result = snapshot([node(0)]).place([podset(count=3, cpu="1", memory="12Gi", annotations=UNCONSTRAINED)])
    assert isinstance(result, NoFit)
    assert "allows to fit only 2 out of 3 pod(s)" in result.reason
