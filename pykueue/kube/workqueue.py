"""A keyed work queue for reconcilers, with client-go's guarantees, in pure asyncio.

- De-duplication: a key already waiting is not queued twice; many events on one object
  collapse into one reconcile.
- One worker per key at a time: a key added while it is being processed is parked and run
  once more after the current run ends, so a reconcile always sees the latest state and
  never races itself.
- Bounded concurrency: ``workers`` tasks pull keys (Kueue ships Workload 10, LQ/CQ 5).
- Two lanes: keys added ``urgent`` are taken before the others (an urgent add of a key
  already waiting moves it up), so a backlog of optional work cannot delay what matters.
- Failures are retried per key with exponential backoff (client-go's per-item limiter:
  5 ms doubling up to 1000 s); success forgets the key's failure count. A handler may
  also ask for a requeue after a delay by returning the number of seconds.
- Graceful shutdown: ``drain`` finishes what is queued and in flight; otherwise workers are
  cancelled. Adds after shutdown are ignored.
- Timing (optional ``timing``): how long each key waited for a worker (from the add that
  queued it) and how long its processing took, as client-go's ``queue_duration`` and
  ``work_duration``. Waits in the urgent lane are reported under the queue's name plus
  ``URGENT_SUFFIX``, so what matters is told from the backlog of optional work; a key moved
  up waits in the urgent lane from the move.

Time is injected (``clock``, ``sleep``) so retry timing is testable without waiting.

Our own because kubernetes-asyncio has no work queue (client-go's ``workqueue`` has no
Python port in it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, Protocol, TypeVar

from pykueue.kube.backoff import Backoff

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

Process = Callable[[K], Awaitable[float | None]]
"""Reconcile one key; return seconds to requeue after, or None. Raising means retry with backoff."""


class QueueTiming(Protocol):
    def waited(self, queue: str, seconds: float) -> None: ...

    def worked(self, queue: str, seconds: float) -> None: ...


URGENT_SUFFIX = "-urgent"


def default_retry_backoff() -> Backoff:
    return Backoff(base=0.005, cap=1000.0, factor=2.0, jitter=0.0)


def prompt_retry_backoff() -> Backoff:
    """5 ms doubling up to 10 s: for writes that jobs start and stop on. After an API outage
    of a minute client-go's 1000 s cap would leave them waiting a doubling pause (40 s and
    more) after the API is back; at 10 s the backlog goes out within seconds."""
    return Backoff(base=0.005, cap=10.0, factor=2.0, jitter=0.0)


class WorkQueue(Generic[K]):
    def __init__(self, process: Process[K], *, workers: int = 1, name: str = "queue",
                 backoff: Backoff | None = None, max_retries: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 timing: QueueTiming | None = None) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._process = process
        self.workers = workers
        self.name = name
        self.backoff = backoff if backoff is not None else default_retry_backoff()
        self.max_retries = max_retries
        self._clock = clock
        self._sleep = sleep
        self._timing = timing
        self._added_at: dict[K, float] = {}  # queued key -> when (kept only with ``timing``)
        self._queue: deque[K] = deque()
        self._urgent: deque[K] = deque()
        self._queued: set[K] = set()
        self._queued_urgent: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._failures: dict[K, int] = {}
        self._delayed: dict[K, tuple[float, asyncio.Task[None]]] = {}
        self._has_work = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks: list[asyncio.Task[None]] = []
        self._shutting_down = False
        self.processed = 0
        self.retries = 0
        self.dropped = 0

    # -- introspection ---------------------------------------------------------------------
    def __len__(self) -> int:
        """Keys waiting for a worker (not counting in-flight or delayed ones)."""
        return len(self._queued)

    @property
    def urgent_waiting(self) -> int:
        """Urgent keys waiting for a worker: every worker is busy while this is above 0."""
        return len(self._queued_urgent)

    @property
    def in_flight(self) -> frozenset[K]:
        return frozenset(self._processing)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # -- adding ----------------------------------------------------------------------------
    def add(self, key: K, urgent: bool = False) -> None:
        if self._shutting_down:
            return
        if key in self._queued:
            if urgent and key not in self._queued_urgent:
                # Moved up: the normal lane keeps a stale entry, which _next skips (or, if
                # the key was queued normally again by then, takes a little early).
                self._queued_urgent.add(key)
                self._urgent.append(key)
                if self._timing is not None:
                    self._added_at[key] = self._clock()  # its urgent wait starts now
            return
        if key in self._processing:
            self._dirty.add(key)
            self._idle.clear()
            return
        self._queued.add(key)
        if self._timing is not None:
            self._added_at[key] = self._clock()
        if urgent:
            self._queued_urgent.add(key)
            self._urgent.append(key)
        else:
            self._queue.append(key)
        self._idle.clear()
        self._has_work.set()

    def add_after(self, key: K, delay_s: float) -> None:
        """Add ``key`` once ``delay_s`` has passed; an earlier pending deadline for it wins."""
        if self._shutting_down:
            return
        if delay_s <= 0:
            self.add(key)
            return
        deadline = self._clock() + delay_s
        pending = self._delayed.get(key)
        if pending is not None:
            if pending[0] <= deadline:
                return
            pending[1].cancel()
        self._idle.clear()
        task = asyncio.create_task(self._fire_after(key, delay_s), name=f"{self.name}:delay")
        self._delayed[key] = (deadline, task)

    def add_rate_limited(self, key: K) -> None:
        """Requeue after this key's next backoff step (counts as a failure)."""
        attempt = self._failures.get(key, 0)
        self._failures[key] = attempt + 1
        self.add_after(key, self.backoff.delay(attempt))

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    async def _fire_after(self, key: K, delay_s: float) -> None:
        try:
            await self._sleep(delay_s)
        finally:
            entry = self._delayed.get(key)
            if entry is not None and entry[1] is asyncio.current_task():
                del self._delayed[key]
        self.add(key)
        self._update_idle()

    def _update_idle(self) -> None:
        if not self._queued and not self._processing and not self._dirty and not self._delayed:
            self._idle.set()

    # -- running ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._tasks:
            raise RuntimeError(f"work queue {self.name} already started")
        self._tasks = [asyncio.create_task(self._worker(), name=f"{self.name}:worker{i}")
                       for i in range(self.workers)]

    async def _next(self) -> K | None:
        while True:
            while not self._queued:
                if self._shutting_down:
                    return None
                self._has_work.clear()
                await self._has_work.wait()
            lane = self.name
            if self._urgent:
                key = self._urgent.popleft()
                self._queued_urgent.discard(key)
                lane += URGENT_SUFFIX
            else:
                key = self._queue.popleft()
                if key not in self._queued:
                    continue  # already taken from the urgent lane
            self._queued.discard(key)
            self._processing.add(key)
            if self._timing is not None:
                self._timing.waited(lane, self._clock() - self._added_at.pop(key))
            return key

    async def _worker(self) -> None:
        while True:
            key = await self._next()
            if key is None:
                return
            started = self._clock()
            try:
                await self._run_one(key)
                if self._timing is not None:
                    self._timing.worked(self.name, self._clock() - started)
            finally:
                self._processing.discard(key)
                if key in self._dirty:
                    self._dirty.discard(key)
                    self.add(key)
                self._update_idle()

    async def _run_one(self, key: K) -> None:
        try:
            requeue_after = await self._process(key)
        except asyncio.CancelledError:
            raise
        except Exception:
            attempts = self._failures.get(key, 0) + 1
            if self.max_retries is not None and attempts > self.max_retries:
                self.dropped += 1
                self._failures.pop(key, None)
                log.exception("%s: giving up on %r after %d attempts", self.name, key, attempts)
                return
            self.retries += 1
            log.warning("%s: processing %r failed (attempt %d); retrying", self.name, key, attempts,
                        exc_info=True)
            self.add_rate_limited(key)
            return
        self.processed += 1
        self.forget(key)
        if requeue_after is not None:
            self.add_after(key, requeue_after)

    async def join(self, timeout_s: float | None = None) -> None:
        """Wait until nothing is queued, in flight or scheduled for later."""
        async with asyncio.timeout(timeout_s):
            await self._idle.wait()

    async def shutdown(self, *, drain: bool = True, timeout_s: float | None = None) -> None:
        """Stop the workers: after finishing queued and in-flight keys (``drain``), else at once.

        A drain that outlasts ``timeout_s`` is cut short by cancelling the workers.
        """
        self._shutting_down = True
        for _, task in list(self._delayed.values()):
            task.cancel()
        self._delayed.clear()
        self._dirty.clear()
        if not drain:
            self._clear()
            for task in self._tasks:
                task.cancel()
        else:
            # Idle workers wake, find the queue empty and the flag set, and exit.
            self._has_work.set()
        if self._tasks:
            done, pending = await asyncio.wait(self._tasks, timeout=timeout_s)
            for task in pending:
                task.cancel()
            for task in pending:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.error("%s worker failed", self.name, exc_info=task.exception())
        self._tasks = []
        self._clear()
        self._update_idle()

    def _clear(self) -> None:
        self._queue.clear()
        self._urgent.clear()
        self._queued.clear()
        self._queued_urgent.clear()
        self._added_at.clear()
