"""Kueue's metrics fed where they happen rather than from the core's state: preemption skips
by the queue manager from each cycle's result, scheduling gate removals by the job reconciler
as its writes lift them, MultiKueue dispatches and remote admissions by its controller."""

from __future__ import annotations

import asyncio
import calendar
import time
from typing import Any, cast

from pykueue.api import keys
from pykueue.kube.client import ApiError, KubeClient
from pykueue.manager.jobs.batchjob.lifecycle import LIFECYCLE as BATCH_JOB
from pykueue.manager.jobs.multikueue.dispatch import READY, Decision, admitted_message
from pykueue.manager.jobs.pod.lifecycle import LIFECYCLE as POD
from pykueue.manager.jobs.pod_shape import role_hash
from pykueue.manager.runtime.controllers.manager import QueueManager
from pykueue.manager.runtime.controllers.multikueue.connections import Worker
from pykueue.manager.runtime.metrics import KueueMetrics

from ..core.test_engine import overlapping_preemptors
from .test_events_recorded import _Store

GATE_FAMILY = "kueue_pod_scheduling_gate_removal_seconds"
ADMITTED_AT = "2026-01-01T00:00:00Z"


def _value(metrics: KueueMetrics, family: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(family, {**labels, "replica_role": "standalone"})


def _manager() -> tuple[QueueManager, KueueMetrics]:
    metrics = KueueMetrics()
    return QueueManager(KubeClient(object()), metrics=metrics), metrics


# -- kueue_admission_cycle_preemption_skips ---------------------------------------------------------


def test_the_queue_manager_sets_each_cycles_preemption_skips_per_cluster_queue() -> None:
    manager, metrics = _manager()
    manager.core = overlapping_preemptors()  # y's head wants the victim x's head took first
    manager.jobs.core = manager.core
    manager.metrics_feed.core = manager.core
    manager._run_cycles(5.0)
    assert _value(metrics, "kueue_admission_cycle_preemption_skips", cluster_queue="y") == 1
    assert _value(metrics, "kueue_admission_cycle_preemption_skips", cluster_queue="x") is None


# -- kueue_pod_scheduling_gate_removal_seconds ------------------------------------------------------


def _admitted(name: str, podset: str, count: int, topology: bool = False) -> dict[str, Any]:
    psa: dict[str, Any] = {"name": podset, "count": count, "flavors": {"cpu": "on-demand"},
                           "resourceUsage": {"cpu": str(count)}}
    if topology:
        psa["topologyAssignment"] = {"levels": ["kubernetes.io/hostname"], "domains": [
            {"values": ["node-1"], "count": count}]}
    return {"apiVersion": keys.API_VERSION, "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid"},
            "spec": {"queueName": "lq", "podSets": [{"name": podset, "count": count, "template": {}}]},
            "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [psa]}, "conditions": [
                {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": ADMITTED_AT}
                for t in ("QuotaReserved", "Admitted")]}}


def _pod(name: str, gates: tuple[str, ...], labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    pod_spec = {**spec, "schedulingGates": [{"name": g} for g in gates]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid", "resourceVersion": "1",
                         "labels": {keys.MANAGED: "true", keys.QUEUE_NAME: "lq", **(labels or {})},
                         "annotations": {keys.ROLE_HASH: role_hash(spec), **(annotations or {})}},
            "spec": pod_spec, "status": {"phase": "Pending"}}


def _capture_writes(manager: QueueManager) -> list[Any]:
    applied: list[Any] = []

    async def capture(actions: Any) -> list[Any]:
        applied.extend(actions)
        return list(actions)

    manager.jobs._apply = capture  # type: ignore[method-assign]
    return applied


def _since_admission() -> float:
    return time.time() - calendar.timegm(time.strptime(ADMITTED_AT, "%Y-%m-%dT%H:%M:%SZ"))


def _gates_timed(metrics: KueueMetrics, gate: str, is_group: str) -> tuple[float | None, float | None]:
    labels = {"name": gate, "cluster_queue": "cq", "is_group": is_group}
    return _value(metrics, f"{GATE_FAMILY}_count", **labels), _value(metrics, f"{GATE_FAMILY}_sum", **labels)


def test_starting_a_pod_times_each_gate_it_lifts_from_the_admission() -> None:
    for tas in (False, True):
        manager, metrics = _manager()
        writes = _capture_writes(manager)
        pod = _pod("p", (keys.ADMISSION_GATE, keys.TOPOLOGY_GATE))
        group = POD.assemble("ns", str(POD.group_name(pod)), [pod])
        workload = _admitted(POD.workload_name(group), "main", 1, topology=tas)
        manager.jobs.informers = {**manager.jobs.informers, "Workload": _Store(workload)}  # type: ignore[dict-item]
        started = time.time()
        asyncio.run(manager.jobs._run(POD, group, "ns", None))
        assert len(writes) == 1 and "schedulingGates" not in writes[0].obj["spec"]
        count, total = _gates_timed(metrics, keys.ADMISSION_GATE, "false")
        assert count == 1 and total is not None
        assert _since_admission() - (time.time() - started) - 1 <= total <= _since_admission()
        # The topology gate counts only for a workload TAS placed, as Kueue's topology ungater.
        assert _gates_timed(metrics, keys.TOPOLOGY_GATE, "false")[0] == (1 if tas else None)


def test_a_pod_groups_gates_are_timed_per_pod_as_a_group() -> None:
    manager, metrics = _manager()
    _capture_writes(manager)
    members = [_pod(n, (keys.ADMISSION_GATE,), labels={keys.POD_GROUP_NAME: "g"},
                    annotations={keys.POD_GROUP_TOTAL_COUNT: "2"}) for n in ("a", "b")]
    group = POD.assemble("ns", "g", members)
    role = members[0]["metadata"]["annotations"][keys.ROLE_HASH]
    workload = _admitted(POD.workload_name(group), role, 2)
    manager.jobs.informers = {**manager.jobs.informers, "Workload": _Store(workload)}  # type: ignore[dict-item]
    asyncio.run(manager.jobs._run(POD, group, "ns", None))
    assert _gates_timed(metrics, keys.ADMISSION_GATE, "true")[0] == 2
    assert _gates_timed(metrics, keys.ADMISSION_GATE, "false")[0] is None


class _PodList:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods

    async def get(self, path: str, params: Any = None) -> dict[str, Any]:
        return {"items": [{k: v for k, v in p.items() if k not in ("apiVersion", "kind")} for p in self.pods]}


def test_letting_an_elastic_jobs_pods_run_times_the_elastic_job_gate() -> None:
    manager, metrics = _manager()
    _capture_writes(manager)
    pods = [_pod(n, (keys.ELASTIC_JOB_GATE,)) for n in ("j-a", "j-b", "j-c")]
    manager.jobs.client = cast(KubeClient, _PodList(pods))
    workload = _admitted("job-j-slice", "main", 2)
    manager.jobs.informers = {**manager.jobs.informers, "Workload": _Store(workload)}  # type: ignore[dict-item]
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "ns", "uid": "j-uid"},
           "spec": {"suspend": False}, "status": {"active": 3}}
    asyncio.run(manager.jobs._ungate(BATCH_JOB, job, "ns", "job-j-slice"))
    assert _gates_timed(metrics, keys.ELASTIC_JOB_GATE, "false")[0] == 2  # the admitted slice's count


# -- multikueue_workloads_dispatched_total, multikueue_workloads_admitted_total ---------------------


class _Remote:
    """A worker's API: creates what it is given once, then says it exists."""

    def __init__(self) -> None:
        self.created: set[str] = set()

    async def request(self, method: str, path: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        name = body["metadata"]["name"]
        if name in self.created:
            raise ApiError(409, "AlreadyExists", f"{name} exists")
        self.created.add(name)
        return body


class _Local:
    def __init__(self) -> None:
        self.patched: list[str] = []

    async def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.patched.append(path)
        return body


def test_multikueue_counts_each_copy_created_in_a_worker_and_each_remote_admission() -> None:
    manager, metrics = _manager()
    controller = manager.multikueue
    assert controller is not None and controller.metrics is metrics
    local = _Local()
    controller.client = cast(KubeClient, local)
    workers = {name: Worker(name, client=cast(KubeClient, _Remote()), active=True) for name in ("w1", "w2")}
    workload = _admitted("wl", "main", 1)
    workload["status"]["admissionChecks"] = [{"name": "mk", "state": "Pending"}]
    dispatch = Decision(create_workload_in=("w1", "w2"))
    asyncio.run(controller._apply(workload, "mk", dispatch, workers))
    asyncio.run(controller._apply(workload, "mk", dispatch, workers))  # already there: not counted again
    for cluster in ("w1", "w2"):
        assert _value(metrics, "multikueue_workloads_dispatched_total", cluster_queue="cq",
                      cluster=cluster) == 1

    won = Decision(delete_in=("w2",), check=(READY, admitted_message("w1")), winner="w1")
    asyncio.run(controller._apply(workload, "mk", won, {"w1": workers["w1"], "w2": Worker("w2")}))
    assert local.patched  # the check was written Ready
    assert _value(metrics, "multikueue_workloads_admitted_total", cluster_queue="cq", cluster="w1") == 1
    assert _value(metrics, "multikueue_workloads_admitted_total", cluster_queue="cq", cluster="w2") is None
