"""Pending workloads of one ClusterQueue: an ordered heap plus the inadmissible set.

Order is Kueue's: a preemptor waiting for its victims first (so the quota they free is
not taken by the workload it displaced), then, with admission fair sharing, lower
LocalQueue usage, then higher priority, then earlier queue-order timestamp, then the
workload key (so ties are deterministic). The heap uses lazy deletion: removing a
workload only forgets its ticket, and stale heap items are dropped when popped. That
keeps push, remove and pop O(log n) with no scans, which matters with tens of
thousands of pending workloads.

Workloads that did not fit are *parked* in the inadmissible set (BestEffortFIFO) until
an event that may change the outcome moves them back (:meth:`PendingQueue.requeue_parked`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

SortKey = tuple[int, float, int, float, str]


def sort_key(priority: int, timestamp: float, key: str, sticky: bool = False,
             lq_usage: float = 0.0) -> SortKey:
    return (0 if sticky else 1, lq_usage, -priority, timestamp, key)


class PendingQueue:
    __slots__ = ("_heap", "_tickets", "parked")

    _counter = itertools.count()

    def __init__(self) -> None:
        self._heap: list[tuple[SortKey, int, str]] = []
        self._tickets: dict[str, int] = {}
        self.parked: dict[str, SortKey] = {}

    def __len__(self) -> int:
        return len(self._tickets) + len(self.parked)

    def __contains__(self, key: str) -> bool:
        return key in self._tickets or key in self.parked

    @property
    def active_count(self) -> int:
        return len(self._tickets)

    def push(self, key: str, skey: SortKey) -> None:
        self.parked.pop(key, None)
        ticket = next(self._counter)
        self._tickets[key] = ticket
        heapq.heappush(self._heap, (skey, ticket, key))

    def park(self, key: str, skey: SortKey) -> None:
        self._tickets.pop(key, None)
        self.parked[key] = skey

    def remove(self, key: str) -> None:
        self._tickets.pop(key, None)
        self.parked.pop(key, None)

    def pop(self) -> str | None:
        heap, tickets = self._heap, self._tickets
        while heap:
            _, ticket, key = heapq.heappop(heap)
            if tickets.get(key) == ticket:
                del tickets[key]
                return key
        return None

    def requeue_parked(self) -> int:
        moved = self.parked
        self.parked = {}
        for key, skey in moved.items():
            self.push(key, skey)
        return len(moved)

    def resort(self, key_of: Callable[[str], SortKey]) -> None:
        """Recompute every sort key (LocalQueue usage changed); O(n log n)."""
        self._heap = [(key_of(k), t, k) for k, t in self._tickets.items()]
        heapq.heapify(self._heap)
        self.parked = {k: key_of(k) for k in self.parked}

    def keys(self) -> list[str]:
        return list(self._tickets) + list(self.parked)
