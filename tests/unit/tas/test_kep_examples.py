"""The KEP's slice examples: hosts with room for 6, 5, 4, 3 and 2 pods, slices of 2 per host."""

from __future__ import annotations

from pykueue.api import keys
from pykueue.manager.core.tas import TopologySnapshot

from .fixtures import BLOCK, HOST, RACK, counts, node, podset, required, snapshot

ROOM = {0: 6, 1: 5, 2: 4, 3: 3, 4: 2}


def kep_snapshot() -> TopologySnapshot:
    same_rack = {BLOCK: "b0", RACK: "r0"}
    return snapshot([node(i, cpu="64", pods=str(room), labels=same_rack) for i, room in ROOM.items()])


def slices_of_two(main: dict[str, str] | None = None) -> dict[str, str]:
    return {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: HOST, keys.PODSET_SLICE_SIZE: "2", **(main or {})}


def test_best_fit_twelve_pods() -> None:
    placed = counts(
        kep_snapshot().place([podset(count=12, cpu="1", annotations=slices_of_two(required(RACK)))])
    )
    assert placed == {"kwok-node-0": 6, "kwok-node-2": 4, "kwok-node-4": 2}


def test_least_free_capacity_ten_pods() -> None:
    placed = counts(kep_snapshot().place([podset(count=10, cpu="1", annotations=slices_of_two())]))
    assert placed == {"kwok-node-1": 2, "kwok-node-2": 4, "kwok-node-3": 2, "kwok-node-4": 2}
