"""``status.resourceRequests``: written once the scheduler leaves a workload pending, gone at
its reservation, as Kueue's scheduler writes and clears them."""

from __future__ import annotations

from typing import Any

from pykueue.api import keys
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.status import workload_status

API = keys.API_VERSION


def _workload(name: str, cpu: str, count: int = 1) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": f"2026-01-01T00:00:0{count}Z"},
            "spec": {"queueName": "lq", "podSets": [
                {"name": "main", "count": count, "template": {"spec": {"containers": [container]}}}]}}


def _core() -> QueueingCore:
    core = QueueingCore()
    for obj in ({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
                {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
                    "namespaceSelector": {}, "resourceGroups": [{
                        "coveredResources": ["cpu", "memory"], "flavors": [
                            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "2"},
                                                        {"name": "memory", "nominalQuota": "10Gi"}]}]}]}},
                {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
                 "spec": {"clusterQueue": "cq"}}):
        core.apply(obj)
    return core


def test_a_workload_left_pending_shows_its_total_requests_until_admitted() -> None:
    core = _core()
    core.apply(_workload("big", "500m", count=3))
    core.apply(_workload("small", "1", count=1))
    core.run_until_idle()
    small = workload_status(core.workload("ns/small"), core.now)
    assert "resourceRequests" not in small and small.get("admission")
    big = core.workload("ns/big")
    assert workload_status(big, core.now)["resourceRequests"] == [
        {"name": "main", "resources": {"cpu": "1500m", "memory": "3Gi"}}]
    core.finish("ns/small")
    core.run_until_idle()
    admitted = workload_status(big, core.now)
    assert admitted.get("admission") and "resourceRequests" not in admitted


def test_a_workload_not_evaluated_yet_has_none() -> None:
    core = _core()
    core.apply(_workload("new", "1"))
    assert "resourceRequests" not in workload_status(core.workload("ns/new"), core.now)


def test_read_back_after_a_restart_they_stay() -> None:
    core = _core()
    pending = _workload("waiting", "3")
    pending["status"] = {"resourceRequests": [{"name": "main", "resources": {"cpu": "3", "memory": "1Gi"}}]}
    core.apply(pending)
    assert workload_status(core.workload("ns/waiting"), core.now)["resourceRequests"] == [
        {"name": "main", "resources": {"cpu": "3", "memory": "1Gi"}}]
