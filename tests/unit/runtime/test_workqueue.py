"""The keyed work queue: de-duplication, one worker per key, bounded concurrency, retries, shutdown."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from pykueue.kube.backoff import Backoff
from pykueue.kube.workqueue import WorkQueue
from tests.unit.runtime.fakes import FakeTime

DEADLINE_S = 5.0


async def test_a_key_added_many_times_while_waiting_is_processed_once() -> None:
    seen: Counter[str] = Counter()

    async def process(key: str) -> None:
        seen[key] += 1

    queue: WorkQueue[str] = WorkQueue(process, workers=3)
    for _ in range(5):
        queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    queue.start()
    await queue.join(DEADLINE_S)
    await queue.shutdown()
    assert seen == {"a": 1, "b": 1}


async def test_a_key_added_during_processing_runs_once_more_after_never_concurrently() -> None:
    running: Counter[str] = Counter()
    max_running = 0
    calls = 0
    entered = asyncio.Event()
    release = asyncio.Event()

    async def process(key: str) -> None:
        nonlocal max_running, calls
        running[key] += 1
        max_running = max(max_running, running[key])
        calls += 1
        if calls == 1:
            entered.set()
            await release.wait()
        running[key] -= 1

    queue: WorkQueue[str] = WorkQueue(process, workers=4)
    queue.start()
    queue.add("k")
    await asyncio.wait_for(entered.wait(), DEADLINE_S)
    assert queue.in_flight == {"k"}
    for _ in range(3):
        queue.add("k")  # collapses into a single re-run
    assert len(queue) == 0, "an in-flight key must not be handed to a second worker"
    release.set()
    await queue.join(DEADLINE_S)
    await queue.shutdown()
    assert calls == 2
    assert max_running == 1


async def test_workers_bound_the_concurrency() -> None:
    active = 0
    peak = 0
    two_running = asyncio.Event()
    release = asyncio.Event()

    async def process(key: int) -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        if active == 2:
            two_running.set()
        await release.wait()
        active -= 1

    queue: WorkQueue[int] = WorkQueue(process, workers=2)
    queue.start()
    for key in range(6):
        queue.add(key)
    await asyncio.wait_for(two_running.wait(), DEADLINE_S)
    assert len(queue) == 4
    release.set()
    await queue.join(DEADLINE_S)
    await queue.shutdown()
    assert peak == 2


async def test_failures_retry_with_exponential_backoff_and_success_resets_the_count() -> None:
    t = FakeTime()
    attempts = 0

    async def process(key: str) -> None:
        nonlocal attempts
        attempts += 1
        if attempts <= 4:
            raise RuntimeError("apiserver said no")

    queue: WorkQueue[str] = WorkQueue(process, backoff=Backoff(base=0.005, cap=0.03, jitter=0.0),
                                      clock=t.clock, sleep=t.sleep)
    queue.start()
    queue.add("wl")
    await queue.join(DEADLINE_S)
    await queue.shutdown()
    assert attempts == 5
    assert t.sleeps == pytest.approx([0.005, 0.01, 0.02, 0.03])  # doubling, then capped
    assert queue.failures("wl") == 0 and queue.retries == 4 and queue.processed == 1


def test_backoff_jitter_stays_within_its_band() -> None:
    backoff = Backoff(base=1.0, cap=8.0, jitter=0.2, rng=random.Random(7))
    for attempt, nominal in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (10, 8.0)]:
        for _ in range(50):
            assert 0.8 * nominal <= backoff.delay(attempt) <= nominal


async def test_a_key_is_dropped_after_max_retries() -> None:
    t = FakeTime()
    attempts = 0

    async def process(key: str) -> None:
        nonlocal attempts
        attempts += 1
        raise RuntimeError("permanent")

    queue: WorkQueue[str] = WorkQueue(process, max_retries=2, clock=t.clock, sleep=t.sleep)
    queue.start()
    queue.add("x")
    await queue.join(DEADLINE_S)
    await queue.shutdown()
    assert attempts == 3 and queue.dropped == 1 and queue.failures("x") == 0


async def test_returning_a_delay_requeues_after_it_without_counting_a_failure() -> None:
    t = FakeTime()
    runs = 0

    async def process(key: str) -> float | None:
        nonlocal runs
        runs += 1
        return 30.0 if runs == 1 else None

    queue: WorkQueue[str] = WorkQueue(process, clock=t.clock, sleep=t.sleep)
    queue.start()
    queue.add("cq")
    await queue.join(DEADLINE_S)
    await queue.shutdown()
    assert runs == 2 and t.sleeps == [30.0] and queue.retries == 0


async def test_an_earlier_delayed_add_replaces_a_later_one() -> None:
    t = FakeTime()
    held: list[tuple[float, asyncio.Event]] = []

    async def held_sleep(seconds: float) -> None:
        gate = asyncio.Event()
        held.append((seconds, gate))
        await gate.wait()

    processed: list[str] = []

    async def process(key: str) -> None:
        processed.append(key)

    queue: WorkQueue[str] = WorkQueue(process, clock=t.clock, sleep=held_sleep)
    queue.start()
    queue.add_after("k", 60.0)
    await asyncio.sleep(0)
    queue.add_after("k", 120.0)  # later: ignored
    queue.add_after("k", 5.0)  # earlier: replaces the 60 s timer
    await asyncio.sleep(0)
    assert [seconds for seconds, _ in held] == [60.0, 5.0]
    held[1][1].set()
    await queue.join(DEADLINE_S)
    held[0][1].set()  # the replaced timer was cancelled: releasing it adds nothing
    await asyncio.sleep(0)
    assert len(queue) == 0
    await queue.shutdown()
    assert processed == ["k"]


async def test_draining_shutdown_finishes_queued_work_and_ignores_later_adds() -> None:
    processed: list[int] = []
    release = asyncio.Event()

    async def process(key: int) -> None:
        await release.wait()
        processed.append(key)

    queue: WorkQueue[int] = WorkQueue(process, workers=1)
    queue.start()
    for key in range(3):
        queue.add(key)
    stopping = asyncio.create_task(queue.shutdown(drain=True, timeout_s=DEADLINE_S))
    await asyncio.sleep(0)
    queue.add(99)
    release.set()
    await stopping
    assert processed == [0, 1, 2]


async def test_non_draining_shutdown_cancels_in_flight_work_and_drops_the_rest() -> None:
    entered = asyncio.Event()
    cancelled = asyncio.Event()
    processed: list[int] = []

    async def process(key: int) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        processed.append(key)

    queue: WorkQueue[int] = WorkQueue(process, workers=1)
    queue.start()
    queue.add(1)
    queue.add(2)
    await asyncio.wait_for(entered.wait(), DEADLINE_S)
    await asyncio.wait_for(queue.shutdown(drain=False), DEADLINE_S)
    assert cancelled.is_set() and processed == [] and len(queue) == 0


async def test_a_drain_that_outlasts_its_timeout_is_cut_short() -> None:
    cancelled = asyncio.Event()
    entered = asyncio.Event()

    async def process(key: int) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    queue: WorkQueue[int] = WorkQueue(process)
    queue.start()
    queue.add(1)
    await asyncio.wait_for(entered.wait(), DEADLINE_S)
    await asyncio.wait_for(queue.shutdown(drain=True, timeout_s=0.05), DEADLINE_S)
    assert cancelled.is_set()


async def test_urgent_keys_are_taken_first_and_an_urgent_add_moves_a_waiting_key_up() -> None:
    order: list[str] = []

    async def process(key: str) -> None:
        order.append(key)

    queue: WorkQueue[str] = WorkQueue(process, workers=1)
    for key in ("n1", "n2", "n3"):
        queue.add(key)
    queue.add("u1", urgent=True)
    queue.add("n3", urgent=True)  # already waiting: moves up, still runs once
    assert len(queue) == 4
    assert queue.urgent_waiting == 2
    queue.start()
    await queue.join(DEADLINE_S)
    await queue.shutdown()
    assert order == ["u1", "n3", "n1", "n2"]
    assert queue.urgent_waiting == 0


class _Timings:
    def __init__(self) -> None:
        self.waits: list[tuple[str, float]] = []
        self.works: list[tuple[str, float]] = []

    def waited(self, queue: str, seconds: float) -> None:
        self.waits.append((queue, seconds))

    def worked(self, queue: str, seconds: float) -> None:
        self.works.append((queue, seconds))


async def test_timing_reports_the_wait_in_each_lane_and_each_processing() -> None:
    now = [100.0]
    timings = _Timings()
    done = asyncio.Event()

    async def process(key: str) -> None:
        now[0] += 0.25 if key == "a" else 0.5  # the work takes this long on the injected clock
        if key == "b":
            done.set()
        if key == "a":
            raise RuntimeError("fails: timed all the same")

    queue: WorkQueue[str] = WorkQueue(process, workers=1, name="q", clock=lambda: now[0], timing=timings,
                                      backoff=Backoff(base=1000.0, cap=1000.0, factor=1.0, jitter=0.0))
    queue.add("a")
    now[0] += 2.0
    queue.add("b")
    queue.add("a", urgent=True)  # moved up: its urgent wait starts now
    now[0] += 1.0
    queue.start()
    await asyncio.wait_for(done.wait(), DEADLINE_S)
    await queue.shutdown(drain=False)
    # a urgent since 102.0 (its 2 s in the other lane were optional work waiting); b since
    # 102.0, taken after a's 0.25 s.
    assert timings.waits == [("q-urgent", 1.0), ("q", 1.25)]
    assert timings.works == [("q", 0.25), ("q", 0.5)]

