"""Node failure: which node, whether it failed, and moving its pods (or evicting)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pykueue.api import keys
from pykueue.manager.core.tas import (
    NoReplacement,
    PodSetRequest,
    Replacement,
    TopologyAssignment,
    TopologySnapshot,
    is_node_failed,
    node_to_replace,
    replace_failed_node,
)

from .fixtures import BLOCK, RACK, node, podset, preferred, required, snapshot


def admitted(snap: TopologySnapshot, request: PodSetRequest) -> TopologyAssignment:
    result = snap.place([request])
    assert result, result
    ta = result.assignments[request.name]
    snap.add_usage(ta, request.per_pod)
    return ta


def hosts(ta: TopologyAssignment) -> dict[str, int]:
    return dict(ta.leaf_values())


def test_pods_move_to_a_node_inside_the_required_block() -> None:
    snap = snapshot()
    request = podset(count=3, cpu="2", annotations=required(BLOCK))
    ta = admitted(snap, request)
    failed = next(iter(hosts(ta)))
    snap.remove_node(failed)
    out = replace_failed_node(ta, failed, snap, request)
    assert isinstance(out, Replacement)
    new = hosts(out.assignment)
    assert failed not in new
    assert sum(new.values()) == 3
    assert {int(h.rsplit("-", 1)[1]) // 4 for h in new} == {int(failed.rsplit("-", 1)[1]) // 4}
    assert out.replacement_nodes and all(h in new for h in out.replacement_nodes)


def test_no_room_in_the_required_rack_evicts_with_node_failures() -> None:
    snap = snapshot()
    request = podset(count=6, cpu="2", annotations=required(RACK))
    ta = admitted(snap, request)
    assert hosts(ta) == {"kwok-node-0": 4, "kwok-node-1": 2}
    snap.remove_node("kwok-node-1")
    out = replace_failed_node(ta, "kwok-node-1", snap, request)
    assert isinstance(out, NoReplacement)
    assert out.reason == keys.Reason.NODE_FAILURES
    assert (
        out.message == "Workload was evicted as there was no replacement for unhealthy node(s): kwok-node-1"
    )
    assert "topologyDomain: 6" in out.detail


def test_preferred_podset_may_move_anywhere() -> None:
    snap = snapshot()
    request = podset(count=2, cpu="8", annotations=preferred(RACK))
    ta = admitted(snap, request)
    failed = "kwok-node-0"
    assert failed in hosts(ta)
    snap.remove_node(failed)
    out = replace_failed_node(ta, failed, snap, request)
    assert isinstance(out, Replacement)
    assert sum(hosts(out.assignment).values()) == 2
    assert failed not in hosts(out.assignment)


def test_node_outside_the_assignment_needs_no_replacement() -> None:
    snap = snapshot()
    request = podset(count=2, cpu="4", annotations=required(RACK))
    ta = admitted(snap, request)
    out = replace_failed_node(ta, "kwok-node-7", snap, request)
    assert isinstance(out, Replacement)
    assert out.assignment == ta and out.added == ()


def test_stale_remaining_domain_fails_replacement() -> None:
    snap = snapshot()
    request = podset(count=8, cpu="4", annotations=required(BLOCK))
    ta = admitted(snap, request)
    snap.remove_node("kwok-node-0")
    snap.remove_node("kwok-node-1")
    out = replace_failed_node(ta, "kwok-node-0", snap, request)
    assert isinstance(out, NoReplacement)
    assert out.detail.startswith(
        "Cannot replace the node, because the existing topologyAssignment is invalid"
    )
    assert "kwok-node-1" in out.detail


def test_failed_node_is_never_chosen_even_if_still_listed() -> None:
    snap = snapshot()
    request = podset(count=1, cpu="1", annotations=required(RACK))
    ta = admitted(snap, request)
    (failed,) = hosts(ta)
    out = replace_failed_node(ta, failed, snap, request)  # node still in the snapshot (e.g. tainted)
    assert isinstance(out, Replacement)
    assert failed not in hosts(out.assignment)


def test_slices_are_rebuilt_in_whole_slices() -> None:
    snap = snapshot()
    ann = {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, keys.PODSET_SLICE_SIZE: "2", **required(BLOCK)}
    request = podset(count=4, cpu="4", annotations=ann)
    ta = admitted(snap, request)
    failed = next(iter(hosts(ta)))
    snap.remove_node(failed)
    out = replace_failed_node(ta, failed, snap, request)
    assert isinstance(out, Replacement)
    per_rack: dict[int, int] = {}
    for host, n in hosts(out.assignment).items():
        rack = int(host.rsplit("-", 1)[1]) // 2
        per_rack[rack] = per_rack.get(rack, 0) + n
    assert sum(per_rack.values()) == 4
    assert all(n % 2 == 0 for n in per_rack.values())


def test_rewritten_assignment_keeps_topology_order() -> None:
    snap = snapshot()
    request = podset(count=10, cpu="4", annotations=preferred(BLOCK))
    ta = admitted(snap, request)
    failed = ta.domains[0].values[0]
    snap.remove_node(failed)
    out = replace_failed_node(ta, failed, snap, request)
    assert isinstance(out, Replacement)
    names = [d.values[0] for d in out.assignment.domains]
    assert names == sorted(names, key=lambda h: int(h.rsplit("-", 1)[1]))
    assert sum(hosts(out.assignment).values()) == 10


NOW = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)


def test_is_node_failed_rules() -> None:
    assert is_node_failed(None, NOW)
    assert not is_node_failed(node(0), NOW)
    recent = node(0, ready="False", transition="2026-01-01T00:00:50Z")
    old = node(0, ready="False", transition="2026-01-01T00:00:20Z")
    assert not is_node_failed(recent, NOW)
    assert is_node_failed(old, NOW)
    assert is_node_failed(recent, NOW, grace=timedelta(seconds=5))
    no_condition = node(0)
    no_condition["status"]["conditions"] = []
    assert is_node_failed(no_condition, NOW)


def test_node_to_replace_prefers_status_over_legacy_annotation() -> None:
    wl = {
        "metadata": {"annotations": {keys.NODE_TO_REPLACE_ANNOTATION: "kwok-node-1"}},
        "status": {"unhealthyNodes": [{"name": "kwok-node-2"}, {"name": "kwok-node-3"}]},
    }
    assert node_to_replace(wl) == "kwok-node-2"
    del wl["status"]["unhealthyNodes"]
    assert node_to_replace(wl) == "kwok-node-1"
    assert node_to_replace({"metadata": {}}) is None
