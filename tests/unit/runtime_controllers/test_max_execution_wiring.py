"""The manager enforces a Workload's maximum execution time as Kueue's workload controller
does: it wakes up when the time is up (not before, not by polling), deactivates the
workload (``spec.active: false`` written before the status that says why), writes the
eviction with Kueue's reason and message, records Kueue's two Events and counts the
eviction in Kueue's metrics. The API is the status writers' fake, extended to take the
``spec`` patch; the Events go through the real recorder to a transport that keeps them.
"""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any, cast

from pykueue.kube.client import MERGE_PATCH, KubeClient
from pykueue.kube.events import EventRecorder
from pykueue.kube.informer import EventType
from pykueue.kube.merge_patch import apply_merge_patch
from pykueue.manager.core import max_execution
from pykueue.manager.core.objects import format_time
from pykueue.manager.runtime.controllers.manager import QueueManager

from .test_events_recorded import Sent
from .test_metrics_feed import _value
from .test_queue_status import _objects
from .test_status_writes import WORKLOADS, FakeApi


class SpecPatchingApi(FakeApi):
    """Also takes the merge patch of ``spec`` Kueue's deactivation is."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        super().__init__(objects)
        self.spec_patches: list[tuple[str, dict[str, Any]]] = []
        self.order: list[str] = []  # "spec" or "status", as the patches came

    async def patch(self, path: str, body: dict[str, Any], content_type: str = MERGE_PATCH,
                    query: Any = None) -> dict[str, Any]:
        self.order.append("spec" if "spec" in body else "status")
        if "spec" not in body:
            return await super().patch(path, body, content_type, query)
        name = path.rsplit("/", 1)[1]
        self.spec_patches.append((name, body["spec"]))
        current = self.objects[path]
        spec = apply_merge_patch(current.get("spec") or {}, body["spec"])
        return self._store(path, {**current, "spec": spec})


def _limited(limit_s: int, admitted_ago_s: int, past_s: int | None = None) -> dict[str, Any]:
    """w0 with a limit, read back admitted ``admitted_ago_s`` seconds ago, pods ready."""
    wl = copy.deepcopy(_objects()[3])
    wl["metadata"]["uid"] = "w0-uid"
    wl["spec"]["maximumExecutionTimeSeconds"] = limit_s
    since = format_time(float(int(time.time()) - admitted_ago_s))
    wl["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": "1"}}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
             "message": "Quota reserved in ClusterQueue cq", "lastTransitionTime": since},
            {"type": "Admitted", "status": "True", "reason": "Admitted",
             "message": "The workload is admitted", "lastTransitionTime": since},
            {"type": "PodsReady", "status": "True", "reason": "Started", "lastTransitionTime": since,
             "message": "All pods reached readiness and the workload is running"}]}
    if past_s is not None:
        wl["status"][max_execution.PAST] = past_s
    return wl


def _manager(wl: dict[str, Any]) -> tuple[QueueManager, SpecPatchingApi, Sent]:
    sent = Sent()
    manager = QueueManager(KubeClient(object()), events=EventRecorder(sent, instance="test"))
    api = SpecPatchingApi([wl])
    manager.client = cast(KubeClient, api)
    for obj in _objects()[:3]:
        manager._core_handler(EventType.ADDED, obj, None)
    stored = copy.deepcopy(api.objects[WORKLOADS + "w0"])
    manager.informers["Workload"]._store["ns/w0"] = stored  # as the informer has it
    manager._core_handler(EventType.ADDED, copy.deepcopy(stored), None)
    return manager, api, sent


def test_the_manager_wakes_up_when_the_time_is_up() -> None:
    wl = _limited(limit_s=600, admitted_ago_s=100, past_s=200)
    manager, _, _ = _manager(wl)
    due = max_execution.workload_due(wl)
    assert due is not None
    assert manager.core.next_deadline() == due, "the next wake-up is the rule's due time"
    assert due == max_execution.admitted_since(wl["status"]) + 600 - 200  # type: ignore[operator]

    async def go() -> None:
        await manager.schedule_once()

    asyncio.run(go())
    assert manager.core.workload("ns/w0").status == "Admitted", "not before its time"


def test_a_workload_past_its_time_is_deactivated_with_kueues_reason_events_and_metrics() -> None:
    async def go() -> None:
        manager, api, sent = _manager(_limited(limit_s=10, admitted_ago_s=20))
        manager.status_writes.start()
        manager.events.start()
        await manager.schedule_once()
        await manager.status_writes.join(5)
        await manager.events.queue.join(5)

        assert api.spec_patches == [("w0", {"active": False})]
        assert api.order[0] == "spec", "deactivated first, then evicted, as Kueue does"
        stored = api.objects[WORKLOADS + "w0"]
        assert stored["spec"]["active"] is False
        status = stored["status"]
        conditions = {c["type"]: c for c in status["conditions"]}
        evicted = conditions["Evicted"]
        assert (evicted["status"], evicted["reason"], evicted["message"]) == (
            "True", "DeactivatedDueToMaximumExecutionTimeExceeded",
            "The workload is deactivated due to exceeding the maximum execution time")
        # Nothing runs it here, so the quota goes at once (a job is stopped first).
        assert conditions["QuotaReserved"]["status"] == "False" and "admission" not in status
        assert conditions["Admitted"]["status"] == "False"
        assert status["schedulingStats"] == {"evictions": [
            {"reason": "Deactivated", "underlyingCause": "MaximumExecutionTimeExceeded", "count": 1}]}
        # Started afresh at the deactivation, then this admission's run added.
        assert 20 <= status[max_execution.PAST] <= 21
        assert manager.core.usage_of("cq") == {("on-demand", "cpu"): 0}

        assert sent.said("w0") == [
            ("Warning", "MaximumExecutionTimeExceeded", "The maximum execution time (10s) exceeded"),
            ("Normal", "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded",
             "The workload is deactivated due to exceeding the maximum execution time"),
        ]
        [warning] = [r for r in sent.requests if r.body["reason"] == "MaximumExecutionTimeExceeded"]
        assert warning.body["reportingController"] == "kueue-workload-controller"
        assert warning.body["action"] == "MaximumExecutionTimeExceeded"

        labels = {"cluster_queue": "cq", "reason": "Deactivated",
                  "underlying_cause": "MaximumExecutionTimeExceeded", "priority_class": ""}
        assert _value(manager.metrics, "kueue_evicted_workloads_total", **labels) == 1
        assert _value(manager.metrics, "kueue_evicted_workloads_once_total", **labels) == 1
        await manager.status_writes.shutdown()
        await manager.events.stop()

    asyncio.run(go())


def test_time_run_before_that_is_read_after_the_admission_brings_the_wake_up_forward() -> None:
    wl = _limited(limit_s=600, admitted_ago_s=100)
    manager, _, _ = _manager(wl)
    assert manager.core.next_deadline() == max_execution.workload_due(wl)
    counted = copy.deepcopy(wl)
    counted["status"][max_execution.PAST] = 550  # an earlier admission's run, read late
    manager._core_handler(EventType.MODIFIED, counted, wl)
    due = max_execution.workload_due(counted)
    assert due is not None and due < time.time()
    assert manager.core.next_deadline() == due

    async def go() -> None:
        await manager.schedule_once()

    asyncio.run(go())
    rec = manager.core.workload("ns/w0")
    assert rec.deactivated and rec.evictions == ["DeactivatedDueToMaximumExecutionTimeExceeded"]


class _Replaces:
    def __init__(self) -> None:
        self.replaced: list[dict[str, Any]] = []

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.replaced.append(body)
        return body


def test_a_pending_workload_follows_its_suspended_jobs_limit() -> None:
    """The label may change while the job is suspended (the webhook allows it then): the
    Workload not yet holding quota takes the new limit (Kueue deletes and recreates such a
    Workload; it is updated in place here, as for the queue name)."""
    manager = QueueManager(KubeClient(object()))
    client = _Replaces()
    manager.jobs.client = cast(KubeClient, client)
    lc = manager.jobs.registry.get("Job")
    stored = copy.deepcopy(_objects()[3])
    stored["spec"]["maximumExecutionTimeSeconds"] = 10
    manager.jobs.informers["Workload"]._store["ns/w0"] = stored
    job = {"metadata": {"name": "j", "namespace": "ns", "uid": ""}}
    wanted = copy.deepcopy(stored)
    wanted["spec"]["maximumExecutionTimeSeconds"] = 20

    asyncio.run(manager.jobs._sync_workloads(lc, job, [wanted], create=False))
    [replaced] = client.replaced
    assert replaced["spec"]["maximumExecutionTimeSeconds"] == 20
    assert replaced["spec"]["queueName"] == "lq" and replaced["spec"]["podSets"] == stored["spec"]["podSets"]

    del wanted["spec"]["maximumExecutionTimeSeconds"]  # the label removed
    asyncio.run(manager.jobs._sync_workloads(lc, job, [wanted], create=False))
    assert "maximumExecutionTimeSeconds" not in client.replaced[-1]["spec"]

    stored["status"] = _limited(10, 0)["status"]  # holds quota: its spec stays
    asyncio.run(manager.jobs._sync_workloads(lc, job, [wanted], create=False))
    assert len(client.replaced) == 2
    del stored["status"]
    asyncio.run(manager.jobs._sync_workloads(lc, job, [copy.deepcopy(stored)], create=False))
    assert len(client.replaced) == 2, "nothing to follow: no write"
