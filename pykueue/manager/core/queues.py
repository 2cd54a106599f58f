"""Pending workloads of one ClusterQueue: an ordered heap plus the inadmissible set.

Order is Kueue's: a preemptor waiting for its victims first (so the quota they free is
not taken by the workload it displaced), then, with admission fair sharing, lower
LocalQueue usage, then higher priority, then earlier queue-order timestamp, then the
workload key (so ties are deterministic). The heap uses lazy deletion: removing a
workload only forgets its ticket, and stale heap items are dropped when popped. That
keeps push, remove and pop O(log n) with no scans, which matters with tens of
thousands of pending workloads. Stale items behind a busy head would never be popped,
so the heap is rebuilt from the live tickets once they outnumber live ones.

Workloads that did not fit are *parked* in the inadmissible set (BestEffortFIFO) until
an event that may change the outcome moves them back (:meth:`PendingQueue.requeue_parked`).

Equivalence (Kueue's SchedulingEquivalenceHashing): workloads of one *shape* (priority
and pod sets, see :func:`scheduling_shape`) get the same verdict on the same quota, so
once one of them did not fit (:meth:`PendingQueue.park_shape`) the queued ones of that
shape are parked with it, and new ones of that shape go straight to the parked set
(:meth:`PendingQueue.offer`), until the next requeue.

Parked workloads are kept in one *group* per shape, itself a heap. A requeue puts each
group back as one heap item standing for its head, and when the group's head fails
again the whole group is parked again. A backlog of thousands of equivalent workloads
that stays inadmissible across many requeues (every finished workload in the cohort
requeues) therefore costs O(log n) per requeue and verdict, not a move of every
workload there and back. A requeue may also leave a group parked whose head its caller
knows still cannot fit (after freed quota: see ``PendingQueues._requeue_subtree``).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

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


def priority_of(skey: SortKey) -> int:
    """The priority a :func:`sort_key` was made with."""
    return -skey[2]


class _Group:
    """Parked workloads of one shape, or such a set put back by a requeue (``parked`` False:
    then one heap item of the queue stands for its head)."""

    __slots__ = ("alive", "gid", "items", "parked", "shape", "ticket")

    def __init__(self, gid: int, shape: int | None) -> None:
        self.gid = gid
        self.shape = shape
        self.items: list[tuple[SortKey, str]] = []  # a heap; members that left stay until skipped
        self.alive = 0
        self.parked = True
        self.ticket = -1  # of the queue's heap item standing for it while released


class PendingQueueView(Protocol):
    """A :class:`PendingQueue` as readers outside the core see it: read only."""

    def __len__(self) -> int: ...

    def __contains__(self, key: str) -> bool: ...

    @property
    def active_count(self) -> int: ...

    @property
    def parked_count(self) -> int: ...

    @property
    def parked_groups(self) -> int: ...

    @property
    def no_fit_shapes(self) -> int: ...

    def is_parked(self, key: str) -> bool: ...

    def parked_keys(self) -> list[str]: ...


class PendingQueue:
    __slots__ = ("_group_by_ticket", "_groups", "_heap", "_members", "_no_fit", "_on_ready", "_parked_alive",
                 "_parked_group", "_tickets")

    _counter = itertools.count()

    def __init__(self, on_ready: Callable[[], object] | None = None) -> None:
        # Told when the queue may have gained a workload to pop (a push or a requeue; nothing
        # else adds one), so the core need not ask each of a thousand queues every cycle.
        self._on_ready = on_ready
        # Items are (sort key, ticket, key); a released group's item has the key "" and its
        # ticket in _Group.ticket.
        self._heap: list[tuple[SortKey, int, str]] = []
        # Workloads queued one by one: key -> (ticket of its live heap item, sort key, shape)
        self._tickets: dict[str, tuple[int, SortKey, int | None]] = {}
        # Workloads in a group, parked or released: key -> (group id, sort key, shape)
        self._members: dict[str, tuple[int, SortKey, int | None]] = {}
        self._groups: dict[int, _Group] = {}
        self._parked_group: dict[int | None, _Group] = {}  # shape -> its parked group
        self._group_by_ticket: dict[int, _Group] = {}
        self._parked_alive = 0
        self._no_fit: set[int] = set()  # shapes that did not fit since the last requeue

    def __len__(self) -> int:
        return len(self._tickets) + len(self._members)

    def __contains__(self, key: str) -> bool:
        return key in self._tickets or key in self._members

    @property
    def active_count(self) -> int:
        return len(self) - self._parked_alive

    @property
    def parked_count(self) -> int:
        return self._parked_alive

    def is_parked(self, key: str) -> bool:
        member = self._members.get(key)
        return member is not None and self._groups[member[0]].parked

    def parked_keys(self) -> list[str]:
        return [k for k, (gid, _, _) in self._members.items() if self._groups[gid].parked]

    @property
    def parked_groups(self) -> int:
        """Groups of parked workloads, one per shape: what a requeue evaluates again."""
        return len(self._parked_group)

    @property
    def no_fit_shapes(self) -> int:
        return len(self._no_fit)

    @property
    def heap_size(self) -> int:
        """Heap items, stale ones included (bounded by about twice the queued workloads)."""
        return len(self._heap)

    # -- membership -------------------------------------------------------------------------
    def _leave_group(self, key: str) -> None:
        member = self._members.pop(key, None)
        if member is None:
            return
        group = self._groups[member[0]]
        group.alive -= 1
        if group.parked:
            self._parked_alive -= 1
        if group.alive == 0:
            self._drop_group(group)

    def _drop_group(self, group: _Group) -> None:
        del self._groups[group.gid]
        self._group_by_ticket.pop(group.ticket, None)
        if self._parked_group.get(group.shape) is group:
            del self._parked_group[group.shape]

    def push(self, key: str, skey: SortKey, shape: int | None = None) -> None:
        live = self._tickets.get(key)
        if live is not None and live[1] == skey and live[2] == shape:
            return  # already queued in place: another item would only be skipped when popped
        self._leave_group(key)
        ticket = next(self._counter)
        self._tickets[key] = (ticket, skey, shape)
        heapq.heappush(self._heap, (skey, ticket, key))
        self._maybe_compact()
        if self._on_ready is not None:
            self._on_ready()

    def offer(self, key: str, skey: SortKey, shape: int | None) -> None:
        """Queue a workload, parked if its shape already did not fit (BestEffortFIFO)."""
        queued = key in self._tickets or (key in self._members and not self.is_parked(key))
        if shape is not None and shape in self._no_fit and not queued:
            self.park(key, skey, shape)
        else:
            self.push(key, skey, shape)

    def shape_failed(self, shape: int | None) -> bool:
        """An equivalent workload did not fit since the last requeue (``offer`` parks it)."""
        return shape is not None and shape in self._no_fit

    def park(self, key: str, skey: SortKey, shape: int | None = None) -> None:
        self._tickets.pop(key, None)
        self._leave_group(key)
        group = self._parked_group.get(shape)
        if group is None:
            group = self._new_group(shape)
        heapq.heappush(group.items, (skey, key))
        group.alive += 1
        self._parked_alive += 1
        self._members[key] = (group.gid, skey, shape)
        self._maybe_compact_group(group)

    def _new_group(self, shape: int | None) -> _Group:
        group = _Group(next(self._counter), shape)
        self._groups[group.gid] = group
        self._parked_group[shape] = group
        return group

    def park_shape(self, shape: int) -> int:
        """One workload of ``shape`` did not fit: park every queued one of that shape.
        Returns how many were queued (one by one or in groups put back by a requeue)."""
        self._no_fit.add(shape)
        same = [(k, skey) for k, (_, skey, sh) in self._tickets.items() if sh == shape]
        for key, skey in same:
            self.park(key, skey, shape)
        moved = len(same)
        for group in [g for g in self._groups.values() if not g.parked and g.shape == shape]:
            moved += group.alive
            self._repark(group)
        return moved

    def _repark(self, group: _Group) -> None:
        """A released group goes back whole; if a parked group of its shape has formed
        since, the smaller of the two is merged into the larger."""
        self._group_by_ticket.pop(group.ticket, None)
        group.ticket = -1
        into = self._parked_group.get(group.shape)
        if into is not None and into.alive > group.alive:
            self._merge(group, into)
            return
        if into is not None:
            self._merge(into, group)
        group.parked = True
        self._parked_group[group.shape] = group
        self._parked_alive += group.alive

    def _merge(self, src: _Group, dst: _Group) -> None:
        """Move src's members into dst and forget src."""
        for skey, key in src.items:
            # A member moved already has dst's gid, so a duplicate item is not moved twice.
            if self._holds(src, skey, key):
                self._members[key] = (dst.gid, skey, dst.shape)
                heapq.heappush(dst.items, (skey, key))
                dst.alive += 1
                if dst.parked:
                    self._parked_alive += 1
                if src.parked:
                    self._parked_alive -= 1
        self._drop_group(src)
        self._maybe_compact_group(dst)

    def remove(self, key: str) -> None:
        self._tickets.pop(key, None)
        self._leave_group(key)

    # -- order ------------------------------------------------------------------------------
    def _holds(self, group: _Group, skey: SortKey, key: str) -> bool:
        """A group's item is current: its workload is still in the group with that sort key
        (members that left or were re-keyed leave their old items behind)."""
        member = self._members.get(key)
        return member is not None and member[0] == group.gid and member[1] == skey

    def _group_head(self, group: _Group) -> tuple[SortKey, str] | None:
        """The group's first member still in it, dropping the ones that left."""
        items = group.items
        while items:
            if self._holds(group, *items[0]):
                return items[0]
            heapq.heappop(items)
        return None

    def _head(self, consume: bool) -> str | None:
        heap, tickets = self._heap, self._tickets
        while heap:
            _, ticket, key = heap[0]
            if key:
                live = tickets.get(key)
                if live is not None and live[0] == ticket:
                    if consume:
                        heapq.heappop(heap)
                        del tickets[key]
                    return key
                heapq.heappop(heap)  # stale
                continue
            group = self._group_by_ticket.get(ticket)
            head = None if group is None else self._group_head(group)
            if group is None or head is None:
                heapq.heappop(heap)
                continue
            if head[0] != heap[0][0]:  # its head left: stand for the next one
                heapq.heapreplace(heap, (head[0], ticket, ""))
                continue
            if consume:
                heapq.heappop(group.items)
                self._leave_group(head[1])
                heapq.heappop(heap)
                if group.gid in self._groups:
                    self._release_item(group)
            return head[1]
        return None

    def pop(self) -> str | None:
        return self._head(consume=True)

    def peek(self) -> str | None:
        """The key ``pop`` would return, left queued."""
        return self._head(consume=False)

    def _release_item(self, group: _Group) -> None:
        """Put (back) the heap item standing for a released group's head."""
        self._group_by_ticket.pop(group.ticket, None)
        head = self._group_head(group)
        if head is None:
            return
        group.ticket = next(self._counter)
        self._group_by_ticket[group.ticket] = group
        heapq.heappush(self._heap, (head[0], group.ticket, ""))

    def requeue_parked(self, keep: Callable[[str], bool] | None = None, above: int | None = None) -> int:
        """Put the parked workloads back; with ``keep``, a group of one shape whose head
        ``keep`` names stays parked, its shape still marked as not fitting; with ``above``,
        only the groups of a higher priority than that (the others stay as they are).
        Returns how many were put back."""
        if above is None:
            self._no_fit.clear()
        moved = 0
        for shape, group in list(self._parked_group.items()):
            head = self._group_head(group)
            if above is not None and (head is None or priority_of(head[0]) <= above):
                continue
            if keep is not None and shape is not None and head is not None and keep(head[1]):
                self._no_fit.add(shape)
                continue
            if shape is not None:
                self._no_fit.discard(shape)
            moved += group.alive
            group.parked = False
            self._release_item(group)
            del self._parked_group[shape]
        self._parked_alive -= moved
        self._maybe_compact()
        if moved and self._on_ready is not None:
            self._on_ready()
        return moved

    def resort(self, key_of: Callable[[str], SortKey]) -> None:
        """Recompute every sort key (LocalQueue usage changed); O(n log n)."""
        self._tickets = {k: (t, key_of(k), sh) for k, (t, _, sh) in self._tickets.items()}
        self._members = {k: (gid, key_of(k), sh) for k, (gid, _, sh) in self._members.items()}
        for group in self._groups.values():
            group.items = []
        for key, (gid, skey, _) in self._members.items():
            self._groups[gid].items.append((skey, key))
        for group in self._groups.values():
            heapq.heapify(group.items)
        self._compact()

    # -- upkeep -----------------------------------------------------------------------------
    def _maybe_compact(self) -> None:
        if len(self._heap) > 2 * (len(self._tickets) + len(self._groups)) + COMPACT_SLACK:
            self._compact()

    def _compact(self) -> None:
        self._heap = [(skey, t, k) for k, (t, skey, _) in self._tickets.items()]
        self._group_by_ticket = {}
        for group in self._groups.values():
            if not group.parked:
                head = self._group_head(group)
                if head is not None:
                    self._group_by_ticket[group.ticket] = group
                    self._heap.append((head[0], group.ticket, ""))
        heapq.heapify(self._heap)

    def _maybe_compact_group(self, group: _Group) -> None:
        if len(group.items) > 2 * group.alive + COMPACT_SLACK:
            group.items = [item for item in group.items if self._holds(group, *item)]
            heapq.heapify(group.items)

    def keys(self) -> list[str]:
        return list(self._tickets) + list(self._members)
