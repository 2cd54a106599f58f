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


def _with_topology(wl: dict[str, Any], node: str, rv: str) -> dict[str, Any]:
    out = _admitted(wl)
    out["metadata"]["resourceVersion"] = rv
    out["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [{"domainCount": 1, "podCounts": {"universal": 1},
                    "valuesPerLevel": [{"universal": node}]}]}
    return out


def test_only_a_topology_someone_else_rewrote_is_followed(monkeypatch: Any) -> None:
    manager = _manager()
    adopted: list[str] = []
    monkeypatch.setattr(manager.core, "adopt_topology",
                        lambda obj: adopted.append(obj["status"]["admission"]["podSetAssignments"][0][
                            "topologyAssignment"]["slices"][0]["valuesPerLevel"][0]["universal"]) or True)
    wl = _objects()[3]
    manager._core_handler(EventType.ADDED, _with_topology(wl, "n1", "1"), None)  # read at start
    manager._core_handler(EventType.MODIFIED, _with_topology(wl, "n1", "2"), None)  # e.g. pods ready
    assert adopted == []
    manager._core_handler(EventType.MODIFIED, _with_topology(wl, "n2", "3"), None)  # the extender's swap
    assert adopted == ["n2"]
    # Our own write is in flight: an older copy arriving meanwhile is not someone else's rewrite.
    ours = _with_topology(wl, "n3", "5")
    manager._written["ns/w0"] = ("3", ours)
    manager._agreed["ns/w0"] = ({"main": ours["status"]["admission"]["podSetAssignments"][0][
        "topologyAssignment"]}, {})
    manager._core_handler(EventType.MODIFIED, _with_topology(wl, "n2", "4"), None)
    manager._core_handler(EventType.MODIFIED, ours, None)  # the echo of our write
    assert adopted == ["n2"]
    manager._core_handler(EventType.MODIFIED, _with_topology(wl, "n3", "6"), None)  # unchanged since
    assert adopted == ["n2"]
