"""Informer events into the core: quota reserved by another writer is adopted, not overwritten."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.core.status import workload_status
from pykueue.manager.runtime.controllers.manager import QueueManager

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
    assert not manager.core.workload("ns/w0").holds_quota
    manager._core_handler(EventType.MODIFIED, _admitted(wl), wl)
    assert manager.core.workload("ns/w0").holds_quota
    assert manager.core.usage_of("cq") == {("on-demand", "cpu"): 1000}


def test_a_stale_echo_of_our_own_admission_is_not_adopted_after_eviction() -> None:
    manager = _manager()
    wl = _objects()[3]
    manager._core_handler(EventType.ADDED, wl, None)
    manager._reserved_by_us.add("ns/w0")
    manager._core_handler(EventType.MODIFIED, _admitted(wl), wl)
    assert not manager.core.workload("ns/w0").holds_quota


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
    manager._written.wrote("ns/w0", _with_topology(wl, "n2", "3"), ours, _with_topology(wl, "n2", "3"))
    manager._agreed["ns/w0"] = ({"main": ours["status"]["admission"]["podSetAssignments"][0][
        "topologyAssignment"]}, {})
    manager._core_handler(EventType.MODIFIED, _with_topology(wl, "n2", "4"), None)
    manager._core_handler(EventType.MODIFIED, ours, None)  # the echo of our write
    assert adopted == ["n2"]
    manager._core_handler(EventType.MODIFIED, _with_topology(wl, "n3", "6"), None)  # unchanged since
    assert adopted == ["n2"]


def _stopped_queue_objects(stop: str) -> list[dict[str, Any]]:
    objs = _objects()[:3]
    objs[1]["spec"]["stopPolicy"] = stop
    return objs


def _conditions(manager: QueueManager, key: str) -> dict[str, tuple[str, str, str]]:
    status = workload_status(manager.core.workload(key), manager.core.now)
    assert "admission" not in status
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def test_a_queue_stopped_before_start_drains_what_it_had_admitted_in_any_informer_order() -> None:
    # Kueue's workload controller evicts an admitted workload of a HoldAndDrain queue whenever
    # it reconciles it, start-up included, whichever of the queue and the workload came first.
    for first_the_workload in (False, True):
        objs = _stopped_queue_objects("HoldAndDrain")
        wl = _admitted(_objects()[3])
        manager = QueueManager(KubeClient(_NoClient()))
        for obj in ([wl, *objs] if first_the_workload else [*objs, wl]):
            manager._core_handler(EventType.ADDED, obj, None)
        manager.core.run_until_idle()
        rec = manager.core.workload("ns/w0")
        assert rec.stopping is not None and rec.holds_quota  # evicted, quota held until stopped
        manager.jobs.stop_evicted()  # no job runs this Workload: nothing to wait for
        manager.core.run_until_idle()
        assert (rec.status, rec.evictions) == ("Pending", ["ClusterQueueStopped"])
        assert manager.core.usage_of("cq") == {("on-demand", "cpu"): 0}
        assert "ns/w0" in manager.core.take_changes().written  # to be written
        conds = _conditions(manager, "ns/w0")
        assert conds["Evicted"] == ("True", "ClusterQueueStopped", "The ClusterQueue is stopped")
        assert conds["Requeued"] == ("False", "ClusterQueueStopped", "The ClusterQueue is stopped")


def test_a_reservation_read_in_a_held_queue_is_released_without_an_eviction() -> None:
    objs = _stopped_queue_objects("Hold")
    wl = _admitted(_objects()[3])
    wl["status"]["conditions"] = [{"type": "QuotaReserved", "status": "True"}]  # a check is pending
    manager = QueueManager(KubeClient(_NoClient()))
    for obj in [*objs, wl]:
        manager._core_handler(EventType.ADDED, obj, None)
    manager.core.run_until_idle()
    rec = manager.core.workload("ns/w0")
    assert (rec.status, rec.evictions) == ("Pending", [])
    assert manager.core.usage_of("cq") == {("on-demand", "cpu"): 0}
    conds = _conditions(manager, "ns/w0")
    assert set(conds) == {"QuotaReserved", "Admitted"} and conds["QuotaReserved"][0] == "False"
    assert conds["Admitted"][:2] == ("False", "NoReservation")
