"""A victim its job's controller stored finished before the manager saw it is not evicted:
the eviction write meets the newer copy, the finish is taken instead, and the preemptor gets
the quota the finish released."""

from __future__ import annotations

import asyncio
import copy
from typing import cast

from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.workload_state import ADMITTED, FINISHED
from pykueue.manager.runtime.controllers.manager import QueueManager

from .test_publish_settle_writes import _queues, _workload
from .test_status_writes import WORKLOADS, FakeApi


def _types(api: FakeApi, name: str) -> dict[str, str]:
    return {c["type"]: c["status"] for c in api.status_of(name).get("conditions") or ()}


def test_a_victim_stored_finished_meanwhile_is_not_evicted_and_the_preemptor_runs() -> None:
    async def go() -> None:
        manager = QueueManager(KubeClient(object()))
        low = _workload("low", 0, 0)
        api = FakeApi([low])
        manager.client = cast(KubeClient, api)
        for obj in (*_queues(), api.objects[WORKLOADS + "low"]):
            manager._core_handler(EventType.ADDED, obj, None)
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert _types(api, "low").get("Admitted") == "True"

        # Its job's controller stores it finished; the manager has not seen that yet.
        done = copy.deepcopy(api.objects[WORKLOADS + "low"])
        done["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded",
                                             "message": "done", "lastTransitionTime": "2026-01-01T00:00:05Z"})
        api._store(WORKLOADS + "low", done)

        high = _workload("high", 10, 1)
        manager._core_handler(EventType.ADDED, api._store(WORKLOADS + "high", high), None)
        await manager.schedule_once()  # decides to preempt low on the copy it has
        await manager.status_writes.join(5)
        rec = manager.core.workload("ns/low")
        assert rec is not None and rec.status == FINISHED
        assert "Evicted" not in _types(api, "low") and "Preempted" not in _types(api, "low")
        assert _types(api, "low")["Finished"] == "True"

        await manager.schedule_once()  # the quota the finish released
        await manager.status_writes.join(5)
        high_rec = manager.core.workload("ns/high")
        assert high_rec is not None and high_rec.status == ADMITTED
        assert _types(api, "high").get("QuotaReserved") == "True"
        await manager.status_writes.shutdown()

    asyncio.run(go())
