"""A candidate tries for a Lease held by another as soon as it runs out by its own clock,
and looks at it twice per retry period meanwhile: a killed leader is replaced sooner, never
before its Lease has run out."""

from __future__ import annotations

import asyncio

from pykueue.kube.leader import LeaderElector

from .fake_lease import FakeLease


def _elector(api: FakeLease, now: list[float]) -> LeaderElector:
    return LeaderElector(api, namespace="ns", identity="me", clock=lambda: now[0])  # type: ignore[arg-type]


def test_the_pause_is_half_a_retry_period_or_until_the_lease_runs_out() -> None:
    async def go() -> None:
        now = [100.0]
        api = FakeLease("other")
        elector = _elector(api, now)
        assert not await elector.try_acquire_or_renew()  # held: free 15 s after we saw it change
        pause = elector._acquire_pause()
        assert 1.0 <= pause <= 1.2, pause
        now[0] = 114.5
        assert not await elector.try_acquire_or_renew()
        assert abs(elector._acquire_pause() - 0.51) < 1e-9, "the next try is when it runs out"
        now[0] = 115.01
        assert await elector.try_acquire_or_renew(), "unchanged for the lease duration: taken"
        assert api.obj is not None and api.obj["spec"]["holderIdentity"] == "me"

    asyncio.run(go())


def test_a_renewal_seen_meanwhile_pushes_the_lease_end_out() -> None:
    async def go() -> None:
        now = [100.0]
        api = FakeLease("other")
        elector = _elector(api, now)
        assert not await elector.try_acquire_or_renew()
        now[0] = 110.0
        api.renewed_by_holder()
        assert not await elector.try_acquire_or_renew()
        now[0] = 115.5
        assert not await elector.try_acquire_or_renew(), "15 s from the renewal we saw, not the first look"
        assert 1.0 <= elector._acquire_pause() <= 1.2
        now[0] = 124.8
        assert not await elector.try_acquire_or_renew()
        assert abs(elector._acquire_pause() - 0.21) < 1e-9

    asyncio.run(go())
