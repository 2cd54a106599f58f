"""The client-side token bucket: burst, steady rate, refill cap, disabling, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from pykueue.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket
from tests.unit.runtime.fakes import FakeTime


def test_defaults_are_kueues_client_connection_defaults() -> None:
    assert (DEFAULT_QPS, DEFAULT_BURST) == (300.0, 500)


async def test_burst_passes_then_requests_are_spaced_at_qps() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=10, burst=5, clock=t.clock, sleep=t.sleep)
    for _ in range(5):
        await bucket.acquire()
    assert t.sleeps == []
    for _ in range(20):
        await bucket.acquire()
    assert t.sleeps == pytest.approx([0.1] * 20)
    assert t.now - 1000.0 == pytest.approx(2.0)
    assert bucket.throttled_seconds == pytest.approx(2.0)


async def test_concurrent_callers_queue_up_first_come_first_served() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=4, burst=1, clock=t.clock, sleep=t.sleep)
    # Reservations made at the same instant owe increasing debts: 0, 1/4, 2/4, 3/4 s.
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0.0, 0.25, 0.5, 0.75])


async def test_idle_time_refills_at_most_the_burst() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=100, burst=3, clock=t.clock, sleep=t.sleep)
    for _ in range(3):
        await bucket.acquire()
    t.now += 3600.0
    for _ in range(3):
        await bucket.acquire()
    assert t.sleeps == []
    await bucket.acquire()
    assert t.sleeps == pytest.approx([0.01])


async def test_negative_qps_disables_limiting() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=-1, burst=0, clock=t.clock, sleep=t.sleep)
    for _ in range(10_000):
        await bucket.acquire()
    assert t.sleeps == [] and not bucket.enabled


async def test_a_cancelled_waiter_gives_its_token_back() -> None:
    t = FakeTime()
    gate = asyncio.Event()

    async def blocking_sleep(seconds: float) -> None:
        t.sleeps.append(seconds)
        await gate.wait()

    bucket = TokenBucket(qps=1, burst=1, clock=t.clock, sleep=blocking_sleep)
    await bucket.acquire()
    waiter = asyncio.create_task(bucket.acquire())
    await asyncio.sleep(0)
    assert t.sleeps == [1.0]
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    # The next caller owes the same 1 s, not 2 s: the cancelled reservation was returned.
    assert bucket.reserve() == pytest.approx(1.0)


def test_burst_must_be_positive_when_enabled() -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps=5, burst=0)


def test_headroom_is_the_share_of_the_burst_left() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=10, burst=4, clock=t.clock, sleep=t.sleep)
    assert bucket.headroom() == 1.0
    bucket.reserve()
    bucket.reserve()
    assert bucket.headroom() == pytest.approx(0.5)
    for _ in range(4):
        bucket.reserve()
    assert bucket.headroom() < 0  # callers owe time: optional requests should wait
    t.now += 0.6
    assert bucket.headroom() == pytest.approx(1.0)  # refilled, capped at the burst
    assert TokenBucket(qps=-1, burst=0).headroom() == 1.0
