"""The node copy behind nodeCacheCapable: re-listed when stale or when a name is new."""

from __future__ import annotations

from pykueue.extender.node_cache import NodeCache

from .memory_cluster import MemoryCluster
from .scenario import N11, build_cluster, node


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_new_node_is_picked_up_by_an_early_relist() -> None:
    cluster, clock = build_cluster(), Clock()
    cache = NodeCache(cluster, max_age_s=30, min_relist_interval_s=1, clock=clock)
    assert N11 in await cache.lookup([N11])
    cluster.add_node(node("block-3-rack-1-node-1"))
    clock.now += 0.5  # within the rate limit: an unknown name does not re-list yet
    assert "block-3-rack-1-node-1" not in await cache.lookup(["block-3-rack-1-node-1"])
    clock.now += 1
    assert "block-3-rack-1-node-1" in await cache.lookup(["block-3-rack-1-node-1"])
    assert cluster.calls.count("list_nodes") == 2


async def test_known_names_do_not_relist_until_stale() -> None:
    cluster, clock = build_cluster(), Clock()
    cache = NodeCache(cluster, max_age_s=30, clock=clock)
    for _ in range(5):
        await cache.lookup([N11])
        clock.now += 5
    assert cluster.calls.count("list_nodes") == 1
    clock.now += 30
    await cache.lookup([N11])
    assert cluster.calls.count("list_nodes") == 2


async def test_leaves_follow_label_changes_seen_in_requests() -> None:
    cluster: MemoryCluster = build_cluster()
    cache = NodeCache(cluster)
    await cache.lookup([N11])
    levels = ("cloud.provider.com/topology-block",)
    assert cache.leaves(levels)[N11] == ("block-1",)
    moved = node(N11)
    moved["metadata"]["labels"]["cloud.provider.com/topology-block"] = "block-9"
    cache.remember([moved])
    assert cache.leaves(levels)[N11] == ("block-9",)
