"""The manager records Kueue's Events for what it writes: the status writer for each Workload
status it stores, the job reconciler for each action on a job.

The API is the status writers' fake (compare-and-swap on resourceVersions); the Events go
through the real recorder to a transport that keeps the requests, so what is checked is
what kube-apiserver would have received.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

from pykueue.api.wire import JSON
from pykueue.kube.client import KubeClient
from pykueue.kube.events import EventRecorder, Request
from pykueue.kube.informer import EventType
from pykueue.manager.jobs.lifecycle import JobLifecycle
from pykueue.manager.runtime.controllers.manager import QueueManager

from .core_access import owe_status_writes
from .test_adoption import _admitted
from .test_queue_status import _objects
from .test_status_writes import WORKLOADS, FakeApi, _arrives


class Sent:
    """The event requests, as the recorder sent them."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def __call__(self, request: Request) -> JSON:
        self.requests.append(request)
        return request.body

    def said(self, name: str) -> list[tuple[str, str, str]]:
        """(type, reason, note) of the Events created about the object ``name``."""
        return [(r.body["type"], r.body["reason"], r.body["note"]) for r in self.requests
                if r.method == "POST" and r.body["regarding"]["name"] == name]


def _manager(preemption: bool = False) -> tuple[QueueManager, FakeApi, Sent]:
    sent = Sent()
    manager = QueueManager(KubeClient(object()), events=EventRecorder(sent, instance="test"))
    objects = _objects()
    for obj in objects[3:]:
        obj["metadata"]["uid"] = f"{obj['metadata']['name']}-uid"
    if preemption:
        objects[1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    api = FakeApi(objects[3:])
    manager.client = cast(KubeClient, api)
    for obj in objects[:3]:
        manager._core_handler(EventType.ADDED, obj, None)
    for path, obj in api.objects.items():
        if preemption and path.endswith("/w2"):
            continue
        manager._core_handler(EventType.ADDED, copy.deepcopy(obj), None)
    return manager, api, sent


async def _written(manager: QueueManager) -> None:
    await manager.schedule_once()
    await manager.status_writes.join(5)
    await manager.events.queue.join(5)


def test_each_status_write_records_the_events_it_stands_for() -> None:
    async def go() -> None:
        manager, api, sent = _manager()
        manager.status_writes.start()
        manager.events.start()
        await _written(manager)
        for name in ("w0", "w1"):
            said = sent.said(name)
            assert [reason for _, reason, _ in said] == ["QuotaReserved", "Admitted"]
            assert said[0][2].startswith("Quota reserved in ClusterQueue cq, wait time since queued was ")
            assert said[1][2] == "Admitted by ClusterQueue cq, wait time since reservation was 0s"
        # Pending: UnadmittedWorkloadsObservability is off, as by default in Kueue v0.19.2 (with
        # it on the reason is the condition's tier: tests/unit/core/test_workload_events.py).
        assert sent.said("w2") == [("Warning", "Pending", "couldn't assign flavors to pod set main: "
                                    "insufficient unused quota for cpu in flavor on-demand, 1 more needed")]
        posted = [r for r in sent.requests if r.body["regarding"]["name"] == "w0"]
        stored = api.objects[WORKLOADS + "w0"]["metadata"]
        assert posted[0].body["regarding"]["resourceVersion"] == stored["resourceVersion"]
        assert posted[0].body["regarding"]["uid"] == "w0-uid"
        before = len(sent.requests)
        owe_status_writes(manager.core, "ns/w0", "ns/w1", "ns/w2")
        await _written(manager)
        assert len(sent.requests) == before, "nothing written, nothing recorded"
        await manager.status_writes.shutdown()
        await manager.events.stop()

    asyncio.run(go())


def test_a_reservation_taken_back_before_it_was_written_records_nothing_of_it() -> None:
    async def go() -> None:
        manager, api, sent = _manager(preemption=True)
        manager.events.start()
        await manager.schedule_once()  # w0 and w1 reserved in the core only
        urgent = copy.deepcopy(api.objects[WORKLOADS + "w2"])
        urgent["metadata"].update(name="urgent", uid="urgent-uid")
        urgent["spec"]["priority"] = 10
        _arrives(manager, api, urgent)
        await manager.schedule_once()
        manager.status_writes.start()
        await manager.status_writes.join(5)
        await manager.events.queue.join(5)
        reasons = {name: [reason for _, reason, _ in sent.said(name)] for name in ("w0", "w1", "urgent")}
        assert reasons["urgent"] == ["QuotaReserved", "Admitted"]
        taken_back = [n for n in ("w0", "w1") if "QuotaReserved" not in reasons[n]]
        assert len(taken_back) == 1, reasons
        assert not any(r.startswith("Evicted") or r == "Preempted" for r in reasons[taken_back[0]]), reasons
        await manager.status_writes.shutdown()
        await manager.events.stop()

    asyncio.run(go())


def test_a_preemption_written_records_the_eviction_on_both_sides() -> None:
    async def go() -> None:
        manager, api, sent = _manager(preemption=True)
        manager.status_writes.start()
        manager.events.start()
        await _written(manager)  # w0 and w1 stored as admitted
        urgent = copy.deepcopy(api.objects[WORKLOADS + "w2"])
        urgent["metadata"].update(name="urgent", uid="urgent-uid")
        urgent["spec"]["priority"] = 10
        _arrives(manager, api, urgent)
        await _written(manager)
        victims = [n for n in ("w0", "w1") if any(r == "EvictedDueToPreempted" for _, r, _ in sent.said(n))]
        assert len(victims) == 1
        [(_, _, note)] = [s for s in sent.said("urgent") if s[1] == "PreemptedWorkload"]
        assert note == (f"Preempted workload ns/{victims[0]} (UID: {victims[0]}-uid) in ClusterQueue cq; "
                        "preemptor effective priority: 10 (base: 10, boost: 0); "
                        "preemptee effective priority: 0 (base: 0, boost: 0)")
        await manager.status_writes.shutdown()
        await manager.events.stop()

    asyncio.run(go())


class _Store:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.by_key = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in objs}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.by_key.get(key)


def _job(suspend: bool) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid", "resourceVersion": "3",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": suspend, "parallelism": 1, "completions": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}},
            "status": {}}


def test_the_job_reconciler_records_start_stop_and_finish_on_the_job() -> None:
    async def go() -> None:
        manager, _, sent = _manager()
        manager.events.start()
        lc = manager.jobs.registry.get("Job")
        assert isinstance(lc, JobLifecycle)
        applied: list[Any] = []

        async def capture(actions: Any) -> list[Any]:
            applied.extend(actions)
            return list(actions)

        manager.jobs._apply = capture  # type: ignore[method-assign]
        wl = _admitted(_objects()[3])
        wl["metadata"].update(name=lc.workload_name(_job(True)), uid="wl-uid")
        manager._core_handler(EventType.ADDED, wl, None)
        manager.jobs.informers = {**manager.jobs.informers, "Workload": _Store(wl)}  # type: ignore[dict-item]

        await manager.jobs._run(lc, _job(suspend=True), "ns", None)  # admitted: started
        assert [a.obj["spec"]["suspend"] for a in applied] == [False]

        deactivated = copy.deepcopy(wl)
        deactivated["spec"]["active"] = False
        manager._core_handler(EventType.MODIFIED, deactivated, wl)  # evicted: stopped
        manager.core.run_until_idle()
        await manager.jobs._run(lc, _job(suspend=False), "ns", None)
        assert [a.obj["spec"]["suspend"] for a in applied] == [False, True]

        finished = lc.finished({**_job(True), "status": {"conditions": [
            {"type": "Complete", "status": "True"}], "succeeded": 1}})
        await manager.jobs._run(lc, _job(suspend=True), "ns", finished)
        await manager.jobs._run(lc, _job(suspend=True), "ns", finished)  # the same finish again
        await manager.events.queue.join(5)
        wl_key = f"ns/{wl['metadata']['name']}"
        assert sent.said("j") == [
            ("Normal", "Started", "Admitted by clusterQueue cq"),
            ("Normal", "Stopped", "The workload is deactivated"),
            ("Normal", "FinishedWorkload", f"Workload '{wl_key}' is declared finished"),
        ]
        [started] = [r for r in sent.requests if r.body["reason"] == "Started"]
        assert started.body["reportingController"] == "batch/job-kueue-controller"
        assert started.body["regarding"] == {"apiVersion": "batch/v1", "kind": "Job", "name": "j",
                                             "namespace": "ns", "uid": "job-uid"}
        await manager.events.stop()

    asyncio.run(go())


def test_creating_a_workload_records_created_workload() -> None:
    async def go() -> None:
        manager, api, sent = _manager()
        manager.events.start()
        lc = manager.jobs.registry.get("Job")
        assert isinstance(lc, JobLifecycle)
        created: list[str] = []

        async def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
            created.append(body["metadata"]["name"])
            return body

        api.create = create  # type: ignore[attr-defined]
        manager.jobs.client = cast(KubeClient, api)
        job = _job(True)
        [wl] = lc.workloads(job)
        await manager.jobs._create_workload(lc, job, wl)
        await manager.events.queue.join(5)
        assert created == [wl["metadata"]["name"]]
        assert sent.said("j") == [
            ("Normal", "CreatedWorkload", f"Created Workload: ns/{wl['metadata']['name']}")]
        await manager.events.stop()

    asyncio.run(go())
