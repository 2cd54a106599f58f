"""Pending workloads of one ClusterQueue: an ordered heap plus the inadmissible set.

Order is Kueue's: a preemptor waiting for its victims first (so the quota they free is
not taken by the workload it displaced), then, with admission fair sharing, lower
LocalQueue usage, then higher priority, then earlier queue-order timestamp, then the
workload key (so ties are deterministic). The heap uses lazy deletion: removing a
workload only forgets its ticket, and stale heap items are dropped when popped. That
keeps push, remove and pop O(log n) with no scans, which matters with tens of
thousands of pending workloads. Stale items behind the head are never popped while
the queue stays busy (every park and requeue leaves one per workload), so the heap is
rebuilt from the live tickets once stale items outnumber live ones: amortised O(1) per
push, and memory bounded by twice the queue.

Workloads that did not fit are *parked* in the inadmissible set (BestEffortFIFO) until
an event that may change the outcome moves them back (:meth:`PendingQueue.requeue_parked`).

Equivalence (Kueue's SchedulingEquivalenceHashing): workloads of one *shape* (priority
and pod sets, see :func:`scheduling_shape`) get the same verdict on the same quota, so
once one of them did not fit (:meth:`PendingQueue.park_shape`) the queued ones of that
shape are parked with it, and new ones of that shape go straight to the parked set
(:meth:`PendingQueue.offer`), until the next requeue.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from .objects import PodSet

SortKey = tuple[int, float, int, float, str]

COMPACT_SLACK = 64  # stale heap items tolerated before a rebuild pays for itself


def scheduling_shape(priority: int, podsets: tuple[PodSet, ...]) -> int:
    """What makes two pending workloads of one queue equivalent for flavor assignment."""
    return hash((priority, tuple(
        (ps.name, ps.count, ps.min_count, tuple(sorted(ps.requests.items())),
         tuple(sorted(ps.node_selector.items())), repr(ps.affinity_terms), repr(ps.tolerations),
         repr(ps.topology_request))
        for ps in podsets)))


def sort_key(priority: int, timestamp: float, key: str, sticky: bool = False,
             lq_usage: float = 0.0) -> SortKey:
    return (0 if sticky else 1, lq_usage, -priority, timestamp, key)


class PendingQueue:
    __slots__ = ("_heap", "_no_fit", "_tickets", "parked")

    _counter = itertools.count()

    def __init__(self) -> None:
        self._heap: list[tuple[SortKey, int, str]] = []
        # key -> (ticket of its live heap item, sort key, shape)
        self._tickets: dict[str, tuple[int, SortKey, int | None]] = {}
        self.parked: dict[str, tuple[SortKey, int | None]] = {}  # key -> (sort key, shape)
        self._no_fit: set[int] = set()  # shapes that did not fit since the last requeue

    def __len__(self) -> int:
        return len(self._tickets) + len(self.parked)

    @property
    def heap_size(self) -> int:
        """Heap items, stale ones included (bounded by about twice the queued workloads)."""
        return len(self._heap)

    def __contains__(self, key: str) -> bool:
        return key in self._tickets or key in self.parked

    @property
    def active_count(self) -> int:
        return len(self._tickets)

    @property
    def no_fit_shapes(self) -> int:
        return len(self._no_fit)

    def push(self, key: str, skey: SortKey, shape: int | None = None) -> None:
        self.parked.pop(key, None)
        live = self._tickets.get(key)
        if live is not None and live[1] == skey and live[2] == shape:
            return  # already queued in place: another item would only be skipped when popped
        ticket = next(self._counter)
        self._tickets[key] = (ticket, skey, shape)
        heapq.heappush(self._heap, (skey, ticket, key))
        if len(self._heap) > 2 * len(self._tickets) + COMPACT_SLACK:
            self._compact()

    def _compact(self) -> None:
        self._heap = [(skey, t, k) for k, (t, skey, _) in self._tickets.items()]
        heapq.heapify(self._heap)

    def offer(self, key: str, skey: SortKey, shape: int | None) -> None:
        """Queue a workload, parked if its shape already did not fit (BestEffortFIFO)."""
        if shape is not None and shape in self._no_fit and key not in self._tickets:
            self.park(key, skey, shape)
        else:
            self.push(key, skey, shape)

    def shape_failed(self, shape: int | None) -> bool:
        """An equivalent workload did not fit since the last requeue (``offer`` parks it)."""
        return shape is not None and shape in self._no_fit

    def park_shape(self, shape: int) -> int:
        """One workload of ``shape`` did not fit: park every queued one of that shape."""
        self._no_fit.add(shape)
        same = [(k, skey) for k, (_, skey, sh) in self._tickets.items() if sh == shape]
        for key, skey in same:
            self.park(key, skey, shape)
        return len(same)

    def park(self, key: str, skey: SortKey, shape: int | None = None) -> None:
        self._tickets.pop(key, None)
        self.parked[key] = (skey, shape)

    def remove(self, key: str) -> None:
        self._tickets.pop(key, None)
        self.parked.pop(key, None)

    def pop(self) -> str | None:
        heap, tickets = self._heap, self._tickets
        while heap:
            _, ticket, key = heapq.heappop(heap)
            live = tickets.get(key)
            if live is not None and live[0] == ticket:
                del tickets[key]
                return key
        return None

    def peek(self) -> str | None:
        """The key ``pop`` would return, left queued."""
        heap, tickets = self._heap, self._tickets
        while heap:
            _, ticket, key = heap[0]
            live = tickets.get(key)
            if live is not None and live[0] == ticket:
                return key
            heapq.heappop(heap)  # stale, as pop would skip it
        return None

    def requeue_parked(self) -> int:
        self._no_fit.clear()
        moved = self.parked
        self.parked = {}
        for key, (skey, shape) in moved.items():
            self.push(key, skey, shape)
        return len(moved)

    def resort(self, key_of: Callable[[str], SortKey]) -> None:
        """Recompute every sort key (LocalQueue usage changed); O(n log n)."""
        self._tickets = {k: (t, key_of(k), sh) for k, (t, _, sh) in self._tickets.items()}
        self._compact()
        self.parked = {k: (key_of(k), sh) for k, (_, sh) in self.parked.items()}

    def keys(self) -> list[str]:
        return list(self._tickets) + list(self.parked)
