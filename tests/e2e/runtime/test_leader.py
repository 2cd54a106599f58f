"""Leader election on a real Lease: one leader at a time, hand-over on release, expiry and step-down."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from pykueue.kube.client import ApiError, KubeClient, connect
from pykueue.kube.leader import LeaderElector, LeaderWorkEnded, micro_time
from pykueue.kube.resources import LEASES
from tests.e2e.conftest import DevCluster

pytestmark = pytest.mark.e2e

# Short timings (same proportions as Kueue's 15/10/2 s) keep the test quick.
LEASE_S, RENEW_S, RETRY_S = 4.0, 3.0, 0.5
DEADLINE_S = 30.0


@pytest.fixture
async def client(dev_cluster: DevCluster) -> AsyncIterator[KubeClient]:
    async with await connect(dev_cluster.kubeconfig) as kube:
        yield kube


class Candidate:
    """One elector plus a record of its leading callbacks."""

    def __init__(self, client: KubeClient, namespace: str, lease: str, identity: str,
                 release_on_cancel: bool = True) -> None:
        self.leading = asyncio.Event()
        self.stopped_leading = asyncio.Event()
        self.work_cancelled = asyncio.Event()
        self._failure = asyncio.Event()
        self.elector = LeaderElector(client, namespace=namespace, name=lease, identity=identity,
                                     lease_duration_s=LEASE_S, renew_deadline_s=RENEW_S,
                                     retry_period_s=RETRY_S, on_started_leading=self._lead,
                                     on_stopped_leading=self.stopped_leading.set,
                                     release_on_cancel=release_on_cancel)
        self.task = asyncio.create_task(self.elector.run(), name=identity)

    async def _lead(self) -> None:
        self.leading.set()
        try:
            await self._failure.wait()
        except asyncio.CancelledError:
            self.work_cancelled.set()
            raise
        raise RuntimeError("injected failure of the leader's work")

    def fail(self) -> None:
        """Make the leader's work raise, as a bug in a scheduling cycle would."""
        self._failure.set()

    async def stop(self) -> None:
        self.task.cancel()
        done, _ = await asyncio.wait([self.task], timeout=DEADLINE_S)
        assert done, f"{self.elector.identity} ignored its cancellation"
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def first_leader(*candidates: Candidate) -> Candidate:
    waits = {asyncio.create_task(c.leading.wait()): c for c in candidates}
    done, pending = await asyncio.wait(waits, timeout=DEADLINE_S, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    assert done, "nobody became leader"
    return waits[next(iter(done))]


async def read_lease(client: KubeClient, namespace: str, name: str) -> dict[str, object]:
    return (await client.get(LEASES.object_path(name, namespace)))["spec"]  # type: ignore[no-any-return]


async def test_exactly_one_leads_and_a_release_hands_over_at_once(client: KubeClient, namespace: str) -> None:
    lease = f"lease-{uuid.uuid4().hex[:6]}"
    a, b = (Candidate(client, namespace, lease, ident) for ident in ("replica-a", "replica-b"))
    try:
        leader = await first_leader(a, b)
        follower = b if leader is a else a
        # The follower keeps campaigning for a while and must not win while the leader renews.
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(follower.leading.wait(), LEASE_S + 1.0)
        assert leader.elector.is_leader and not follower.elector.is_leader
        spec = await read_lease(client, namespace, lease)
        assert spec["holderIdentity"] == leader.elector.identity
        assert spec["leaseDurationSeconds"] == int(LEASE_S) and spec["leaseTransitions"] == 0
        assert spec["renewTime"] != spec["acquireTime"], "the leader keeps renewing"

        released_at = time.monotonic()
        await leader.stop()
        assert leader.stopped_leading.is_set() and leader.work_cancelled.is_set()
        await asyncio.wait_for(follower.leading.wait(), DEADLINE_S)
        # A released Lease is free: no need to wait out the lease duration.
        assert time.monotonic() - released_at < LEASE_S
        spec = await read_lease(client, namespace, lease)
        assert spec["holderIdentity"] == follower.elector.identity
        assert spec["leaseTransitions"] == 1
    finally:
        await a.stop()
        await b.stop()


async def test_a_leader_that_stops_renewing_is_replaced_after_the_lease_expires(
        client: KubeClient, namespace: str) -> None:
    lease = f"lease-{uuid.uuid4().hex[:6]}"
    crashed = Candidate(client, namespace, lease, "crashing", release_on_cancel=False)
    await asyncio.wait_for(crashed.leading.wait(), DEADLINE_S)
    standby = Candidate(client, namespace, lease, "standby")
    try:
        await crashed.stop()  # gone without releasing, like a killed process
        stopped_at = time.monotonic()
        assert (await read_lease(client, namespace, lease))["holderIdentity"] == "crashing"
        await asyncio.wait_for(standby.leading.wait(), DEADLINE_S)
        waited = time.monotonic() - stopped_at
        # The standby measures expiry on its own clock from the last change it saw.
        assert waited >= LEASE_S - RETRY_S - 0.5, f"took over after only {waited:.1f}s"
        spec = await read_lease(client, namespace, lease)
        assert spec["holderIdentity"] == "standby" and spec["leaseTransitions"] == 1
    finally:
        await standby.stop()


async def test_a_leader_that_cannot_renew_steps_down_by_the_renew_deadline(
        client: KubeClient, namespace: str) -> None:
    lease = f"lease-{uuid.uuid4().hex[:6]}"
    leader = Candidate(client, namespace, lease, "leader")
    try:
        await asyncio.wait_for(leader.leading.wait(), DEADLINE_S)
        # Someone else takes the Lease over: a compare-and-swap, retried while it races a renewal.
        for _ in range(20):
            current = await client.get(LEASES.object_path(lease, namespace))
            now = micro_time(datetime.now(UTC))
            current["spec"].update({"holderIdentity": "usurper", "renewTime": now, "acquireTime": now,
                                    "leaseDurationSeconds": 60})
            try:
                await client.replace(LEASES.object_path(lease, namespace), current)
                break
            except ApiError as exc:
                assert exc.conflict, exc
        else:
            pytest.fail("could not take the Lease over")
        taken_at = time.monotonic()
        await asyncio.wait_for(leader.stopped_leading.wait(), DEADLINE_S)
        assert time.monotonic() - taken_at <= RENEW_S + 2 * RETRY_S + 1.0
        assert leader.work_cancelled.is_set() and not leader.elector.is_leader
        await asyncio.wait_for(leader.task, DEADLINE_S)  # run() returns after losing the Lease
        assert leader.elector.leader_identity == "usurper"
    finally:
        await leader.stop()


async def test_a_leader_whose_work_fails_gives_up_the_lease_at_once(client: KubeClient,
                                                                    namespace: str) -> None:
    """One exception in the leader's work ends its term: it does not keep renewing a Lease
    it does nothing with, and the standby leads without waiting out the lease."""
    lease = f"lease-{uuid.uuid4().hex[:6]}"
    failing = Candidate(client, namespace, lease, "failing")
    await asyncio.wait_for(failing.leading.wait(), DEADLINE_S)
    standby = Candidate(client, namespace, lease, "standby")
    try:
        failed_at = time.monotonic()
        failing.fail()
        with pytest.raises(LeaderWorkEnded) as ended:
            await asyncio.wait_for(failing.task, DEADLINE_S)
        assert isinstance(ended.value.__cause__, RuntimeError) and "injected" in str(ended.value.__cause__)
        assert failing.stopped_leading.is_set() and not failing.elector.is_leader
        await asyncio.wait_for(standby.leading.wait(), DEADLINE_S)
        assert time.monotonic() - failed_at < LEASE_S, "the Lease was released, not left to expire"
        assert (await read_lease(client, namespace, lease))["holderIdentity"] == "standby"
    finally:
        await standby.stop()
