"""Informer events into the core: quota reserved by another writer is adopted, not overwritten."""

from __future__ import annotations

import copy
from typing import Any

from kube.client import KubeClient
from kube.informer import EventType
from manager.runtime.controllers.manager import QueueManager

from .test_queue_status import _objects


class _NoClient:
    """Never called: these events are applied to the core without I/O."""


def _manager() -> QueueManager:
    manager = QueueManager(KubeClient(_NoClient()))
    for obj in _objects()[:3]:
        manager._core_handler(EventType.ADDED, obj, None)
    return manager


def _admitted(wl: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(wl)
    out["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": 1, "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": "1"}}]},
        "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}
    return out


def test_admission_written_by_someone_else_is_adopted() -> None:
    manager = _manager()
    wl = _objects()[3]
    manager._core_handler(EventType.ADDED, wl, None)
    assert not manager.core.workloads["ns/w0"].holds_quota
    manager._core_handler(EventType.MODIFIED, _admitted(wl), wl)
    assert manager.core.workloads["ns/w0"].holds_quota
    assert manager.core.usage_of("cq") == {("on-demand", "cpu"): 1000}


def test_a_stale_echo_of_our_own_admission_is_not_adopted_after_eviction() -> None:
    manager = _manager()
    wl = _objects()[3]
    manager._core_handler(EventType.ADDED, wl, None)
    manager._reserved_by_us.add("ns/w0")
    manager._core_handler(EventType.MODIFIED, _admitted(wl), wl)
    assert not manager.core.workloads["ns/w0"].holds_quota
