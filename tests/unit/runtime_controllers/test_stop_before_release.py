"""An evicted job's quota is given back only once the job is seen stopped and nothing of it
runs. A Job admitted a moment before its eviction may not count its pods yet (status.active
0 while its pod starts): taking that for "stopped" released the quota while the Job kept
running, and the core could admit its Workload again elsewhere at once."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from pykueue.kube.client import KubeClient
from pykueue.kube.informer import EventType
from pykueue.manager.jobs.lifecycle import JobLifecycle
from pykueue.manager.runtime.controllers.manager import QueueManager

from .test_adoption import _admitted
from .test_queue_status import _objects


class _NoClient:
    """Never called: actions are captured, informers are plain dicts."""


class _Store:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.by_key = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in objs}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.by_key.get(key)


def _job(suspend: bool, active: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid",
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": suspend, "parallelism": 1, "completions": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}},
            "status": {"active": active}}


def test_the_quota_waits_for_the_job_to_be_seen_stopped() -> None:
    manager = QueueManager(KubeClient(_NoClient()))
    for obj in _objects()[:3]:
        manager._core_handler(EventType.ADDED, obj, None)
    lc = manager.jobs.registry.get("Job")
    assert isinstance(lc, JobLifecycle)
    job = _job(suspend=False, active=0)  # just started: its pod is not counted yet
    wl = _admitted(_objects()[3])
    wl["metadata"].update(name=lc.workload_name(job), ownerReferences=[
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "job-uid", "controller": True}])
    key = f"ns/{wl['metadata']['name']}"
    manager._core_handler(EventType.ADDED, wl, None)
    deactivated = copy.deepcopy(wl)
    deactivated["spec"]["active"] = False  # evicts it, as a preemption would
    manager._core_handler(EventType.MODIFIED, deactivated, wl)
    manager.core.run_until_idle()
    rec = manager.core.workload(key)
    assert rec.stopping is not None and rec.holds_quota

    applied: list[Any] = []

    async def capture(actions: Any) -> list[Any]:
        applied.extend(actions)
        return list(actions)

    manager.jobs.informers = {**manager.jobs.informers, "Workload": _Store(deactivated)}  # type: ignore[dict-item]
    manager.jobs._apply = capture  # type: ignore[method-assign]

    asyncio.run(manager.jobs._run(lc, job, "ns", None))
    assert [a.obj["spec"]["suspend"] for a in applied] == [True]  # stopped...
    assert rec.stopping is not None and rec.holds_quota  # ...and the quota kept until that is seen

    asyncio.run(manager.jobs._run(lc, _job(suspend=True, active=1), "ns", None))
    assert rec.holds_quota  # suspended, but its pod still runs

    asyncio.run(manager.jobs._run(lc, _job(suspend=True, active=0), "ns", None))
    assert rec.stopping is None and not rec.holds_quota
    assert manager.core.usage_of("cq") == {("on-demand", "cpu"): 0}
