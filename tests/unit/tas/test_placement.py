"""Placement per annotation kind, following Kueue's BestFit / LeastFreeCapacity rules."""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

from pykueue.api import keys
from pykueue.manager.core.tas import (
    NOT_SYNCED_REASON,
    NoFit,
    Placed,
    PodSetRequest,
    TopologySnapshot,
    podset_requests,
)

from .fixtures import (
    BLOCK,
    HOST,
    RACK,
    UNCONSTRAINED,
    counts,
    flavor,
    node,
    nodes,
    pod,
    podset,
    podset_dict,
    preferred,
    required,
    snapshot,
    topology,
)


def rack_of(host: str) -> str:
    return f"r{int(host.rsplit('-', 1)[1]) // 2}"


def block_of(host: str) -> str:
    return f"b{int(host.rsplit('-', 1)[1]) // 4}"


def test_required_rack_keeps_all_pods_in_one_rack() -> None:
    placed = counts(snapshot().place([podset(count=4, cpu="4", annotations=required(RACK))]))
    assert sum(placed.values()) == 4
    assert len({rack_of(h) for h in placed}) == 1


def test_required_rack_too_large_reports_how_many_fit() -> None:
    result = snapshot().place([podset(count=5, cpu="4", annotations=required(RACK))])
    assert isinstance(result, NoFit)
    assert result.reason == 'topology "default" allows to fit only 4 out of 5 pod(s)'


def test_nothing_fits_reports_exclusions_by_resource() -> None:
    result = snapshot().place([podset(count=1, cpu="16", annotations=required(RACK))])
    assert isinstance(result, NoFit)
    assert result.reason.startswith('topology "default" doesn\'t allow to fit any of 1 pod(s)')
    assert "Total nodes: 8" in result.reason
    assert result.reason.endswith('. Total nodes: 8; excluded: resource "cpu": 8')


def test_best_fit_picks_the_tightest_rack() -> None:
    # A foreign pod on node 4 leaves rack r2 room for exactly three 4-cpu pods.
    snap = snapshot(pods=[pod("foreign", "kwok-node-4", cpu="4")])
    placed = counts(snap.place([podset(count=3, cpu="4", annotations=required(RACK))]))
    assert placed == {"kwok-node-4": 1, "kwok-node-5": 2}


def test_preferred_climbs_to_block_and_minimises_racks() -> None:
    placed = counts(snapshot().place([podset(count=6, cpu="4", annotations=preferred(RACK))]))
    assert sum(placed.values()) == 6
    assert len({block_of(h) for h in placed}) == 1
    assert len({rack_of(h) for h in placed}) == 2


def test_preferred_at_top_level_splits_across_blocks() -> None:
    placed = counts(snapshot().place([podset(count=10, cpu="4", annotations=preferred(BLOCK))]))
    assert sum(placed.values()) == 10
    assert {block_of(h) for h in placed} == {"b0", "b1"}
    # BestFit fills one block completely and puts the remainder in as few nodes as possible.
    assert sorted(placed.values()) == [2, 2, 2, 2, 2]


def test_required_fails_where_preferred_splits() -> None:
    result = snapshot().place([podset(count=10, cpu="4", annotations=required(BLOCK))])
    assert isinstance(result, NoFit)
    assert "allows to fit only 8 out of 10 pod(s)" in result.reason


def test_unconstrained_uses_least_free_node_that_fits() -> None:
    snap = snapshot(pods=[pod("foreign", "kwok-node-3", cpu="6")])
    placed = counts(snap.place([podset(count=2, cpu="1", annotations=UNCONSTRAINED)]))
    assert placed == {"kwok-node-3": 2}


def test_unconstrained_spreads_greedily_when_no_node_fits() -> None:
    placed = counts(snapshot().place([podset(count=10, cpu="4", annotations=UNCONSTRAINED)]))
    assert placed == {f"kwok-node-{i}": 2 for i in range(5)}


def test_unconstrained_false_is_not_a_topology_request() -> None:
    ps = podset(count=1, annotations={keys.PODSET_UNCONSTRAINED_TOPOLOGY: "false"})
    result = snapshot().place([ps])
    assert isinstance(result, NoFit)
    assert result.reason == "topology level not specified"


def test_implied_unconstrained_in_tas_only_queue() -> None:
    placed = counts(snapshot().place([podset(count=3, cpu="1", implied=True)]))
    assert sum(placed.values()) == 3
    assert len(placed) == 1


def test_unknown_level_is_rejected() -> None:
    result = snapshot().place([podset(count=1, annotations=required("example.com/zone"))])
    assert isinstance(result, NoFit)
    assert result.reason == "no requested topology level: example.com/zone"


def slice_annotations(level: str, size: int, main: dict[str, str] | None = None) -> dict[str, str]:
    out = {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: level, keys.PODSET_SLICE_SIZE: str(size)}
    out.update(main or {})
    return out


def test_slices_stay_within_one_rack_each() -> None:
    # Node 0 keeps one 4-cpu slot, so block b0 only holds one rack-slice of 4.
    snap = snapshot(pods=[pod("foreign", "kwok-node-0", cpu="4")])
    ann = slice_annotations(RACK, 4, required(BLOCK))
    placed = counts(snap.place([podset(count=8, cpu="4", annotations=ann)]))
    assert {block_of(h) for h in placed} == {"b1"}
    per_rack: dict[str, int] = {}
    for host, n in placed.items():
        per_rack[rack_of(host)] = per_rack.get(rack_of(host), 0) + n
    assert all(n % 4 == 0 for n in per_rack.values())


def test_slice_without_size_is_rejected() -> None:
    ann = {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, **required(BLOCK)}
    result = snapshot().place([podset(count=2, annotations=ann)])
    assert isinstance(result, NoFit)
    assert result.reason == "slice topology requested, but slice size not provided"


def test_slice_level_above_main_level_is_rejected() -> None:
    result = snapshot().place([podset(count=2, annotations=slice_annotations(BLOCK, 2, required(RACK)))])
    assert isinstance(result, NoFit)
    assert result.reason == f"podset slice topology {BLOCK} is above the podset topology {RACK}"


def test_slice_shortfall_is_counted_in_slices() -> None:
    result = snapshot().place(
        [podset(count=12, cpu="4", annotations=slice_annotations(RACK, 4, required(BLOCK)))]
    )
    assert isinstance(result, NoFit)
    assert "allows to fit only 2 out of 3 slice(s)" in result.reason


def test_slice_only_request_is_placed_anywhere_in_whole_slices() -> None:
    placed = counts(snapshot().place([podset(count=6, cpu="4", annotations=slice_annotations(RACK, 2))]))
    assert sum(placed.values()) == 6
    per_rack: dict[str, int] = {}
    for host, n in placed.items():
        per_rack[rack_of(host)] = per_rack.get(rack_of(host), 0) + n
    assert all(n % 2 == 0 for n in per_rack.values())


def test_multi_layer_slices_group_pods_per_block_and_host() -> None:
    layers = json.dumps([{"topology": BLOCK, "size": 4}, {"topology": HOST, "size": 2}])
    ann = {keys.PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: layers}
    # 3 cpu pods: two per node, so hosts can only take pairs.
    placed = counts(snapshot().place([podset(count=8, cpu="3", annotations=ann)]))
    assert sum(placed.values()) == 8
    assert all(n % 2 == 0 for n in placed.values())
    per_block: dict[str, int] = {}
    for host, n in placed.items():
        per_block[block_of(host)] = per_block.get(block_of(host), 0) + n
    assert all(n % 4 == 0 for n in per_block.values())


def group_pair(leader_cpu: str, workers: int, worker_cpu: str, level: str) -> list[PodSetRequest]:
    group = {keys.PODSET_GROUP_NAME: "lws", **required(level)}
    return [
        podset(name="leader", count=1, cpu=leader_cpu, annotations=group),
        podset(name="workers", count=workers, cpu=worker_cpu, annotations=group),
    ]


def test_group_places_leader_and_workers_in_one_rack() -> None:
    result = snapshot().place(group_pair("4", 3, "4", RACK))
    leader, workers = counts(result, "leader"), counts(result, "workers")
    assert sum(leader.values()) == 1
    assert sum(workers.values()) == 3
    assert len({rack_of(h) for h in [*leader, *workers]}) == 1
    for host in leader:
        assert workers.get(host, 0) * 4 + 4 <= 8


def test_group_fails_when_leader_displaces_workers() -> None:
    result = snapshot().place(group_pair("8", 3, "4", RACK))
    assert isinstance(result, NoFit)
    assert "allows to fit only 2 out of 3 pod(s)" in result.reason


def test_multi_podset_accounts_earlier_podsets_first() -> None:
    result = snapshot().place(
        [
            podset(name="a", count=2, cpu="4", annotations=required(RACK)),
            podset(name="b", count=2, cpu="4", annotations=required(RACK)),
        ]
    )
    a, b = counts(result, "a"), counts(result, "b")
    for host in set(a) | set(b):
        assert (a.get(host, 0) + b.get(host, 0)) * 4 <= 8


def test_multi_podset_usage_is_charged_per_domain_regression_5325() -> None:
    # PodSet a spreads 12 one-cpu pods over two nodes (8 + 4). Charging all 12 cpu to
    # each node (the old bug) would leave no room for PodSet b on the second node.
    two = [node(0), node(1)]
    snap = snapshot(two)
    result = snap.place(
        [
            podset(name="a", count=12, cpu="1", annotations=UNCONSTRAINED),
            podset(name="b", count=4, cpu="1", annotations=required(HOST)),
        ]
    )
    assert isinstance(result, Placed), result
    a, b = counts(result, "a"), counts(result, "b")
    assert sum(a.values()) == 12 and sum(b.values()) == 4
    for host in ("kwok-node-0", "kwok-node-1"):
        assert a.get(host, 0) + b.get(host, 0) <= 8


def test_zero_count_podset_gets_an_empty_assignment() -> None:
    result = snapshot().place([podset(count=0, annotations=required(RACK))])
    assert isinstance(result, Placed)
    assert result.assignments["main"].domains == ()


def test_non_hostname_topology_pools_node_capacity() -> None:
    snap = snapshot(levels=[BLOCK, RACK])
    result = snap.place([podset(count=3, cpu="5", annotations=required(RACK))])
    assert isinstance(result, Placed)
    ta = result.assignments["main"]
    assert ta.levels == (BLOCK, RACK)
    # 15 cpu fit the pooled 16 cpu of a rack even though no node holds two such pods.
    assert [(d.values, d.count) for d in ta.domains] == [(("b0", "r0"), 3)]


def test_hostname_assignment_lists_only_hostnames_in_topology_order() -> None:
    result = snapshot().place([podset(count=16, cpu="4", annotations=preferred(BLOCK))])
    assert isinstance(result, Placed)
    ta = result.assignments["main"]
    assert ta.levels == (HOST,)
    hosts = [d.values[0] for d in ta.domains]
    assert hosts == sorted(hosts, key=lambda h: (block_of(h), rack_of(h), h))


def test_place_leaves_the_snapshot_unchanged() -> None:
    snap = snapshot()
    before = {leaf.id: dict(leaf.free) for leaf in snap.leaves()}
    snap.place([podset(count=8, cpu="4", annotations=required(BLOCK))])
    assert {leaf.id: dict(leaf.free) for leaf in snap.leaves()} == before


def test_repeated_placements_see_every_change_of_free_capacity() -> None:
    """Leaves remember how many pods of a shape fit them; every way their free capacity
    changes (TAS usage charged and released, a plain pod bound and gone, a node updated)
    must be seen by the next placement of the same shape."""
    snap = snapshot()
    request = [podset(count=3, cpu="4", annotations=required(RACK))]
    first = counts(snap.place(request))
    assert first == counts(snap.place(request))  # remembered, and the same
    placed = snap.place(request)
    assert isinstance(placed, Placed)
    per_pod = {"cpu": 4000}
    snap.add_usage(placed.assignments["main"], per_pod)
    second = counts(snap.place(request))
    assert not set(second) & set(first)  # the first rack is full now
    snap.remove_usage(placed.assignments["main"], per_pod)
    assert counts(snap.place(request)) == first
    snap.add_pod(pod("foreign", "kwok-node-4", cpu="4"))  # rack r2 is now the tightest fit
    assert counts(snap.place(request)) == {"kwok-node-4": 1, "kwok-node-5": 2}
    snap.remove_pod("default/foreign")
    assert counts(snap.place(request)) == first
    small = nodes()[4]
    small["status"]["allocatable"]["cpu"] = "4"
    snap.upsert_node(small)
    assert counts(snap.place(request)) == {"kwok-node-4": 1, "kwok-node-5": 2}


def test_unsynced_snapshot_refuses_until_marked_synced_regression_5276() -> None:
    snap = snapshot(synced=False)
    result = snap.place([podset(count=1, annotations=required(RACK))])
    assert isinstance(result, NoFit)
    assert result.reason == NOT_SYNCED_REASON
    snap.mark_synced()
    assert snap.place([podset(count=1, annotations=required(RACK))])


def test_result_does_not_depend_on_node_order() -> None:
    ordered = nodes()
    shuffled = list(ordered)
    random.Random(7).shuffle(shuffled)
    request = [podset(count=7, cpu="3", annotations=preferred(RACK))]
    a = TopologySnapshot.build(topology(), flavor(), ordered).place(request)
    b = TopologySnapshot.build(topology(), flavor(), shuffled).place(request)
    assert a == b


def test_shared_required_example_fits_one_rack(shared_dir: Path) -> None:
    job = yaml.safe_load((shared_dir / "reference/examples/tas/sample-job-required.yaml").read_text())
    podset_obj = {"name": "main", "count": job["spec"]["parallelism"], "template": job["spec"]["template"]}
    placed = counts(snapshot().place([PodSetRequest.from_podset(podset_obj)]))
    assert sum(placed.values()) == job["spec"]["parallelism"]
    assert len({rack_of(h) for h in placed}) == 1


def test_all_levels_view_spells_out_block_and_rack() -> None:
    snap = snapshot()
    result = snap.place([podset(count=2, cpu="8", annotations=required(RACK))])
    assert isinstance(result, Placed)
    view = snap.with_all_levels(result.assignments["main"]).to_simple()
    assert view["levels"] == [BLOCK, RACK, HOST]
    assert view["domains"] == [
        {"values": ["b0", "r0", "kwok-node-0"], "count": 1},
        {"values": ["b0", "r0", "kwok-node-1"], "count": 1},
    ]


def test_least_free_capacity_walks_past_full_domains_regression_5804() -> None:
    # Nodes 0-5 are full; ascending order puts them first, yet the walk must go on.
    pods = [pod(f"f{i}", f"kwok-node-{i}", cpu="8") for i in range(6)]
    placed = counts(snapshot(pods=pods).place([podset(count=4, cpu="4", annotations=UNCONSTRAINED)]))
    assert placed == {"kwok-node-6": 2, "kwok-node-7": 2}


def test_least_free_capacity_ties_follow_level_order_not_hostname_regression_5470() -> None:
    first_in_topology = node(0, labels={BLOCK: "b0", RACK: "r0", HOST: "zz-host"})
    last_in_topology = node(1, labels={BLOCK: "b1", RACK: "r0", HOST: "aa-host"})
    snap = snapshot([last_in_topology, first_in_topology])
    assert counts(snap.place([podset(count=1, cpu="1", annotations=UNCONSTRAINED)])) == {"zz-host": 1}


def test_second_pass_uses_provisioning_node_selector_regression_5052() -> None:
    provisioned = [node(i, labels={"provisioned": "yes"} if i == 7 else None) for i in range(8)]
    wl = {"spec": {"podSets": [podset_dict(count=2, cpu="4", annotations=UNCONSTRAINED)]}}
    updates = {"main": {"nodeSelector": {"provisioned": "yes"}}}
    placed = counts(snapshot(provisioned).place(podset_requests(wl, podset_updates=updates)))
    assert placed == {"kwok-node-7": 2}


def test_persisted_topology_request_field_matches_annotations() -> None:
    raw = podset_dict(count=4, cpu="4")
    raw["topologyRequest"] = {
        "required": BLOCK,
        "podSetSliceRequiredTopology": RACK,
        "podSetSliceSize": 2,
        "podSetGroupName": "g",
    }
    from_field = PodSetRequest.from_podset(raw)
    annotated = podset(
        count=4,
        cpu="4",
        annotations={**slice_annotations(RACK, 2, required(BLOCK)), keys.PODSET_GROUP_NAME: "g"},
    )
    assert from_field.topology == annotated.topology
    assert snapshot().place([from_field]) == snapshot().place([annotated])
