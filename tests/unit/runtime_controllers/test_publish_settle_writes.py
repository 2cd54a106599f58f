"""A contestable reservation's write waits for the settle time (``QueueingCore.publish_wait``):
taken back by a preemption meanwhile, it is never stored, so nothing is evicted."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any, cast

from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.settings import TUNED
from pykueue.manager.core.workload_state import ADMITTED, PENDING
from pykueue.manager.runtime.controllers.manager import QueueManager

from .test_status_writes import WORKLOADS, FakeApi

API = "kueue.x-k8s.io/v1beta2"
SETTLING = replace(TUNED, publish_settle_s=0.3)  # off in TUNED (see settings.py)


def _queues() -> list[dict[str, Any]]:
    return [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "on-demand"}},
        {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                      {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}},
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
         "spec": {"clusterQueue": "cq"}},
    ]


def _workload(name: str, priority: int, second: int) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": "1"}}}
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "creationTimestamp": f"2026-01-01T00:00:0{second}Z"},
            "spec": {"queueName": "lq", "priority": priority, "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}]}}


async def _after_a_higher_priority_one_ran() -> tuple[QueueManager, FakeApi]:
    """The queue once ran a priority-10 workload: lower ones admitted there are contestable."""
    manager = QueueManager(KubeClient(object()), scheduling=SETTLING)
    first = _workload("first-high", 10, 0)
    api = FakeApi([first])
    manager.client = cast(KubeClient, api)
    for obj in (*_queues(), first):
        manager._core_handler(EventType.ADDED, obj, None)
    manager.status_writes.start()
    await manager.schedule_once()
    await manager.status_writes.join(5)
    assert [a for a in api.admissions["first-high"] if a]  # the top priority is written at once
    manager.core.finish("ns/first-high")
    return manager, api


def _add(manager: QueueManager, api: FakeApi, obj: dict[str, Any]) -> None:
    manager._core_handler(EventType.ADDED, api._store(WORKLOADS + obj["metadata"]["name"], obj), None)


def test_a_reservation_taken_back_within_the_settle_time_is_never_written() -> None:
    async def go() -> None:
        manager, api = await _after_a_higher_priority_one_ran()
        _add(manager, api, _workload("low", 0, 1))
        await manager.schedule_once()
        low = manager.core.workload("ns/low")
        assert low is not None and low.status == ADMITTED and low.unpublished
        _add(manager, api, _workload("high", 10, 2))
        await manager.schedule_once()
        await manager.status_writes.join(5)
        high = manager.core.workload("ns/high")
        assert high is not None and high.status == ADMITTED
        assert low.status == PENDING and not low.evictions
        assert [a for a in api.admissions["high"] if a]
        assert not [a for a in api.admissions.get("low", []) if a], "low was never stored as admitted"
        assert "Evicted" not in {c["type"] for c in api.status_of("low").get("conditions") or ()}
        await manager.status_writes.shutdown()

    asyncio.run(go())


def test_an_uncontested_reservation_is_written_once_the_settle_time_is_over() -> None:
    async def go() -> None:
        manager, api = await _after_a_higher_priority_one_ran()
        _add(manager, api, _workload("low", 0, 1))
        started = time.time()
        await manager.schedule_once()
        await api.until(lambda: bool([a for a in api.admissions.get("low", []) if a]))
        assert time.time() - started >= SETTLING.publish_settle_s - 0.01  # not before it settled
        low = manager.core.workload("ns/low")
        assert low is not None and low.status == ADMITTED and not low.unpublished
        await manager.status_writes.shutdown()

    asyncio.run(go())
