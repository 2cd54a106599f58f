"""topologyAssignment wire forms: v1beta2 compaction, decoding any valid layout, flat views."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykueue.manager.core.tas import AssignmentError, DomainAssignment, TopologyAssignment
from pykueue.manager.core.tas.assignment import encode_v1beta2

from .fixtures import BLOCK, HOST, RACK


def ta(levels: tuple[str, ...], *domains: tuple[tuple[str, ...], int]) -> TopologyAssignment:
    return TopologyAssignment(levels, tuple(DomainAssignment(v, c) for v, c in domains))


def test_single_slice_extracts_prefix_and_universal_count() -> None:
    enc = ta((HOST,), (("kwok-node-0",), 2), (("kwok-node-1",), 2)).to_v1beta2()
    assert enc == {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"prefix": "kwok-node-", "roots": ["0", "1"]}}],
                "podCounts": {"universal": 2},
            }
        ],
    }


def test_identical_values_become_universal_and_counts_individual() -> None:
    enc = ta((BLOCK, RACK), (("block-1", "rack-1"), 4), (("block-1", "rack-2"), 2)).to_v1beta2()
    (piece,) = enc["slices"]
    assert piece["valuesPerLevel"][0] == {"universal": "block-1"}
    assert piece["valuesPerLevel"][1] == {"individual": {"prefix": "rack-", "roots": ["1", "2"]}}
    assert piece["podCounts"] == {"individual": [4, 2]}


def test_suffix_does_not_overlap_prefix() -> None:
    enc = ta((HOST,), (("a-x",), 1), (("a-xx",), 1)).to_v1beta2()
    column = enc["slices"][0]["valuesPerLevel"][0]["individual"]
    roots = column["roots"]
    rebuilt = [column.get("prefix", "") + r + column.get("suffix", "") for r in roots]
    assert rebuilt == ["a-x", "a-xx"]


def test_decodes_crd_example_with_universal_and_prefix() -> None:
    raw = {
        "levels": [BLOCK, RACK],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"universal": "block-1"},
                    {"individual": {"prefix": "rack-", "roots": ["1", "2"]}},
                ],
                "podCounts": {"individual": [4, 2]},
            }
        ],
    }
    decoded = TopologyAssignment.from_v1beta2(raw)
    assert decoded.to_simple() == {
        "levels": [BLOCK, RACK],
        "domains": [
            {"values": ["block-1", "rack-1"], "count": 4},
            {"values": ["block-1", "rack-2"], "count": 2},
        ],
    }


def test_decodes_multiple_slices_in_order() -> None:
    raw = {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"prefix": "block-1-rack-1-node-", "roots": ["1", "2"]}}],
                "podCounts": {"universal": 1},
            },
            {
                "domainCount": 1,
                "valuesPerLevel": [
                    {"individual": {"prefix": "block-1-rack-2-", "suffix": "-x", "roots": ["node"]}}
                ],
                "podCounts": {"individual": [3]},
            },
        ],
    }
    assert TopologyAssignment.from_v1beta2(raw).leaf_values() == [
        ("block-1-rack-1-node-1", 1),
        ("block-1-rack-1-node-2", 1),
        ("block-1-rack-2-node-x", 3),
    ]


@pytest.mark.parametrize(
    "piece",
    [
        {
            "domainCount": 2,
            "valuesPerLevel": [{"individual": {"roots": ["a"]}}],
            "podCounts": {"universal": 1},
        },
        {"domainCount": 1, "valuesPerLevel": [{"universal": "a"}], "podCounts": {"individual": [1, 2]}},
        {
            "domainCount": 1,
            "valuesPerLevel": [{"universal": "a", "individual": {"roots": ["a"]}}],
            "podCounts": {"universal": 1},
        },
        {"domainCount": 1, "valuesPerLevel": [], "podCounts": {"universal": 1}},
    ],
)
def test_invalid_layouts_are_rejected(piece: dict[str, object]) -> None:
    with pytest.raises(AssignmentError):
        TopologyAssignment.from_v1beta2({"levels": [HOST], "slices": [piece]})


def test_hostname_prefix_slicing_is_used_when_smaller() -> None:
    domains = [((f"pool-{p}-node-{i:04d}",), 1) for p in ("alpha", "beta") for i in range(300)]
    assignment = ta((HOST,), *domains)
    enc = assignment.to_v1beta2()
    assert len(enc["slices"]) == 2
    assert enc["slices"][0]["valuesPerLevel"][0]["individual"]["prefix"].startswith("pool-alpha-node-")
    assert enc["slices"][1]["valuesPerLevel"][0]["individual"]["prefix"].startswith("pool-beta-node-")
    assert TopologyAssignment.from_v1beta2(enc) == assignment
    single = json.dumps({"levels": [HOST], "slices": [enc["slices"][0]]})
    assert len(json.dumps(enc)) < 2 * len(single)


def test_from_any_reads_v1beta1_flat_form() -> None:
    flat = {"levels": [BLOCK, RACK], "domains": [{"values": ["b0", "r1"], "count": 3}]}
    assert TopologyAssignment.from_any(flat) == ta((BLOCK, RACK), (("b0", "r1"), 3))


host_names = st.lists(
    st.from_regex(r"[a-z]{1,3}(-[a-z0-9]{1,3}){0,3}", fullmatch=True), min_size=1, max_size=40, unique=True
)


@given(host_names, st.data())
def test_v1beta2_roundtrip(hosts: list[str], data: st.DataObject) -> None:
    pod_counts = data.draw(st.lists(st.integers(1, 5), min_size=len(hosts), max_size=len(hosts)))
    assignment = ta((HOST,), *(((h,), c) for h, c in zip(hosts, pod_counts, strict=True)))
    assert TopologyAssignment.from_v1beta2(assignment.to_v1beta2()) == assignment


@given(
    st.lists(
        st.tuples(st.sampled_from(["b0", "b1", "block-10"]), st.text("ab-", min_size=1, max_size=4)),
        min_size=1,
        max_size=10,
    )
)
def test_v1beta2_roundtrip_multi_level(values: list[tuple[str, str]]) -> None:
    assignment = ta((BLOCK, RACK), *((v, 1) for v in values))
    assert TopologyAssignment.from_v1beta2(assignment.to_v1beta2()) == assignment


def test_each_caller_gets_an_encoding_of_its_own() -> None:
    """The encoding is computed once per assignment, but conversion rewrites a status in
    place: a caller changing its copy must not change what the next caller gets."""
    assignment = TopologyAssignment(
        (HOST,), tuple(DomainAssignment((f"node-{i}",), 2) for i in range(4)))
    first = assignment.to_v1beta2()
    expected = encode_v1beta2(assignment)
    assert first == expected
    first["slices"][0]["podCounts"]["universal"] = 99
    first["slices"].append({})
    first.pop("levels")
    assert assignment.to_v1beta2() == expected
