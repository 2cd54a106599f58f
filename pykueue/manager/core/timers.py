"""The core's clock and timers.

The core never reads a clock: :class:`Clock` holds the time its caller last gave it, shared
by every part of the core. :class:`Timers` is one heap of what is due when (a requeue
backoff ending, a PodsReady timeout, a batched requeue of a cohort tree ...), in the order
they were set among those due at the same time.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

# Timer kinds. A workload's timer carries its record's generation: stale once that moved on.
BACKOFF = "backoff"
PODS_READY = "podsReady"
MAX_EXECUTION = "maxExecution"
AFS_SAMPLE = "afsSample"
REQUEUE = "requeue"  # a batched requeue of a cohort tree (key: "Cohort/<root>" or "ClusterQueue/<name>")


class Clock:
    """The time the caller last set (see ``QueueingCore.fire_timers``)."""

    __slots__ = ("now",)

    def __init__(self, now: float) -> None:
        self.now = now


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, str, int]] = []
        self._seq = itertools.count()

    def add(self, when: float, kind: str, key: str = "", generation: int = 0) -> None:
        heapq.heappush(self._heap, (when, next(self._seq), kind, key, generation))

    def next_due(self, current: Callable[[str, str, int], bool]) -> float | None:
        """When the first timer is due that ``current(kind, key, generation)`` says still
        holds; those before it that do not are dropped."""
        while self._heap:
            when, _, kind, key, gen = self._heap[0]
            if current(kind, key, gen):
                return when
            heapq.heappop(self._heap)
        return None

    def pop_due(self, now: float) -> tuple[str, str, int] | None:
        """(kind, key, generation) of the first timer due by ``now``, taken off; None if none is."""
        if self._heap and self._heap[0][0] <= now:
            _, _, kind, key, gen = heapq.heappop(self._heap)
            return kind, key, gen
        return None

    def kinds(self) -> dict[str, int]:
        """How many timers of each kind are set (stale ones included)."""
        out: dict[str, int] = {}
        for _, _, kind, _, _ in self._heap:
            out[kind] = out.get(kind, 0) + 1
        return out
