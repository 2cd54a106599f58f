"""A leader's term ends without its writes outliving it (issue: an old leader writing over
its successor). Lost Lease: the client is fenced before the leader's work is even cancelled,
and the writers stop at once. A term ended on our side (SIGTERM): in-flight writes finish,
within the drain, before the Lease is released."""

from __future__ import annotations

import asyncio

import pytest

from pykueue.kube.client import KubeClient, WriteFence, WritesFenced
from pykueue.kube.leader import LeaderElector
from pykueue.manager.runtime.controllers.manager import QueueManager
from tests.unit.runtime.fake_lease import FakeLease

from .test_status_writes import WORKLOADS, FakeApi, _setup


def test_a_fenced_client_refuses_writes_and_so_do_its_pool_sharers() -> None:
    async def go() -> None:
        client = KubeClient(object())
        sharer = client.sharing_pool()
        client.fence_writes("lost the Lease")
        for c in (client, sharer):
            with pytest.raises(WritesFenced, match="lost the Lease"):
                await c.patch(WORKLOADS + "w0/status", {"status": {}})
            with pytest.raises(WritesFenced):
                await c.create("/api/v1/namespaces/ns/events", {})
            with pytest.raises(WritesFenced):
                await c.delete(WORKLOADS + "w0")

    asyncio.run(go())


def test_the_fence_lets_reads_and_reviews_through() -> None:
    fence = WriteFence()
    fence.close("lost the Lease")
    fence.check("GET", WORKLOADS + "w0")
    fence.check("POST", "/apis/authentication.k8s.io/v1/tokenreviews")
    fence.check("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews")
    with pytest.raises(WritesFenced):
        fence.check("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l")


def _manager_with_gated_write() -> tuple[QueueManager, FakeApi]:
    manager, api = _setup()
    api.gates["w0"] = asyncio.Event()
    return manager, api


def test_a_lost_lease_stops_the_writers_at_once() -> None:
    async def go() -> None:
        manager, api = _manager_with_gated_write()
        manager.status_writes.start()
        await manager.schedule_once()
        await api.at_gate.setdefault("w0", asyncio.Event()).wait()
        manager.lose_lease()
        assert manager.client.fence.reason is not None
        async with asyncio.timeout(1.0):  # not the drain's 5 s: nothing is waited for
            await manager._end_term()
        api.gates["w0"].set()
        await asyncio.sleep(0)
        assert "w0" not in api.puts, "the write in flight was cancelled, not finished"
        assert not manager.status_writes.in_flight

    asyncio.run(go())


def test_a_term_ended_on_our_side_finishes_the_writes_in_flight() -> None:
    async def go() -> None:
        manager, api = _manager_with_gated_write()
        manager.status_writes.start()
        await manager.schedule_once()
        await api.at_gate.setdefault("w0", asyncio.Event()).wait()
        ending = asyncio.create_task(manager._end_term())
        await asyncio.sleep(0.05)
        assert not ending.done(), "the drain waits for the write in flight"
        api.gates["w0"].set()
        await ending
        assert "w0" in api.puts
        assert api.status_of("w0").get("admission")

    asyncio.run(go())


def test_losing_the_lease_fences_before_the_leading_work_is_cancelled() -> None:
    async def go() -> None:
        api = FakeLease()
        seen: list[str] = []
        leading = asyncio.Event()

        async def lead() -> None:
            leading.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                seen.append(f"cancelled, fenced={api.fence.reason is not None}")
                raise

        elector = LeaderElector(api, namespace="ns", identity="me",  # type: ignore[arg-type]
                                lease_duration_s=0.5, renew_deadline_s=0.3, retry_period_s=0.05,
                                on_started_leading=lead,
                                on_lost_lease=lambda: api.fence_writes("lost the Lease"))
        running = asyncio.create_task(elector.run())
        await leading.wait()
        api.down = True
        async with asyncio.timeout(5.0):
            await running  # returns: the term is over
        assert seen == ["cancelled, fenced=True"]
        assert not elector.is_leader

    asyncio.run(go())
