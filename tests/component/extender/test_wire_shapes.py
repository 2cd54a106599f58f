"""Recorded ExtenderArgs in both nodeCacheCapable modes get replies of the matching form."""

from __future__ import annotations

from .conftest import Extender
from .scenario import B2, N11, N12, N21, N22, load

FILTER_RESULT_KEYS = {"NodeNames", "Nodes", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


async def test_node_names_mode_answers_with_node_names(extender: Extender) -> None:
    status, body = await extender.post("filter", load("args_node_names.json"))
    assert status == 200
    assert set(body) == FILTER_RESULT_KEYS
    assert body["Nodes"] is None
    assert body["NodeNames"] == [N11, N12, N21]
    assert set(body["FailedAndUnresolvableNodes"]) == {N22, B2}
    assert body["FailedNodes"] == {}
    assert body["Error"] == ""


async def test_full_nodes_mode_answers_with_the_node_objects(extender: Extender) -> None:
    args = load("args_nodes.json")
    status, body = await extender.post("filter", args)
    assert status == 200
    assert set(body) == FILTER_RESULT_KEYS
    assert body["NodeNames"] is None
    assert body["Nodes"]["items"] == [args["Nodes"]["items"][0]]  # returned untouched
    assert set(body["FailedAndUnresolvableNodes"]) == {N22, B2}


async def test_no_candidates_is_a_valid_request(extender: Extender) -> None:
    args = load("args_node_names.json")
    args["NodeNames"] = None
    status, body = await extender.post("filter", args)
    assert status == 200
    assert body["NodeNames"] == []


async def test_prioritize_answers_a_host_priority_list_in_both_modes(extender: Extender) -> None:
    for fixture in ("args_node_names.json", "args_nodes.json"):
        args = load(fixture)
        status, body = await extender.post("prioritize", args)
        assert status == 200
        expected_hosts = args["NodeNames"] or [n["metadata"]["name"] for n in args["Nodes"]["items"]]
        assert [entry["Host"] for entry in body] == expected_hosts
        assert all(set(entry) == {"Host", "Score"} and 0 <= entry["Score"] <= 10 for entry in body)


async def test_keys_are_read_case_insensitively_like_go(extender: Extender) -> None:
    args = load("args_node_names.json")
    lowered = {"pod": args["Pod"], "nodenames": args["NodeNames"]}
    status, body = await extender.post("filter", lowered)
    assert status == 200
    assert body["NodeNames"] == [N11, N12, N21]
