"""The queue manager: informers feed the core, the core's decisions are written back.

Data flow (one asyncio task each, the core touched only from the event loop thread, so
no locks): informer handlers apply objects to :class:`QueueingCore` and poke the
scheduler; the scheduler loop (leader only, after every informer has synced, so a
restart rebuilds all admitted quota before deciding anything) runs cycles on a real
clock and writes changed Workload statuses; the job reconciler (``jobs``, generic over
the enabled integrations) reconciles each job with its Workloads (create, start on
admission, stop on eviction, finish).

Every write is a compare-and-swap on the object's ``resourceVersion``. A 409 re-reads
the object and recomputes the write from the fresh copy; nothing is overwritten blindly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from api import keys
from manager.core.assignment import Outcome
from manager.core.config import CoreConfig
from manager.core.engine import QueueingCore
from manager.core.objects import ObjectError
from manager.core.status import workload_status
from manager.core.workload_state import ADMITTED, FINISHED
from manager.jobs.framework import AdmissionPolicy
from manager.jobs.lifecycle import Finished, condition_true, enabled_registry
from manager.runtime import resources as res
from manager.runtime.client import JSON, ApiError, KubeClient
from manager.runtime.informer import EventType, Informer
from manager.runtime.metrics import KueueMetrics, ReplicaRole
from manager.runtime.metrics_feed import MetricsFeed
from manager.runtime.resources import ResourceRef, object_key

from .finalizers import FinalizerRelease, terminating
from .jobs import JobReconciler
from .queue_status import cluster_queue_status, local_queue_status, same_status
from .retention import FinishedRetention, after_finished

log = logging.getLogger(__name__)

CORE_KINDS: tuple[ResourceRef, ...] = (
    res.RESOURCE_FLAVORS, res.COHORTS, res.CLUSTER_QUEUES, res.LOCAL_QUEUES,
    res.WORKLOAD_PRIORITY_CLASSES, res.ADMISSION_CHECKS, res.NAMESPACES, res.WORKLOADS,
)
QUEUE_STATUS_PERIOD_S = 1.0
SUCCEEDED = Finished(keys.Reason.SUCCEEDED, "Job finished successfully")
MAX_CONFLICT_RETRIES = 5


class QueueManager:
    """Owns the core, the informers and the controllers built on them."""

    def __init__(self, client: KubeClient, config: CoreConfig | None = None,
                 job_config: Mapping[str, Any] | None = None, metrics: KueueMetrics | None = None) -> None:
        """``job_config`` is the Kueue Configuration dict: integrations, manageJobsWithoutQueueName."""
        self.client = client
        self.core = QueueingCore(config, now=time.time())
        self.metrics = metrics if metrics is not None else KueueMetrics()
        self.metrics_feed = MetricsFeed.from_config(self.core, self.metrics, job_config or {})
        self.metrics.before_scrape = self.metrics_feed.refresh
        self.informers: dict[str, Informer] = {r.kind: Informer(client, r) for r in CORE_KINDS}
        self._kick = asyncio.Event()
        self._queues_dirty = asyncio.Event()
        self._finished: dict[str, Finished] = {}
        policy = AdmissionPolicy.from_config(job_config or {})
        self.jobs = JobReconciler(client, self.core, self.informers, enabled_registry(policy), policy,
                                  self._kick.set, self._finished)
        # Workloads this process reserved quota for: a stale echo of their admission after
        # an eviction must not be adopted back as if someone else had admitted them.
        self._reserved_by_us: set[str] = set()
        for informer in self.informers.values():
            informer.add_handler(self._core_handler)
        self.finalizers = FinalizerRelease(client, self.informers,
                                           lambda cq: len(self.core.holding.get(cq) or ()))
        retain_s = after_finished(job_config or {})
        self.retention = None if retain_s is None else FinishedRetention(client, self.informers["Workload"],
                                                                          retain_s)

    # -------------------------------------------------------------- informer events

    def _core_handler(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        kind = str(obj.get("kind"))
        meta = obj.get("metadata") or {}
        try:
            if kind == "ClusterQueue":
                self.core.set_terminating(str(meta.get("name")),
                                          event != EventType.DELETED and terminating(obj))
            if event == EventType.DELETED:
                self.core.delete(kind, meta.get("namespace"), str(meta.get("name")))
            elif kind == "Workload" and self._admitted_elsewhere(obj):
                # Quota reserved by another writer (a previous leader, a test, an external
                # controller): adopt it instead of overwriting it with our pending view.
                self.core.delete(kind, meta.get("namespace"), str(meta.get("name")))
                self.core.apply(obj)
                self.metrics_feed.baseline((object_key(obj),))  # not our admission: not counted
            else:
                self.core.apply(obj)
                if kind == "Workload" and condition_true(obj, keys.WorkloadCondition.FINISHED):
                    self._finished_by_writer(object_key(obj))
        except ObjectError as exc:
            log.warning("ignoring invalid %s %s: %s", kind, object_key(obj), exc)
        if kind == "Workload":
            self.jobs.on_workload(event, obj)
        self._poke()

    def _finished_by_writer(self, key: str) -> None:
        """Another writer (a job controller elsewhere, a test harness) set Finished: release
        the quota as Kueue's workload controller does. The object already says Finished, so
        there is nothing to write back unless a write was owed anyway."""
        owed = key in self.core.changed
        if self.core.finish(key) and not owed:
            self.core.changed.discard(key)

    def _admitted_elsewhere(self, obj: JSON) -> bool:
        key = object_key(obj)
        rec = self.core.workloads.get(key)
        if rec is None or rec.holds_quota or rec.status == FINISHED or key in self._reserved_by_us:
            return False
        status = obj.get("status") or {}
        return bool(status.get("admission")) and (
            condition_true(obj, keys.WorkloadCondition.QUOTA_RESERVED)
            or condition_true(obj, keys.WorkloadCondition.ADMITTED))

    def _poke(self) -> None:
        self._kick.set()
        self._queues_dirty.set()

    # -------------------------------------------------------------- lifecycle

    async def start_informers(self) -> None:
        await self.jobs.prepare()  # adds the informers of the job kinds this cluster serves
        for informer in self.informers.values():
            informer.start()
        self.jobs.start()

    async def wait_synced(self, timeout_s: float | None = None) -> None:
        await asyncio.gather(*(i.wait_synced(timeout_s) for i in self.informers.values()))

    async def stop(self) -> None:
        await self.jobs.stop()
        for informer in self.informers.values():
            await informer.stop()

    async def lead(self) -> None:
        """Leader-only work: scheduling and queue status, after all informers synced."""
        await self.wait_synced()
        log.info("informers synced: %d workloads, %d cluster queues", len(self.core.workloads),
                 len(self.core.cq_defs))
        if self.metrics.role is ReplicaRole.FOLLOWER:
            self.metrics.set_role(ReplicaRole.LEADER)
        # What the API says now was decided before this process led: never counted again.
        self.metrics_feed.baseline()
        leader_work = [self._schedule_forever(), self._queue_status_forever(), self.finalizers.run()]
        if self.retention is not None:
            leader_work.append(self.retention.run())
        await asyncio.gather(*leader_work)

    # -------------------------------------------------------------- scheduling

    async def _schedule_forever(self) -> None:
        while True:
            self._kick.clear()
            await self.schedule_once()
            deadline = self.core.next_deadline()
            timeout = None if deadline is None else max(0.0, deadline - time.time())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._kick.wait()

    async def schedule_once(self) -> None:
        """Fire due timers, cycle until idle, write what changed."""
        self.core.fire_timers(time.time())
        preemptors = self._run_cycles()
        changed = self.core.take_changes()
        changed |= self.metrics_feed.observe(changed, self.core.now, preemptors)
        if changed:
            self._queues_dirty.set()
            self.finalizers.poke()
        for key in sorted(changed):
            try:
                await self._write_workload_status(key)
            except ApiError as exc:
                log.warning("writing status of Workload %s failed: %s", key, exc)

    def _run_cycles(self) -> dict[str, str]:
        """Cycle until idle like ``QueueingCore.run_until_idle``, timing each cycle for
        ``kueue_admission_attempt*``; returns victim key -> preempting ClusterQueue."""
        preemptors: dict[str, str] = {}
        while True:
            started = time.perf_counter()
            result = self.core.next_cycle()
            progress = self.core.apply_cycle(result)
            if result.decisions:
                admitted = any(d.outcome == Outcome.ADMIT for d in result.decisions)
                self.metrics.admission_attempt(admitted, time.perf_counter() - started)
            for d in result.decisions:
                if d.outcome == Outcome.PREEMPT:
                    preemptors.update((t, d.cluster_queue) for t in d.targets)
            if not progress:
                return preemptors

    async def _write_workload_status(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        path = res.WORKLOADS.object_path(name, namespace, "status")
        current = self.informers["Workload"].get(key)
        for _ in range(MAX_CONFLICT_RETRIES):
            rec = self.core.workloads.get(key)
            if rec is None:
                return
            if current is None:
                current = await self._get(res.WORKLOADS.object_path(name, namespace))
                if current is None:
                    return
                if self._admitted_elsewhere(current):
                    self._core_handler(EventType.MODIFIED, current, None)
                    return
            if rec.holds_quota:
                self._reserved_by_us.add(key)
            status = workload_status(rec, self.core.now)
            if rec.status == FINISHED:
                finished = self._finished.get(key) or SUCCEEDED
                old = current.get("status") or {}
                status = {**old, "conditions": _finished_conditions(old, finished, self.core.now)}
            elif rec.status == ADMITTED:
                status["conditions"] = [*(status.get("conditions") or ()),
                                        _pods_ready_condition(rec.pods_ready, self.core.now)]
            body = {**current, "status": _keep_times(current.get("status") or {}, status)}
            try:
                await self.client.replace(path, body)
                return
            except ApiError as exc:
                if not exc.conflict:
                    raise
                current = None  # re-read and recompute from the fresh object
        log.warning("gave up writing status of Workload %s after %d conflicts", key, MAX_CONFLICT_RETRIES)

    async def _get(self, path: str) -> JSON | None:
        try:
            return await self.client.get(path)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    # -------------------------------------------------------------- queue status

    async def _queue_status_forever(self) -> None:
        while True:
            await self._queues_dirty.wait()
            self._queues_dirty.clear()
            await self.write_queue_statuses()
            await asyncio.sleep(QUEUE_STATUS_PERIOD_S)  # rate limit, not synchronisation

    async def write_queue_statuses(self) -> None:
        for obj in self.informers["ClusterQueue"].items():
            name = str(obj["metadata"]["name"])
            await self._write_queue(res.CLUSTER_QUEUES, obj, partial(cluster_queue_status, self.core, name))
        for obj in self.informers["LocalQueue"].items():
            ns, name = str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"])
            await self._write_queue(res.LOCAL_QUEUES, obj, partial(local_queue_status, self.core, ns, name))

    async def _write_queue(self, ref: ResourceRef, obj: JSON, compute: Callable[[], JSON]) -> None:
        meta = obj["metadata"]
        current: JSON | None = obj
        for _ in range(MAX_CONFLICT_RETRIES):
            if current is None:
                current = await self._get(ref.object_path(meta["name"], meta.get("namespace")))
                if current is None:
                    return
            status = compute()
            old = current.get("status") or {}
            if same_status({k: old.get(k) for k in status}, status):
                return
            now = _timestamp(time.time())
            for cond in status["conditions"]:
                cond["lastTransitionTime"] = now
            try:
                await self.client.replace(ref.object_path(meta["name"], meta.get("namespace"), "status"),
                                          {**current, "status": {**old, **status}})
                return
            except ApiError as exc:
                if not exc.conflict:
                    log.warning("writing status of %s %s failed: %s", ref.kind, meta["name"], exc)
                    return
                current = None


def _timestamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _keep_times(old: JSON, new: JSON) -> JSON:
    """Keep a condition's lastTransitionTime when its status did not change (Kubernetes' rule)."""
    before = {c.get("type"): c for c in old.get("conditions") or ()}
    conditions = []
    for cond in new.get("conditions") or ():
        prev = before.get(cond.get("type"))
        if prev is not None and prev.get("status") == cond.get("status") and prev.get("lastTransitionTime"):
            cond = {**cond, "lastTransitionTime": prev["lastTransitionTime"]}
        conditions.append(cond)
    return {**new, "conditions": conditions}


def _pods_ready_condition(ready: bool, now: float) -> JSON:
    """Kueue's PodsReady condition of an admitted workload (from the job's ready pods)."""
    if ready:
        return {"type": keys.WorkloadCondition.PODS_READY, "status": "True", "reason": "Started",
                "message": "All pods reached readiness and the workload is running",
                "lastTransitionTime": _timestamp(now)}
    return {"type": keys.WorkloadCondition.PODS_READY, "status": "False", "reason": "WaitForStart",
            "message": "Not all pods are ready or succeeded", "lastTransitionTime": _timestamp(now)}


def _finished_conditions(old: JSON, finished: Finished, now: float) -> list[JSON]:
    """Finished keeps the admission history (Kueue leaves QuotaReserved/Admitted in place);
    reason and message are the job's own verdict."""
    conditions = [c for c in old.get("conditions") or () if c.get("type") != keys.WorkloadCondition.FINISHED]
    conditions.append({"type": keys.WorkloadCondition.FINISHED, "status": "True", "reason": finished.reason,
                       "message": finished.message, "lastTransitionTime": _timestamp(now)})
    return conditions

