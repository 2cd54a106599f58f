"""Workload status writes: a pool of writers, one at a time per Workload, no no-op writes,
pending-message-only changes deferred, a 409 re-read and recomputed."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from pykueue.kube.backoff import Backoff
from pykueue.kube.client import MERGE_PATCH, ApiError, KubeClient, WriteFence
from pykueue.kube.informer import EventType
from pykueue.kube.merge_patch import apply_merge_patch
from pykueue.kube.ratelimit import TokenBucket
from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.reasons import FlavorVerdict, Miss, Pending, PendingReason, PodSetMiss
from pykueue.manager.core.settings import TUNED, SchedulingSettings
from pykueue.manager.core.workload_state import FINISHED
from pykueue.manager.runtime.controllers import manager as manager_module
from pykueue.manager.runtime.controllers.manager import (
    QueueManager,
    only_pending_message_changed,
    pending_notice,
    queue_status_max_defer,
)
from pykueue.webhook.crd_rules import validate_workload

from .core_access import owe_status_writes
from .test_metrics_feed import _value
from .test_queue_status import _objects

WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/"


class FakeApi:
    """Workload objects by path with resourceVersions; PUT is a compare-and-swap."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.stored = asyncio.Event()  # set on every store
        self.rv = 0
        for obj in objects:
            self._store(WORKLOADS + obj["metadata"]["name"], obj)
        self.puts: list[str] = []
        self.gets = 0
        self.in_flight: dict[str, int] = {}
        self.max_per_key = 0
        self.max_total = 0
        self.limiter = TokenBucket(qps=-1, burst=0)  # no client-side limit unless a test sets one
        self.round_trip_s: dict[str, float] = {}  # by Workload name; 0.01 s if not set
        self.most_holding = 0  # the most Workloads ever stored holding quota and unfinished
        self.patch_bytes = 0
        self.validate = False  # refuse what pykueue's validating webhook refuses
        self.admissions: dict[str, list[Any]] = {}  # by name: each stored admission's flavors
        self.gates: dict[str, asyncio.Event] = {}  # by Workload name: its writes wait until set
        self.at_gate: dict[str, asyncio.Event] = {}  # set once a write waits at that gate
        self.refuse = 0  # the next this many writes fail as if kube-apiserver were away
        self.conflicts = 0  # the next this many writes meet a newer version (409)
        self.refused = 0
        self.fence = WriteFence()  # as the client's: closed when the Lease is lost

    def fence_writes(self, reason: str) -> None:
        self.fence.close(reason)

    def _store(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.stored.set()
        self.rv += 1
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[path] = stored
        return copy.deepcopy(stored)

    async def until(self, stored: Callable[[], bool]) -> None:
        """Wait until what is stored satisfies ``stored``."""
        while not stored():
            self.stored.clear()
            await self.stored.wait()

    def touch(self, name: str) -> None:
        """Someone else changes the object (a new resourceVersion)."""
        self._store(WORKLOADS + name, self.objects[WORKLOADS + name])

    def status_of(self, name: str) -> dict[str, Any]:
        return dict(self.objects[WORKLOADS + name].get("status") or {})

    async def get(self, path: str) -> dict[str, Any]:
        self.gets += 1
        if path not in self.objects:
            raise ApiError(404)
        return copy.deepcopy(self.objects[path])

    async def get_or_none(self, path: str) -> dict[str, Any] | None:
        try:
            return await self.get(path)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._compare_and_swap(path, body["metadata"].get("resourceVersion"), lambda _: body)

    async def patch(self, path: str, body: dict[str, Any], content_type: str = MERGE_PATCH,
                    query: Any = None) -> dict[str, Any]:
        assert content_type == MERGE_PATCH and set(body) == {"metadata", "status"}, body
        self.fence.check("PATCH", path)
        self.patch_bytes += len(json.dumps(body))
        def patched(current: dict[str, Any]) -> dict[str, Any]:
            new = {**current, "status": apply_merge_patch(current.get("status") or {}, body["status"])}
            errors = validate_workload(new, current) if self.validate else []
            if errors:
                raise ApiError(403, str(errors[0]))
            name = new["metadata"]["name"]
            psas = (new["status"].get("admission") or {}).get("podSetAssignments") or [{}]
            self.admissions.setdefault(name, []).append(psas[0].get("flavors"))
            return new

        return await self._compare_and_swap(path, body["metadata"].get("resourceVersion"), patched)

    async def _compare_and_swap(self, path: str, rv: str | None,
                                new: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        base = path.removesuffix("/status")
        self.in_flight[base] = self.in_flight.get(base, 0) + 1
        self.max_per_key = max(self.max_per_key, self.in_flight[base])
        self.max_total = max(self.max_total, sum(self.in_flight.values()))
        try:
            name = base.rsplit("/", 1)[1]
            await asyncio.sleep(self.round_trip_s.get(name, 0.01))  # lets other writers start meanwhile
            if name in self.gates:
                self.at_gate.setdefault(name, asyncio.Event()).set()
                await self.gates[name].wait()
            if self.refuse > 0:
                self.refuse -= 1
                self.refused += 1
                raise ConnectionRefusedError("kube-apiserver is away")
            self.puts.append(name)
            if self.conflicts > 0:
                self.conflicts -= 1
                raise ApiError(409, "Conflict")
            if rv != self.objects[base]["metadata"]["resourceVersion"]:
                raise ApiError(409)
            stored = self._store(base, new(copy.deepcopy(self.objects[base])))
            self.most_holding = max(self.most_holding, sum(map(_holds_quota, self.objects.values())))
            return stored
        finally:
            self.in_flight[base] -= 1


def _holds_quota(obj: dict[str, Any]) -> bool:
    conditions = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or ()}
    return conditions.get("QuotaReserved") == "True" and conditions.get("Finished") != "True"


def _setup(config: CoreConfig | None = None,
           scheduling: SchedulingSettings = TUNED) -> tuple[QueueManager, FakeApi]:
    objects = _objects()
    manager = QueueManager(KubeClient(object()), config, scheduling=scheduling)
    api = FakeApi(objects[3:])
    manager.client = cast(KubeClient, api)
    for obj in objects:
        manager._core_handler(EventType.ADDED, obj, None)
    return manager, api


def test_statuses_are_written_concurrently_once_each_and_not_rewritten_unchanged() -> None:
    async def go() -> None:
        manager, api = _setup()
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert sorted(api.puts) == ["w0", "w1", "w2"]
        assert api.max_total > 1 and api.max_per_key == 1
        assert [c["status"] for c in api.status_of("w0")["conditions"] if c["type"] == "Admitted"] == ["True"]
        assert api.status_of("w2")["conditions"][0]["status"] == "False"
        owe_status_writes(manager.core, "ns/w0", "ns/w1", "ns/w2")  # e.g. a rebuild re-routed them
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert sorted(api.puts) == ["w0", "w1", "w2"], "equal statuses are not written again"
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_a_pending_message_change_waits_but_a_finish_does_not(monkeypatch: Any) -> None:
    monkeypatch.setattr(manager_module, "PENDING_MESSAGE_INTERVAL_S", 60.0)

    async def go() -> None:
        manager, api = _setup()
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        manager.core.workload("ns/w2").pending = PendingReason(Pending.NO_FIT, podsets=(PodSetMiss(
            "main", (FlavorVerdict(Miss.INSUFFICIENT_QUOTA, "default", "cpu", 2000, 1000),)),))
        assert await manager._write_workload_status("ns/w2") is not None  # deferred, not written
        assert api.puts.count("w2") == 1
        # Someone else changed w0 meanwhile: the finish write 409s, re-reads and still lands.
        api.touch("w0")
        manager._seen_workload(EventType.MODIFIED, api.objects[WORKLOADS + "w0"])
        gets = api.gets
        manager.core.finish("ns/w0")
        assert manager.core.workload("ns/w0").status == FINISHED
        await manager.schedule_once()
        await manager.status_writes.join(5)
        conditions = api.status_of("w0")["conditions"]
        assert any(c["type"] == "Finished" and c["status"] == "True" for c in conditions)
        assert api.gets > gets, "the conflict was resolved from a fresh read"
        await manager.status_writes.shutdown(drain=False)

    asyncio.run(go())


def test_freed_quota_is_written_before_the_admission_that_reuses_it() -> None:
    """w0 finishes and w2 takes its room in the next cycle: w2's admission must not be
    stored while w0 still shows as holding quota, however slow w0's write is."""
    async def go() -> None:
        manager, api = _setup()
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert api.most_holding == 2
        api.round_trip_s["w0"] = 0.2
        manager.core.finish("ns/w0")
        manager.core.fire_timers(manager.core.now + 1.0)  # past the batched requeue of w2
        await manager.schedule_once()
        assert manager.core.workload("ns/w2").holds_quota  # the core reused the room at once
        await manager.status_writes.join(5)
        assert api.puts[-2:] == ["w0", "w2"]
        assert _holds_quota(api.objects[WORKLOADS + "w2"])
        assert api.most_holding == 2, "the API never showed three holding a quota of two"
        assert manager.release_order.unwritten == 0
        await manager.status_writes.shutdown()

    asyncio.run(go())


def _fast_retries(manager: QueueManager) -> None:
    manager.status_writes.backoff = Backoff(base=0.001, cap=0.004, jitter=0.0)


def test_an_outage_longer_than_any_retry_budget_loses_no_write_and_never_overfills(
        monkeypatch: Any) -> None:
    """kube-apiserver refuses every write for a long while (here a hundred attempts, past
    any fixed retry budget, and past the release wait): w0's finish and w2's admission into
    its room are both written once it is back, the finish first; the API never shows more
    holding quota than fits."""
    monkeypatch.setattr(manager_module, "RELEASE_WAIT_S", 0.01)

    async def go() -> None:
        manager, api = _setup()
        _fast_retries(manager)
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        api.refuse = 100
        manager.core.finish("ns/w0")
        manager.core.fire_timers(manager.core.now + 1.0)
        await manager.schedule_once()
        assert manager.core.workload("ns/w2").holds_quota
        await manager.status_writes.join(10)
        assert api.refused == 100 and api.refuse == 0
        conditions = api.status_of("w0")["conditions"]
        assert any(c["type"] == "Finished" and c["status"] == "True" for c in conditions)
        assert _holds_quota(api.objects[WORKLOADS + "w2"])
        assert api.puts[-2:] == ["w0", "w2"]
        assert api.most_holding == 2, "the admission waited for the release however long it took"
        assert manager.release_order.unwritten == 0
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_a_write_that_keeps_conflicting_is_retried_not_counted_written() -> None:
    async def go() -> None:
        manager, api = _setup()
        _fast_retries(manager)
        api.conflicts = 3 * manager_module.MAX_CONFLICT_RETRIES
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(10)
        assert api.conflicts == 0
        assert _holds_quota(api.objects[WORKLOADS + "w0"]) and _holds_quota(api.objects[WORKLOADS + "w1"])
        assert manager.status_writes.dropped == 0
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_a_finish_stored_by_another_writer_does_not_hold_the_next_admission() -> None:
    async def go() -> None:
        manager, api = _setup()
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        # Someone else (a job controller elsewhere) stores w0 as Finished; we only read it.
        finished = copy.deepcopy(api.objects[WORKLOADS + "w0"])
        finished["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded",
                                                 "message": "done", "lastTransitionTime": "t"})
        api.objects[WORKLOADS + "w0"] = api._store(WORKLOADS + "w0", finished)
        manager._core_handler(EventType.MODIFIED, api.objects[WORKLOADS + "w0"], None)
        manager.core.fire_timers(manager.core.now + 1.0)
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert _holds_quota(api.objects[WORKLOADS + "w2"]), "admitted at once, nothing to wait for"
        assert api.puts.count("w0") == 1 and manager.release_order.unwritten == 0
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_only_a_pending_message_change_may_wait() -> None:
    def pending(message: str, reason: str = "Pending") -> dict[str, Any]:
        return {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": reason,
                                "message": message, "lastTransitionTime": "t"}]}

    assert only_pending_message_changed(pending("3 more needed"), pending("2 more needed"))
    assert not only_pending_message_changed(pending("a"), pending("a"))
    assert not only_pending_message_changed(pending("a"), pending("b", reason="Inadmissible"))
    admitted = {"admission": {"clusterQueue": "cq"}, "conditions": [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m"}]}
    assert not only_pending_message_changed(pending("a"), admitted)
    assert not only_pending_message_changed(pending("a"), {**pending("b"), "requeueState": {"count": 1}})


def test_a_pending_notice_is_a_never_admitted_workload_told_it_waits() -> None:
    def pending(message: str, **extra: Any) -> dict[str, Any]:
        return {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                "message": message}], **extra}

    admitted = {"admission": {"clusterQueue": "cq"}, "conditions": [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m"}]}
    assert pending_notice({}, pending("waiting"))
    assert pending_notice(pending("a"), pending("b"))
    assert not pending_notice({}, admitted)  # an admission
    assert not pending_notice(admitted, pending("evicted"))  # an eviction
    finished = {"conditions": [{"type": "Finished", "status": "True"}]}
    assert not pending_notice({}, {"conditions": [*pending("a")["conditions"], *finished["conditions"]]})


def test_pending_notices_give_way_while_the_request_budget_is_low() -> None:
    async def go() -> None:
        manager, api = _setup()
        api.limiter = TokenBucket(qps=0.001, burst=10)
        for _ in range(8):
            api.limiter.reserve()  # 2 of 10 tokens left
        await manager.schedule_once()  # decides; the writes are driven one by one below
        # w0 and w1 are admitted: written; w2 only learns it is pending: it waits.
        assert await manager._write_workload_status("ns/w0") is None
        assert await manager._write_workload_status("ns/w1") is None
        assert await manager._write_workload_status("ns/w2") == manager_module.PENDING_NOTICE_RETRY_S
        assert sorted(api.puts) == ["w0", "w1"]
        api.limiter = TokenBucket(qps=-1, burst=0)
        manager.status_writes.start()  # w0 and w1 again (nothing left to write), then w2
        await manager.status_writes.join(5)
        assert sorted(api.puts) == ["w0", "w1", "w2"]
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_pending_notices_give_way_while_admissions_wait_for_a_writer() -> None:
    """With no client limit, a backlog of urgent writes (every writer busy) holds notices back."""
    async def go() -> None:
        manager, api = _setup()
        api.limiter = TokenBucket(qps=-1, burst=0)
        await manager.schedule_once()  # queues w0 and w1 (urgent) and w2 (a notice); no worker runs
        assert manager.status_writes.urgent_waiting == 2
        assert await manager._write_workload_status("ns/w2") == manager_module.PENDING_NOTICE_RETRY_S
        assert api.puts == []
        manager.status_writes.start()
        await manager.status_writes.join(5)
        assert manager.status_writes.urgent_waiting == 0
        assert sorted(api.puts) == ["w0", "w1", "w2"]
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_no_cycle_starts_while_the_writers_are_behind(monkeypatch: Any) -> None:
    """The core decides no further ahead than the writers carry: with a backlog limit of
    one, the first admission holds the next cycle until a writer takes it (one admission a
    cycle here: without followers, which would admit w1 in w0's cycle)."""
    monkeypatch.setattr(manager_module, "WRITE_BACKLOG_LIMIT", 1)

    async def go() -> None:
        manager, api = _setup(scheduling=replace(TUNED, followers_per_cycle=0))
        await manager.schedule_once()  # w0 admitted and queued; no writer runs yet
        assert manager.status_writes.urgent_waiting == 1
        holding = {k for k, r in manager.core.all_workloads().items() if r.holds_quota}
        assert holding == {"ns/w0"}, "w1 fits too, but its cycle waits for the writers"
        manager._kick.clear()
        await manager.schedule_once()  # an informer event meanwhile: still held
        assert {k for k, r in manager.core.all_workloads().items() if r.holds_quota} == {"ns/w0"}
        manager.status_writes.start()
        await api.until(lambda: "w0" in api.puts)
        assert manager._kick.is_set(), "a writer taking the backlog wakes the scheduler"
        await manager.schedule_once()
        assert {k for k, r in manager.core.all_workloads().items() if r.holds_quota} == {"ns/w0", "ns/w1"}
        await manager.status_writes.join(5)
        assert sorted(api.puts) == ["w0", "w1"]
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_a_pending_notice_waits_at_most_its_longest_deferral() -> None:
    """A backlog that lasts does not keep a user from learning why the job waits."""
    async def go() -> None:
        manager, api = _setup()
        api.limiter = TokenBucket(qps=-1, burst=0)
        await manager.schedule_once()
        assert await manager._write_workload_status("ns/w2") == manager_module.PENDING_NOTICE_RETRY_S
        held = manager._notice_held_since["ns/w2"]
        manager._notice_held_since["ns/w2"] = held - manager_module.PENDING_NOTICE_MAX_DEFER_S
        assert manager.status_writes.urgent_waiting == 2  # still a backlog
        assert await manager._write_workload_status("ns/w2") is None
        assert api.puts == ["w2"]
        assert "ns/w2" not in manager._notice_held_since
        await manager.status_writes.shutdown(drain=False)

    asyncio.run(go())


def test_queue_statuses_take_a_bounded_share_of_a_short_request_budget() -> None:
    """While the budget is short, queue statuses are written at least every 10 s, or less
    often where a pass over every queue would take over 5 % of the client's requests."""
    assert queue_status_max_defer(60, 300.0) == 10.0  # 60 requests per 10 s of 3,000
    assert queue_status_max_defer(60, 50.0) == 24.0  # Kueue's benchmark setting: 5 % of 50 QPS
    assert queue_status_max_defer(2000, 300.0) == 2000 / 15.0  # 1,000 ClusterQueues and LocalQueues
    assert queue_status_max_defer(2000, None) == 10.0  # no client limit: never short


def test_a_reservation_that_moved_is_written_as_its_release_then_the_new_one() -> None:
    """Released and reserved again with another flavor before the release was written:
    Kueue's API refuses a reserved admission that changes, so the release goes first."""
    async def go() -> None:
        manager, api = _setup()
        api.validate = True
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert api.admissions["w0"] == [{"cpu": "on-demand"}]
        rec = manager.core.workload("ns/w0")
        assert rec.assignment is not None
        rec.assignment.podsets[0].flavors = {"cpu": "spot"}  # the core's new reservation
        owe_status_writes(manager.core, "ns/w0")
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert manager.status_writes.failures("ns/w0") == 0
        assert api.admissions["w0"] == [{"cpu": "on-demand"}, None, {"cpu": "spot"}]
        assert _holds_quota(api.objects[WORKLOADS + "w0"])
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_two_released_workloads_each_reusing_the_others_room_do_not_wait_for_each_other() -> None:
    """w0 and w1 are released and reserved again before either release was written, each
    (as the core may decide) in room the other's release freed. Each admission waits for
    the other's release; the releases themselves wait for nothing, so both go at once."""
    async def go() -> None:
        manager, api = _setup()
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert _holds_quota(api.objects[WORKLOADS + "w0"]) and _holds_quota(api.objects[WORKLOADS + "w1"])
        manager.release_order.released({"ns/w0", "ns/w1"})
        manager.release_order.admitted({"ns/w0", "ns/w1"})
        for key in ("ns/w0", "ns/w1"):
            manager.status_writes.add(key, urgent=True)
        await manager.status_writes.join(2)  # the release wait is 10 s: no waiting it out
        assert manager.release_order.unwritten == 0
        assert [c["status"] for c in api.status_of("w0")["conditions"] if c["type"] == "QuotaReserved"] \
            == ["True"]
        assert api.puts.count("w0") == 3 and api.puts.count("w1") == 3, "admitted, released, admitted again"
        assert api.most_holding == 2
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_a_release_of_an_admission_never_written_holds_nothing_back() -> None:
    """w0 is admitted and finished before its admission was written: the API never showed it
    holding quota, so w2, admitted into that room, is written without waiting for w0's next
    write (which, for a workload evicted rather than finished, can be a pending notice that
    gives way to other writes while the request budget is low)."""
    async def go() -> None:
        manager, api = _setup()
        await manager.schedule_once()  # w0 and w1 admitted in the core; nothing written yet
        assert manager.core.finish("ns/w0")
        manager.core.fire_timers(manager.core.now + 1.0)
        await manager.schedule_once()
        assert manager.core.workload("ns/w2").holds_quota
        assert manager.release_order.unwritten == 0
        assert await manager._write_workload_status("ns/w2") is None
        assert _holds_quota(api.objects[WORKLOADS + "w2"])
        await manager.status_writes.shutdown(drain=False)

    asyncio.run(go())


def test_a_stored_reservation_changing_waits_for_no_release() -> None:
    """w0's reservation is stored; its pods becoming ready takes no new room, so that write
    does not wait for a release the API has not seen yet (w1's here, written slowly)."""
    async def go() -> None:
        manager, api = _setup()
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        manager.release_order.released({"ns/w1"})  # owed, not written yet
        assert manager.core.set_pods_ready("ns/w0")
        owe_status_writes(manager.core, "ns/w0")  # its record changed: a status write is owed
        await manager.schedule_once()
        assert manager.release_order.may_write("ns/w0")
        assert await manager._write_workload_status("ns/w0") is None
        ready = [c["status"] for c in api.status_of("w0")["conditions"] if c["type"] == "PodsReady"]
        assert ready == ["True"]
        await manager.status_writes.shutdown(drain=False)

    asyncio.run(go())


def _preempting_setup() -> tuple[QueueManager, FakeApi, dict[str, Any]]:
    """w0 and w1 fill the queue; ``urgent`` (priority 10) may preempt either."""
    manager, api = _setup()
    cq = copy.deepcopy(_objects()[1])
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    manager._core_handler(EventType.MODIFIED, cq, None)
    manager._core_handler(EventType.DELETED, _objects()[5], None)  # w2: not part of these tests
    urgent = copy.deepcopy(_objects()[5])
    urgent["metadata"]["name"] = "urgent"
    urgent["spec"]["priority"] = 10
    return manager, api, urgent


def _arrives(manager: QueueManager, api: FakeApi, obj: dict[str, Any]) -> None:
    manager._core_handler(EventType.ADDED, api._store(WORKLOADS + obj["metadata"]["name"], obj), None)


def _evicted_in_api(api: FakeApi) -> list[str]:
    return sorted(name.rsplit("/", 1)[1] for name, obj in api.objects.items()
                  if any(c["type"] == "Evicted" and c["status"] == "True"
                         for c in (obj.get("status") or {}).get("conditions") or ()))


def test_a_victim_whose_admission_was_never_written_is_taken_back_without_an_eviction() -> None:
    """The core admitted w0 and w1, and chose one as the victim of a higher-priority
    workload before any write started: the API never shows that workload admitted, so it
    must not show it evicted either; the preemptor's admission waits for nothing."""
    async def go() -> None:
        manager, api, urgent = _preempting_setup()
        await manager.schedule_once()  # w0 and w1 admitted in the core only
        _arrives(manager, api, urgent)
        await manager.schedule_once()
        assert manager.core.workload("ns/urgent").holds_quota
        victims = [k for k in ("ns/w0", "ns/w1") if not manager.core.workload(k).holds_quota]
        assert len(victims) == 1 and manager.core.workload(victims[0]).evictions == []
        manager.status_writes.start()
        await manager.status_writes.join(5)
        assert _holds_quota(api.objects[WORKLOADS + "urgent"])
        assert _evicted_in_api(api) == []
        assert api.most_holding == 2
        # Counted as the API shows them: two admissions, the one taken back not among them.
        assert _value(manager.metrics, "kueue_admitted_workloads_total", cluster_queue="cq",
                      priority_class="") == 2
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_a_victim_whose_admission_write_started_is_evicted() -> None:
    async def go() -> None:
        manager, api, urgent = _preempting_setup()
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)  # w0 and w1 stored as admitted
        _arrives(manager, api, urgent)
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert len(_evicted_in_api(api)) == 1
        await manager.status_writes.shutdown()

    asyncio.run(go())


def _with_cpu(obj: dict[str, Any], name: str, cpu: str) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["metadata"]["name"] = name
    new["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return new


def test_a_withdrawn_victims_write_in_flight_holds_no_admission_back() -> None:
    """w1's pending notice is on its way when w1 is admitted and, before any write carries
    that admission, taken back for a preemptor: the write in flight holds no reservation, so
    the preemptor's admission waits for no write of w1's."""
    async def go() -> None:
        manager, api, urgent = _preempting_setup()
        for obj in _objects()[3:5]:  # w0 and w1 come later, or not at all
            manager._core_handler(EventType.DELETED, obj, None)
        manager.status_writes.start()
        _arrives(manager, api, _with_cpu(_objects()[4], "hog", "2"))
        await manager.schedule_once()
        await manager.status_writes.join(5)  # hog stored as admitted
        api.gates["w1"] = asyncio.Event()
        _arrives(manager, api, api.objects[WORKLOADS + "w1"])
        await manager.schedule_once()  # w1 does not fit: told it waits, a write that stays in flight
        await api.at_gate.setdefault("w1", asyncio.Event()).wait()
        manager._core_handler(EventType.DELETED, api.objects.pop(WORKLOADS + "hog"), None)
        manager.core.fire_timers(manager.core.now + 1.0)  # past the batched requeue of w1
        await manager.schedule_once()
        assert manager.core.workload("ns/w1").holds_quota  # admitted in the core only
        _arrives(manager, api, _with_cpu(urgent, "urgent", "2"))
        await manager.schedule_once()
        assert manager.core.workload("ns/urgent").holds_quota
        w1 = manager.core.workload("ns/w1")
        assert not w1.holds_quota and w1.evictions == []
        assert manager.release_order.unwritten == 0 and manager.release_order.may_write("ns/urgent")
        api.gates["w1"].set()
        await manager.status_writes.join(5)
        assert _holds_quota(api.objects[WORKLOADS + "urgent"])
        assert not _holds_quota(api.objects[WORKLOADS + "w1"]) and _evicted_in_api(api) == []
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_a_release_written_ahead_of_a_new_reservation_does_not_publish_it() -> None:
    """w0 was released and reserved again before its release was written; the new
    reservation waits for w1's release, so w0's release goes alone first. That write carries
    nothing of the new reservation: until a write does, it may still be taken back."""
    async def go() -> None:
        manager, api = _setup()
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        rec = manager.core.workload("ns/w0")
        assert not rec.unpublished
        api.gates["w1"] = asyncio.Event()  # w1's release stays unwritten
        manager.release_order.released({"ns/w0", "ns/w1"})
        manager.release_order.admitted({"ns/w0", "ns/w1"})
        rec.unpublished = True  # the core's new reservation of w0, not sent yet
        for key in ("ns/w0", "ns/w1"):
            manager.status_writes.add(key, urgent=True)
        await api.until(lambda: not _holds_quota(api.objects[WORKLOADS + "w0"]))
        assert rec.unpublished
        admitted = _value(manager.metrics, "kueue_admitted_workloads_total", cluster_queue="cq",
                          priority_class="")
        assert admitted == 2  # counted when a write carries it
        api.gates["w1"].set()
        await manager.status_writes.join(5)
        assert _holds_quota(api.objects[WORKLOADS + "w0"]) and not rec.unpublished
        await manager.status_writes.shutdown()

    asyncio.run(go())
