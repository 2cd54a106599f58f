"""The dashboard's pages, read from a core that ran a small world (see ``fixture``)."""

from __future__ import annotations

import json

import pytest

from pykueue.manager.runtime.dashboard import view
from pykueue.manager.scenario.explain import explain_record

from .fixture import workload, world


def test_the_cohort_tree_shows_usage_against_quota_with_limits_and_borrowing() -> None:
    core = world().core
    index = view.build_index(core)
    rows = view.cohort_tree_page(core, index)["items"]
    assert [(r["kind"], r["name"], r["depth"]) for r in rows] == [
        ("Cohort", "all", 0), ("ClusterQueue", "team-a", 1), ("ClusterQueue", "team-b", 1)]
    team_a = rows[1]
    assert team_a["resources"] == [{"flavor": "tas", "resource": "cpu", "nominal": "4", "used": "5",
                                    "borrowed": "1", "usedPercent": 125, "borrowingLimit": "2",
                                    "lendingLimit": "1"}]
    assert (team_a["pending"], team_a["admitted"], team_a["active"]) == (2, 1, True)
    assert rows[2]["resources"][0]["used"] == "1" and "borrowingLimit" not in rows[2]["resources"][0]


def test_pending_workloads_come_in_queue_order_with_positions_and_tier() -> None:
    core = world().core
    index = view.build_index(core)
    items = view.workloads_page(index, view.PENDING_STATE)["items"]
    assert [(w["key"], w["positionInClusterQueue"], w["positionInLocalQueue"]) for w in items] == [
        ("ns-a/urgent", 1, 1), ("ns-a/later", 2, 2)]
    assert {w["tier"] for w in items} == {"WaitingForQuota"}
    assert items[0]["message"] == core.workload("ns-a/urgent").reason
    # The order is the visibility API's and the core's own.
    assert core.queue_position("ns-a/later") == (2, 2)


def test_admitted_workloads_newest_first_with_flavors_and_filters() -> None:
    sim = world()
    index = view.build_index(sim.core)
    admitted = view.workloads_page(index, view.ADMITTED_STATE)
    assert [w["key"] for w in admitted["items"]] == ["ns-b/small", "ns-a/big"]
    assert admitted["items"][1]["flavors"] == {"main": {"cpu": "tas"}}
    only_b = view.workloads_page(index, view.ADMITTED_STATE, namespace="ns-b")
    assert [w["key"] for w in only_b["items"]] == ["ns-b/small"]
    by_cq = view.workloads_page(index, view.PENDING_STATE, cluster_queue="team-b")
    assert by_cq["total"] == 0
    with pytest.raises(ValueError):
        view.workloads_page(index, "finished")


def test_lists_are_paged() -> None:
    sim = world()
    for i in range(5):
        sim.apply(workload("ns-b", f"w{i}", 2))
    sim.run()
    index = view.build_index(sim.core)
    first = view.workloads_page(index, view.PENDING_STATE, 0, size=3)
    last = view.workloads_page(index, view.PENDING_STATE, 99, size=3)
    assert (first["total"], first["pages"], len(first["items"])) == (7, 3, 3)
    assert (last["page"], len(last["items"])) == (2, 1)
    assert view.page_bounds(0, 0) == (0, 0, 0)


def test_local_queues_carry_their_counts() -> None:
    core = world().core
    rows = view.local_queues_page(core, view.build_index(core))["items"]
    assert [(r["namespace"], r["clusterQueue"], r["pending"], r["admitted"]) for r in rows] == [
        ("ns-a", "team-a", 2, 1), ("ns-b", "team-b", 0, 1)]
    assert view.local_queues_page(core, view.build_index(core), namespace="ns-b")["total"] == 1


def test_a_workload_page_has_its_admission_topology_and_explanation() -> None:
    core = world().core
    index = view.build_index(core)
    big = view.workload_detail(core, index, "ns-a/big")
    assert big is not None and big["admission"] is not None
    topology = big["admission"]["podSets"][0]["topologyAssignment"]
    assert topology["levels"] == ["block", "rack", "kubernetes.io/hostname"]
    assert sum(d["count"] for d in topology["domains"]) == 5
    later = view.workload_detail(core, index, "ns-a/later", explain_record)
    assert later is not None and later["tier"] == "WaitingForQuota"
    assert later["explanation"]["podSets"]["main"]["flavors"]["tas"]["cpu"]["needed"] == "2"
    assert view.workload_detail(core, index, "ns-a/none") is None


def test_an_explainer_that_fails_leaves_the_typed_reason() -> None:
    core = world().core

    def broken(_core: object, _key: str) -> dict[str, object]:
        raise RuntimeError("boom")

    detail = view.workload_detail(core, view.build_index(core), "ns-a/later", broken)
    assert detail is not None and detail["explanationError"] == "RuntimeError: boom"
    assert detail["tier"] == "WaitingForQuota"


def test_the_topology_page_sums_usage_and_workloads_up_the_tree() -> None:
    core = world().core
    (tas,) = view.topology_view(core)["flavors"]
    assert tas["levels"] == ["block", "rack", "kubernetes.io/hostname"] and tas["nodes"] == 4
    (block,) = tas["domains"]
    assert block["used"] == {"cpu": "6", "pods": "6"}
    racks = {r["value"]: r for r in block["children"]}
    assert racks["r0"]["usedPercent"] == 75 and racks["r1"]["workloads"] == []
    nodes = {n["value"]: n for n in racks["r0"]["children"]}
    assert nodes["node-0"]["workloads"] == [{"workload": "ns-a/big", "pods": 4}]


def test_pages_are_json_and_deterministic() -> None:
    def render() -> str:
        core = world().core
        index = view.build_index(core)
        return json.dumps([view.overview(core, index), view.cohort_tree_page(core, index),
                           view.workloads_page(index, view.PENDING_STATE), view.topology_view(core),
                           view.workload_detail(core, index, "ns-a/later", explain_record)], sort_keys=True)

    assert render() == render()


def test_the_fingerprint_changes_with_the_core_and_only_then() -> None:
    sim = world()
    before = view.fingerprint(sim.core)
    assert view.fingerprint(sim.core) == before
    sim.core.finish("ns-a/big")
    sim.run()
    after = view.fingerprint(sim.core)
    assert after != before
    summary = view.change_summary(sim.core, view.build_index(sim.core), 7)
    assert summary["revision"] == 7 and summary["totals"]["finished"] == 1


def test_the_tree_is_kept_across_revisions_until_the_queues_change() -> None:
    sim = world()
    first = view.build_index(sim.core)
    sim.apply(workload("ns-b", "more", 1))
    sim.run()
    second = view.build_index(sim.core, first)
    assert second.tree is first.tree
    sim.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "team-c"},
               "spec": {"cohortName": "all", "namespaceSelector": {}, "resourceGroups": []}})
    third = view.build_index(sim.core, second)
    assert third.tree is not second.tree
    assert [n.name for _, n in third.tree] == ["all", "team-a", "team-b", "team-c"]


def test_a_follower_shows_the_reason_the_leader_stored() -> None:
    sim = world()
    rec = sim.core.workload("ns-a/later")
    stored = {"type": "QuotaReserved", "status": "False", "reason": "WaitingForQuota",
              "message": "as the leader wrote it"}
    rec.wl.source["status"] = {"conditions": [stored]}
    def later(index: view.DashboardIndex) -> dict[str, object]:
        items = view.workloads_page(index, view.PENDING_STATE)["items"]
        return next(w for w in items if w["key"] == "ns-a/later")

    row = later(view.build_index(sim.core, follower=True))
    assert (row["tier"], row["message"]) == ("WaitingForQuota", "as the leader wrote it")
    assert later(view.build_index(sim.core))["message"] == rec.reason
