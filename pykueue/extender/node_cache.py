"""Nodes by name, for ``nodeCacheCapable: true`` where the scheduler sends names only.

Topology labels of a node practically never change, so a periodically re-listed copy is
enough to map names to leaves; a name the cache has never seen triggers an early re-list
(rate-limited, so a flood of unknown names cannot turn into a flood of list calls). Bind
decisions that depend on node health re-read through the port instead of trusting this.
The clock is injected so tests decide when the copy is stale.

With ``freeze_gc`` the freshly listed nodes are moved out of the cyclic garbage collector's
reach (``gc.freeze``): thousands of long-lived node dicts otherwise make every full
collection walk them, which showed up as 20-30 ms stalls in the filter p99.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.extender.domains import Leaf, leaf_of, node_labels
from pykueue.extender.port import ClusterPort


class NodeCache:
    def __init__(
        self,
        port: ClusterPort,
        *,
        max_age_s: float = 30.0,
        min_relist_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        freeze_gc: bool = False,
    ) -> None:
        self._freeze_gc = freeze_gc
        self._port = port
        self._max_age = max_age_s
        self._min_interval = min_relist_interval_s
        self._clock = clock
        self._nodes: dict[str, JSON] = {}
        # name -> leaf per tuple of levels; filter asks for thousands of nodes per call.
        self._leaves: dict[tuple[str, ...], dict[str, Leaf | None]] = {}
        self._listed_at: float | None = None
        self._lock = asyncio.Lock()

    async def refresh(self) -> None:
        async with self._lock:
            nodes = await self._port.list_nodes()
            self._nodes = {str(n["metadata"]["name"]): n for n in nodes}
            self._leaves = {}
            self._listed_at = self._clock()
            if self._freeze_gc:
                self.leaves((keys.HOSTNAME_LABEL,))  # the common index, built before freezing
                gc.freeze()

    def remember(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        """Full Node objects from a request are the freshest copy we can get."""
        for node in nodes:
            name = str(node["metadata"]["name"])
            self._nodes[name] = dict(node)
            # Updated in place, never dropped: a request in flight may hold these maps.
            for levels, memo in self._leaves.items():
                memo[name] = leaf_of(node_labels(node), levels)

    async def lookup(self, names: Iterable[str]) -> Mapping[str, JSON]:
        """Every known node (a read-only view), re-listed first when stale or missing ``names``."""
        now = self._clock()
        stale = self._listed_at is None or now - self._listed_at > self._max_age
        may_relist = self._listed_at is None or now - self._listed_at >= self._min_interval
        if stale or (may_relist and any(n not in self._nodes for n in names)):
            await self.refresh()
        return self._nodes

    def leaves(self, levels: tuple[str, ...]) -> Mapping[str, Leaf | None]:
        """Leaf of every known node for these levels (a read-only view, built once per list)."""
        memo = self._leaves.setdefault(levels, {})
        if len(memo) != len(self._nodes):
            for name, node in self._nodes.items():
                if name not in memo:
                    memo[name] = leaf_of(node_labels(node), levels)
        return memo
