"""Victims at the end of their run are not evicted.

With the manager's preemption patience, a preemptor waits while a job finishes and takes its
room; without it (or once the patience is over), an eviction written over a copy that its
job's controller has meanwhile stored finished is not written: the finish is taken instead,
and the preemptor gets the quota it released."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.workload_state import ADMITTED, FINISHED, PENDING
from pykueue.manager.runtime.controllers.manager import QueueManager

from .test_publish_settle_writes import _queues, _workload
from .test_status_writes import AT_ONCE, WORKLOADS, FakeApi


def _types(api: FakeApi, name: str) -> dict[str, str]:
    return {c["type"]: c["status"] for c in api.status_of(name).get("conditions") or ()}


def _finished(api: FakeApi, name: str) -> dict[str, Any]:
    """Its job's controller stores it finished."""
    done = copy.deepcopy(api.objects[WORKLOADS + name])
    done["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded",
                                         "message": "done", "lastTransitionTime": "2026-01-01T00:00:05Z"})
    return api._store(WORKLOADS + name, done)


async def _running_low(manager: QueueManager) -> FakeApi:
    low = _workload("low", 0, 0)
    api = FakeApi([low])
    manager.client = cast(KubeClient, api)
    for obj in (*_queues(), api.objects[WORKLOADS + "low"]):
        manager._core_handler(EventType.ADDED, obj, None)
    manager.status_writes.start()
    await manager.schedule_once()
    await manager.status_writes.join(5)
    assert _types(api, "low").get("Admitted") == "True"
    return api


def test_a_victim_stored_finished_meanwhile_is_not_evicted_and_the_preemptor_runs() -> None:
    async def go() -> None:
        manager = QueueManager(KubeClient(object()), scheduling=AT_ONCE)
        api = await _running_low(manager)
        _finished(api, "low")  # the manager has not seen that yet
        manager._core_handler(EventType.ADDED, api._store(WORKLOADS + "high", _workload("high", 10, 1)), None)
        await manager.schedule_once()  # decides to preempt low on the copy it has
        await manager.status_writes.join(5)
        rec = manager.core.workload("ns/low")
        assert rec is not None and rec.status == FINISHED
        assert "Evicted" not in _types(api, "low") and "Preempted" not in _types(api, "low")
        assert _types(api, "low")["Finished"] == "True"

        await manager.schedule_once()  # the quota the finish released
        await manager.status_writes.join(5)
        high = manager.core.workload("ns/high")
        assert high is not None and high.status == ADMITTED
        assert _types(api, "high").get("QuotaReserved") == "True"
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_with_the_managers_patience_the_preemptor_waits_for_the_finish() -> None:
    async def go() -> None:
        manager = QueueManager(KubeClient(object()))  # TUNED: preemption_patience_s > 0
        api = await _running_low(manager)
        manager._core_handler(EventType.ADDED, api._store(WORKLOADS + "high", _workload("high", 10, 1)), None)
        await manager.schedule_once()
        await manager.status_writes.join(5)
        high = manager.core.workload("ns/high")
        assert high is not None and high.status == PENDING
        assert "Evicted" not in _types(api, "low")  # still running, not preempted yet
        deadline = manager.core.next_deadline()
        assert deadline is not None  # the scheduler is woken when the patience is over

        manager._core_handler(EventType.MODIFIED, _finished(api, "low"), None)  # seen finishing
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert high.status == ADMITTED and _types(api, "high").get("QuotaReserved") == "True"
        assert "Evicted" not in _types(api, "low") and _types(api, "low")["Finished"] == "True"
        await manager.status_writes.shutdown()

    asyncio.run(go())
