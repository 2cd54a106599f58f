"""The tiered reason costs no extra status writes: QuotaReserved and Admitted go in one write,
and an unchanged tier is not written again, cycle after cycle."""

from __future__ import annotations

import asyncio
import copy

from pykueue.kube.informer import EventType
from pykueue.manager.core.config import CoreConfig

from .core_access import owe_status_writes
from .test_status_writes import WORKLOADS, _setup


def test_a_tier_is_written_once_with_its_admitted_condition() -> None:
    async def go() -> None:
        # Kueue's UnadmittedWorkloadsObservability (off by default in v0.19.2).
        manager, api = _setup(CoreConfig(tiered_reasons=True))
        manager.status_writes.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert api.puts.count("w2") == 1
        conds = {c["type"]: (c["status"], c["reason"]) for c in api.status_of("w2")["conditions"]}
        assert conds == {"QuotaReserved": ("False", "WaitingForQuota"),
                         "Admitted": ("False", "NoReservation")}
        for _ in range(3):  # later cycles find the same tier: nothing to write
            owe_status_writes(manager.core, "ns/w2")
            manager.core.requeue_inadmissible()
            await manager.schedule_once()
            await manager.status_writes.join(5)
        assert api.puts.count("w2") == 1
        # A new tier is written (once): the user deactivates the workload.
        stored = copy.deepcopy(api.objects[WORKLOADS + "w2"])
        stored["spec"]["active"] = False
        api.objects[WORKLOADS + "w2"] = stored
        manager._core_handler(EventType.MODIFIED, copy.deepcopy(stored), None)
        await manager.schedule_once()
        await manager.status_writes.join(5)
        assert api.puts.count("w2") == 2
        assert [c["reason"] for c in api.status_of("w2")["conditions"] if c["type"] == "QuotaReserved"] == \
            ["Deactivated"]
        await manager.status_writes.shutdown()

    asyncio.run(go())
