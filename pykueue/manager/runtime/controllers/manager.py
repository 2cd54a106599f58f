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

Workload statuses are written by a small pool of workers (``STATUS_WRITERS``, as Kueue's
10 workload workers) fed by a keyed work queue: the scheduler never waits for a write,
two writes of one Workload never race (one worker per key; a key changed while being
written is written once more afterwards, from the latest record), and a status equal to
the stored one is not written at all. A pending workload whose only change is the text
of its pending message is rewritten at most every ``PENDING_MESSAGE_INTERVAL_S``
(admission, eviction, finish and reason changes are written at once). The scheduler runs
no further ahead of those writers than ``WRITE_BACKLOG_LIMIT`` writes.

A status write is retried until it is written or the Workload is gone (an API away for
minutes holds admissions that reuse unwritten releases, it loses none); each retry renders
the core's latest record, so a newer decision supersedes an older one unwritten. Writes are
leader-only: losing the Lease fences the client before anything else (``lose_lease``), and
a term that ends otherwise stops the writers before the Lease is released.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from pykueue.api import keys
from pykueue.api.access import ApiAccess
from pykueue.api.config import DEFAULT_NAMESPACE
from pykueue.api.events import EventRecord, ObjectReference
from pykueue.api.wire import JSON
from pykueue.kube import events as kube_events
from pykueue.kube import resources as res
from pykueue.kube.backoff import Backoff
from pykueue.kube.client import REQUEST_ERRORS, ApiError, KubeClient
from pykueue.kube.events import EventRecorder, client_transport
from pykueue.kube.informer import EventType, Informer
from pykueue.kube.merge_patch import merge_patch
from pykueue.kube.resources import ResourceRef, object_key
from pykueue.kube.workqueue import WorkQueue, prompt_retry_backoff
from pykueue.manager.core.assignment import Outcome
from pykueue.manager.core.config import CoreConfig
from pykueue.manager.core.engine import QueueingCore
from pykueue.manager.core.events import workload_events
from pykueue.manager.core.objects import ObjectError, parse_time
from pykueue.manager.core.settings import TUNED, SchedulingSettings
from pykueue.manager.core.status import (
    accumulate_execution,
    carry_check_details,
    legacy_admitted,
    workload_status,
)
from pykueue.manager.core.tas_hook import TasPlacer
from pykueue.manager.core.workload_state import ADMITTED, FINISHED
from pykueue.manager.jobs.admission import AdmissionPolicy
from pykueue.manager.jobs.lifecycle import Finished, condition_true
from pykueue.manager.jobs.registry import enabled_registry, kinds
from pykueue.manager.runtime.fault_hooks import FAIL_SCHEDULING, FaultHooks
from pykueue.manager.runtime.metrics import KueueMetrics, ReplicaRole
from pykueue.manager.runtime.metrics_feed import MetricsFeed

from . import finalizers, jobs, provisioning, retention, topology
from .finalizers import FinalizerRelease, terminating
from .jobs import JobReconciler
from .multikueue import controller as multikueue
from .multikueue.controller import MultiKueueController
from .provisioning import ProvisioningController
from .queue_status import QueueIndex, cluster_queue_status, local_queue_status, same_status
from .release_order import ReleaseOrder
from .reservation_moves import released, reservation_moved, reserved
from .retention import FinishedRetention, after_deactivated_by_kueue, after_finished
from .topology import TopologyFeed
from .write_echoes import WriteEchoes

log = logging.getLogger(__name__)

CORE_KINDS: tuple[ResourceRef, ...] = (
    res.RESOURCE_FLAVORS, res.COHORTS, res.CLUSTER_QUEUES, res.LOCAL_QUEUES,
    res.WORKLOAD_PRIORITY_CLASSES, res.ADMISSION_CHECKS, res.NAMESPACES, res.WORKLOADS,
)
# The queue manager's own calls, as RBAC (``api.access``): an informer of each core kind; a
# Workload re-read after a conflict, deactivated (``spec.active``) and its status patched;
# each queue re-read after a conflict and its status written back (PUT).
API_ACCESS: tuple[ApiAccess, ...] = (
    *(ref.access("list", "watch") for ref in CORE_KINDS),
    res.WORKLOADS.access("get", "patch"),
    res.WORKLOADS.access("patch", subresource="status"),
    *(ref.access("get") for ref in (res.CLUSTER_QUEUES, res.LOCAL_QUEUES)),
    *(ref.access("update", subresource="status") for ref in (res.CLUSTER_QUEUES, res.LOCAL_QUEUES)),
)
QUEUE_STATUS_PERIOD_S = 1.0
# Queue statuses wait for request budget at most this long: a manager that stays busy
# still shows its queues' usage.
QUEUE_STATUS_MAX_DEFER_S = 10.0
# ... or longer where a pass over every queue (one request each) would otherwise take more
# than this share of the client's request budget: at 50 QPS, 60 queues written every 10 s
# were a ninth of it, requests that admissions waited for.
QUEUE_STATUS_BUDGET_SHARE = 0.05
# After a failed pass the next comes 1, 2, 4 ... up to 60 s later (an API that keeps
# refusing a write is not asked every second).
QUEUE_STATUS_RETRY = Backoff(base=QUEUE_STATUS_PERIOD_S, cap=60.0, jitter=0.0)
SUCCEEDED = Finished(keys.Reason.SUCCEEDED, "Job finished successfully")
MAX_CONFLICT_RETRIES = 5
# Longest run of scheduling cycles before the event loop gets a turn (see schedule_once).
CYCLE_SLICE_S = 0.05
STATUS_WRITERS = 16
# The scheduler decides no further ahead than a few seconds of writes: no cycle starts
# while this many admissions, evictions and finishes wait for a writer (those of the
# running slice included). Unbounded, a kube-apiserver slower than the core leaves
# reservations queued for minutes, holding quota no job can use; at two per writer a
# reservation is written before a higher-priority arrival can take it back unseen, so the
# arrival evicts a job that has just started. Four per writer holds fewer unwritten
# reservations than sixteen at no cost in wall time (benchmarks/README.md, History).
WRITE_BACKLOG_LIMIT = 4 * STATUS_WRITERS
# A held admission logs once its releases wait longer than this; it keeps waiting (see
# ReleaseOrder), since writing it first would show more admitted than the quota.
RELEASE_WAIT_S = 10.0
# How long a term ending gracefully (SIGTERM, cancelled) finishes in-flight writes before
# the Lease is released: within the Lease, so no other leader can write meanwhile.
DRAIN_S = 5.0
# Events queued at shutdown (most of them waiting for the Events' own request budget) are
# sent for at most this long, then dropped, as Kueue's event broadcaster drops its queue:
# they inform, they decide nothing. Two seconds of it were most of a stop (kueue_perf).
EVENTS_DRAIN_S = 0.5
QUEUE_STATUS_WRITERS = 4
PENDING_MESSAGE_INTERVAL_S = 3.0
# A pending notice (see pending_notice) or a queue status write waits while less than
# this share of the client's burst is left, and looks again after PENDING_NOTICE_RETRY_S:
# it spends tokens the bucket would otherwise lose at its cap, not ones an admission needs.
PENDING_NOTICE_HEADROOM = 0.9
PENDING_NOTICE_RETRY_S = 1.0
# ... but a notice waits at most this long: under a backlog that lasts (minutes at 300 QPS
# on a loaded apiserver) a user still learns within it why the job waits.
PENDING_NOTICE_MAX_DEFER_S = 30.0


def api_access() -> tuple[ApiAccess, ...]:
    """What a :class:`QueueManager` and the controllers it runs ask of the API, whichever the
    Configuration turns on (every registered job kind, MultiKueue, retention), and its Events."""
    registered = kinds()
    return (*API_ACCESS, *jobs.api_access(registered), *topology.API_ACCESS, *finalizers.API_ACCESS,
            *provisioning.API_ACCESS, *multikueue.api_access(registered), *retention.API_ACCESS,
            *kube_events.API_ACCESS)


class WriteConflicts(RuntimeError):
    """A status write met a newer version each time it was recomputed."""


class QueueManager:
    """Owns the core, the informers and the controllers built on them."""

    def __init__(self, client: KubeClient, config: CoreConfig | None = None,
                 job_config: Mapping[str, Any] | None = None, metrics: KueueMetrics | None = None,
                 events: EventRecorder | None = None, scheduling: SchedulingSettings = TUNED) -> None:
        """``job_config`` is the Kueue Configuration dict: integrations, manageJobsWithoutQueueName.
        ``events``: the recorder of Kubernetes Events (default: one sending through ``client``).
        ``scheduling``: the core's scheduling settings (tests replaying ``simulate`` requeue at once)."""
        self.client = client
        self.events = events if events is not None else EventRecorder(client_transport(client))
        # Topology-aware placement, as in simulate; it places nothing until every admitted
        # workload has been read back (mark_synced once the informers synced).
        self.tas = TasPlacer(synced=False,
                             overlapping_flavors=(config or CoreConfig()).tas_overlapping_flavors,
                             balanced_placement=(config or CoreConfig()).tas_balanced_placement)
        # The core's tuned scheduling settings (``core.settings``), not a Configuration's.
        self.core = QueueingCore(replace(config or CoreConfig(), scheduling=scheduling,
                                         hold_quota_until_stopped=True, withdraw_unpublished=True,
                                         unreported_checks_active=False),
                                 now=time.time(), topology=self.tas, track_releases=True)
        self.metrics = metrics if metrics is not None else KueueMetrics()
        self.metrics_feed = MetricsFeed.from_config(self.core, self.metrics, job_config or {})
        self.metrics.before_scrape = self.metrics_feed.refresh
        self.informers: dict[str, Informer] = {r.kind: Informer(client, r) for r in CORE_KINDS}
        self._kick = asyncio.Event()
        # Cycles wait for the writers (WRITE_BACKLOG_LIMIT); a writer taking a key wakes them.
        self._held_for_writers = False
        self._queues_dirty = asyncio.Event()
        self._finished: dict[str, Finished] = {}
        policy = AdmissionPolicy.from_config(job_config or {})
        self.jobs = JobReconciler(client, self.core, self.informers, enabled_registry(policy), policy,
                                  self._kick.set, self._finished, timing=self.metrics, events=self.events,
                                  creation_latency=self.metrics.workload_creation_latency,
                                  gate_removal=self.metrics.pod_scheduling_gate_removal,
                                  deactivated_retention_s=after_deactivated_by_kueue(job_config or {}))
        # Workloads this process reserved quota for: a stale echo of their admission after
        # an eviction must not be adopted back as if someone else had admitted them.
        self._reserved_by_us: set[str] = set()
        self.faults = FaultHooks.from_environment()
        self.status_writes: WorkQueue[str] = WorkQueue(self._write_workload_status, workers=STATUS_WRITERS,
                                                       name="workload-status", backoff=prompt_retry_backoff(),
                                                       timing=self.metrics)
        # Freed quota is written before the admissions that reuse it.
        self.release_order = ReleaseOrder(max_wait_s=RELEASE_WAIT_S)
        self._release_wait: asyncio.TimerHandle | None = None
        # Our last write of a Workload until the informer shows it: (resourceVersion written
        # over, the object the API returned), so the next write neither 409s on a lagging
        # cache nor compares against it. And when each Workload status was last written.
        self._written = WriteEchoes()
        self._written_at: dict[str, float] = {}
        # When a pending notice that is still unwritten was first held back.
        self._notice_held_since: dict[str, float] = {}
        # Per Workload, the topology assignments and admission check states last agreed with
        # the API (written or read): stored ones that differ are another writer's (_follow_others).
        self._agreed: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}
        for informer in self.informers.values():
            informer.add_handler(self._core_handler)
        gates = (job_config or {}).get("featureGates") or {}
        self.topology = TopologyFeed(client, self.tas, self.core, self._poke,
                                     rules=self.core.config.tas_node_failure)
        self.finalizers = FinalizerRelease(client, self.informers,
                                           lambda cq: len(self.core.holders(cq)))
        self.multikueue = None if gates.get("MultiKueue") is False else MultiKueueController(
            client, self.informers, self.jobs.registry, job_config or {},
            str((job_config or {}).get("namespace") or DEFAULT_NAMESPACE), self._check_verdict,
            metrics=self.metrics)
        self.provisioning = ProvisioningController(client, self.informers, self._check_verdict, self.events,
                                                   timing=self.metrics)
        retain_s = after_finished(job_config or {})
        self.retention = None if retain_s is None else FinishedRetention(client, self.informers["Workload"],
                                                                          retain_s, self.events)

    # -------------------------------------------------------------- informer events

    def _core_handler(self, event: EventType, obj: JSON, old: JSON | None) -> None:
        kind = str(obj.get("kind"))
        meta = obj.get("metadata") or {}
        try:
            if kind == "AdmissionCheck":  # a ProvisioningRequest check delays topology assignment
                if event == EventType.DELETED:
                    self.tas.delete(kind, None, str(meta.get("name")))
                else:
                    self.tas.apply(obj)
            if kind in ("ClusterQueue", "LocalQueue", "Cohort"):  # metrics.customLabels
                source = object_key(obj) if kind == "LocalQueue" else str(meta.get("name"))
                self.metrics.custom_source(kind, source, meta.get("labels"), meta.get("annotations"),
                                           deleted=event == EventType.DELETED)
            if kind == "ClusterQueue":
                self.core.set_terminating(str(meta.get("name")),
                                          event != EventType.DELETED and terminating(obj))
            if event == EventType.DELETED:
                self.core.delete(kind, meta.get("namespace"), str(meta.get("name")))
                if kind == "Workload":  # nothing of it will be written any more
                    key = object_key(obj)
                    self.metrics_feed.touch(key)  # forgotten there too
                    self._retry_held(self.release_order.written(key, self.release_order.token(key)))
            elif kind == "Workload" and self._admitted_elsewhere(obj):
                # Quota reserved by another writer (a previous leader, a test, an external
                # controller): adopt it instead of overwriting it with our pending view.
                self.core.delete(kind, meta.get("namespace"), str(meta.get("name")))
                self.core.apply(obj)
                # Not our admission: not counted.
                self.metrics_feed.baseline((object_key(obj),), ready_since=lambda _: pods_ready_since(obj),
                                           evicted_since=lambda _: evicted_since(obj))
            else:
                self.core.apply(obj)
                if kind == "Workload" and condition_true(obj, keys.WorkloadCondition.FINISHED):
                    self._finished_by_writer(object_key(obj))
        except ObjectError as exc:
            log.warning("ignoring invalid %s %s: %s", kind, object_key(obj), exc)
        if kind == "Workload":
            if event != EventType.DELETED and not self._written.covers(object_key(obj), obj):
                self._follow_others(obj)  # not our own last write, nor a stale copy from before it
            self._seen_workload(event, obj)
            self.jobs.on_workload(event, obj)
            self.provisioning.on_workload(event, obj)
        self._poke()

    def _follow_others(self, obj: JSON) -> None:
        """Take what other writers own in a Workload's status: admission check states (their
        controllers') and a topology assignment rewritten by the extender at bind time. A
        stored value counts as theirs when it differs from the last one both sides agreed on
        (what we wrote, or read), so our own later decisions are never undone by an older copy."""
        key = object_key(obj)
        stored = (_topology_of(obj), _checks_of(obj))
        agreed = self._agreed.get(key)
        self._agreed[key] = stored
        if agreed is None:
            return
        if stored[0] != agreed[0] and self.core.adopt_topology(obj):
            log.info("Workload %s: topology assignment rewritten by another writer; adopted", key)
        for check, state in stored[1].items():
            if state != agreed[1].get(check):
                self.core.set_check_state(key, check, state, _retry_after(obj, check))

    def _seen_workload(self, event: EventType, obj: JSON) -> None:
        key = object_key(obj)
        if event == EventType.DELETED:
            self._written.forget(key)
            self._written_at.pop(key, None)
            self._notice_held_since.pop(key, None)
            self._agreed.pop(key, None)
        else:
            self._written.seen(key, obj)

    def _finished_by_writer(self, key: str) -> None:
        """Another writer (a job controller elsewhere, a test harness) set Finished: release
        the quota as Kueue's workload controller does. The object already says Finished, so
        there is nothing to write back unless a write was owed anyway."""
        self.metrics_feed.touch(key)  # counted as finished even when nothing is written
        self.core.finish(key, stored=True)

    def _admitted_elsewhere(self, obj: JSON) -> bool:
        key = object_key(obj)
        rec = self.core.workload(key)
        if rec is None or rec.holds_quota or rec.status == FINISHED or key in self._reserved_by_us:
            return False
        status = obj.get("status") or {}
        return bool(status.get("admission")) and (
            condition_true(obj, keys.WorkloadCondition.QUOTA_RESERVED)
            or condition_true(obj, keys.WorkloadCondition.ADMITTED))

    def _pods_ready_since(self, key: str) -> float | None:
        stored = self.informers["Workload"].get(key)
        return None if stored is None else pods_ready_since(stored)

    def _evicted_since(self, key: str) -> float | None:
        stored = self.informers["Workload"].get(key)
        return None if stored is None else evicted_since(stored)

    def _check_verdict(self, key: str, check: str, state: str, retry_after_s: float | None = None) -> None:
        """An in-process check controller's verdict, already written to the Workload."""
        if self.core.set_check_state(key, check, state, retry_after_s):
            self._poke()

    def _poke(self) -> None:
        self._kick.set()
        self._queues_dirty.set()

    # -------------------------------------------------------------- lifecycle

    async def start_informers(self) -> None:
        self.events.start()
        await self.jobs.prepare()  # adds the informers of the job kinds this cluster serves
        await self.provisioning.prepare()  # ... and of ProvisioningRequests, when served
        for informer in self.informers.values():
            informer.start()
        self.topology.start()

    async def wait_synced(self, timeout_s: float | None = None) -> None:
        await asyncio.gather(*(i.wait_synced(timeout_s) for i in self.informers.values()),
                             self.topology.wait_synced(timeout_s))

    async def stop(self) -> None:
        if self._release_wait is not None:
            self._release_wait.cancel()
        await self.status_writes.shutdown(drain=True, timeout_s=5.0)
        await self.jobs.stop()
        await self.provisioning.stop()
        for informer in self.informers.values():
            await informer.stop()
        await self.topology.stop()
        await self.events.stop(timeout_s=EVENTS_DRAIN_S)

    async def lead(self) -> None:
        """Leader-only work: scheduling and queue status, after all informers synced."""
        await self.wait_synced()
        with contextlib.suppress(RuntimeError):  # already started in an earlier term as leader
            self.status_writes.start()
        # Jobs are reconciled only by the leader and only once every informer synced: before
        # that a running Job whose Workload was not listed yet looks like one to suspend.
        with contextlib.suppress(RuntimeError):
            self.jobs.start()
        with contextlib.suppress(RuntimeError):
            self.provisioning.start()
        log.info("informers synced: %d workloads, %d cluster queues", len(self.core.all_workloads()),
                 len(self.core.cluster_queues()))
        # Every admitted workload's topology usage is known now: placement may start.
        self.tas.mark_synced()
        self.topology.judge_nodes()  # nodes that failed before the workloads were read
        self.core.requeue_inadmissible()
        if self.metrics.role is ReplicaRole.FOLLOWER:
            self.metrics.set_role(ReplicaRole.LEADER)
        # What the API says now was decided before this process led: never counted again.
        self.metrics_feed.baseline(ready_since=self._pods_ready_since, evicted_since=self._evicted_since)
        # A term cut short may have taken the flag and lost its writes: catch up once.
        self._queues_dirty.set()
        leader_work = [self._schedule_forever(), self._queue_status_forever(), self.finalizers.run()]
        if self.retention is not None:
            leader_work.append(self.retention.run())
        if self.multikueue is not None:
            leader_work.append(self.multikueue.run())
        try:
            await asyncio.gather(*leader_work)
        finally:
            await self._end_term()

    def lose_lease(self) -> None:
        """The Lease is lost: a successor may lead as soon as it runs out, so from now on this
        process changes nothing in the cluster (requests already sent may still land; every
        one carries a resourceVersion, so a successor's newer write makes them conflict)."""
        self.client.fence_writes("this replica lost the leader Lease")  # its pool sharers' too (Events)

    async def _end_term(self) -> None:
        """Stop the leader's writers before the Lease goes to someone else: after finishing
        what is in flight (within ``DRAIN_S``) when the term ends on our side, at once when
        the Lease was lost (the fence refuses their writes anyway)."""
        drain = self.client.fence.reason is None
        await self.jobs.stop(drain=drain, timeout_s=DRAIN_S)
        await self.provisioning.stop(drain=drain, timeout_s=DRAIN_S)
        await self.status_writes.shutdown(drain=drain, timeout_s=DRAIN_S)

    # -------------------------------------------------------------- scheduling

    async def _schedule_forever(self) -> None:
        while True:
            self._kick.clear()
            self.faults.check(FAIL_SCHEDULING)
            await self.schedule_once()
            deadline = self.core.next_deadline()
            timeout = None if deadline is None else max(0.0, deadline - time.time())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._kick.wait()

    async def schedule_once(self) -> None:
        """Fire due timers, cycle until idle, write what changed.

        Cycles run in slices of at most ``CYCLE_SLICE_S``: a long backlog (thousands of
        pending workloads with preemption) would otherwise hold the event loop for many
        seconds, and the admission webhook, probes and Lease renewal share that loop. A
        cycle itself is never split, and between slices informer events land exactly as they
        do between two calls of this method; what changed is queued for writing per slice.
        """
        self.core.fire_timers(time.time())
        while True:
            preemptors, idle = self._run_cycles(CYCLE_SLICE_S)
            changes = self.core.take_changes()
            changed = set(changes.written)
            released_now = set(changes.released)
            # No write has carried a withdrawn reservation: one of its key in flight carries an
            # earlier state (a pending notice). An earlier release still owed is another matter.
            withdrawn = {k for k in changes.withdrawn if self.release_order.token(k) is None}
            self.release_order.released(released_now)
            for key in sorted(released_now):
                if self._release_needs_no_write(key, key in withdrawn):
                    self._retry_held(self.release_order.written(key, self.release_order.token(key)))
            self.release_order.admitted({k for k in changed
                                         if self._takes_quota(k) and self._takes_new_room(k)})
            changed |= self.metrics_feed.observe(changes, self.core.now, preemptors)
            if changed:
                self._queues_dirty.set()
                self.finalizers.poke()
            for key in sorted(changed):
                self.status_writes.add(key, urgent=self._write_is_urgent(key))
            if idle:
                return
            await asyncio.sleep(0)

    def _release_needs_no_write(self, key: str, withdrawn: bool) -> bool:
        """Nothing of the key's reservation is stored, nor on its way (its admission was
        never written, and no write in flight carries it): the API shows its quota free
        already. Waiting for its next write instead would hold admissions behind a write
        that may wait a long time (a pending notice, low priority while the request budget
        is short)."""
        return (withdrawn or key not in self.status_writes.in_flight) and not self._stored_reserved(key)

    def _takes_new_room(self, key: str) -> bool:
        """Its reservation is not stored yet (or was released since): a write of a stored
        reservation (pods ready, a check's state) takes no room and waits for no release."""
        return (self.release_order.token(key) is not None or key in self.status_writes.in_flight
                or not self._stored_reserved(key))

    def _stored_reserved(self, key: str) -> bool:
        current, _ = self._current_workload(key)
        return current is not None and reserved(current.get("status") or {})

    def _takes_quota(self, key: str) -> bool:
        """Holds quota it did not hold before its last write might have (an eviction in
        progress still holds what it had)."""
        rec = self.core.workload(key)
        return rec is not None and rec.holds_quota and rec.stopping is None

    def _optional_writes_wait(self) -> bool:
        """Optional writes (pending notices, queue counts) wait while this holds: the
        client's request budget runs short, or admissions, evictions and finishes wait for
        a writer. The second is the limit when the client's is not: at 300 QPS on a loaded
        kube-apiserver, 16 writers stay busy for minutes, and each count or notice written
        then is apiserver time an admission waits for."""
        return (self.client.limiter.headroom() < PENDING_NOTICE_HEADROOM
                or self.status_writes.urgent_waiting > 0)

    def _notice_overdue(self, key: str) -> bool:
        """The key's pending notice has been held back ``PENDING_NOTICE_MAX_DEFER_S`` (the
        clock starts at the first time it is)."""
        now = time.monotonic()
        return now - self._notice_held_since.setdefault(key, now) >= PENDING_NOTICE_MAX_DEFER_S

    def _write_is_urgent(self, key: str) -> bool:
        """Admissions, evictions and finishes go before telling pending workloads why they
        wait: a backlog of those notices (thousands of new workloads) must not hold back
        the writes that jobs start and stop on."""
        rec = self.core.workload(key)
        return rec is None or rec.holds_quota or rec.status == FINISHED or rec.deactivated \
            or key in self._reserved_by_us

    def _run_cycles(self, budget_s: float) -> tuple[dict[str, str], bool]:
        """Cycle until idle like ``QueueingCore.run_until_idle``, or until ``budget_s`` has
        passed, timing each cycle for ``kueue_admission_attempt*``; returns victim key ->
        preempting ClusterQueue, and whether the core is idle."""
        preemptors: dict[str, str] = {}
        slice_started = time.perf_counter()
        urgent = 0  # writes this slice's cycles made urgent, not queued until it ends
        while True:
            if self.status_writes.urgent_waiting + urgent >= WRITE_BACKLOG_LIMIT:
                self._held_for_writers = True
                return preemptors, True
            started = time.perf_counter()
            result = self.core.next_cycle()
            progress = self.core.apply_cycle(result)
            self.jobs.stop_evicted()
            if result.decisions:
                admitted = any(d.outcome == Outcome.ADMIT for d in result.decisions)
                self.metrics.admission_attempt(admitted, time.perf_counter() - started)
            for cq, skipped in result.preemption_skips.items():
                self.metrics.admission_cycle_preemption_skips(cq, skipped)
            for d in result.decisions:
                if d.outcome == Outcome.PREEMPT:
                    preemptors.update((t, d.cluster_queue) for t in d.targets)
                    urgent += len(d.targets)
                elif d.outcome == Outcome.ADMIT:
                    urgent += 1
            if not progress:
                return preemptors, True
            if time.perf_counter() - slice_started >= budget_s:
                return preemptors, False

    def _current_workload(self, key: str) -> tuple[JSON | None, bool]:
        """The copy to write over and whether it may be trusted to skip an equal write."""
        return self._written.copy_to_write_over(key, self.informers["Workload"].get(key))

    async def _write_workload_status(self, key: str) -> float | None:
        """Write one Workload's status from the core's record, after the releases whose room
        it may take (see ``ReleaseOrder``); returns seconds after which to look again (a
        deferred pending-message update), or None."""
        if self._held_for_writers and self.status_writes.urgent_waiting < WRITE_BACKLOG_LIMIT:
            self._held_for_writers = False  # a writer took a key: there is room to decide again
            self._kick.set()
        rec = self.core.workload(key)
        if rec is not None and self._takes_quota(key) and not self.release_order.may_write(key):
            # Held: written once those releases are; looked at again when the wait runs out.
            if self._release_wait is None:
                loop = asyncio.get_running_loop()
                self._release_wait = loop.call_later(RELEASE_WAIT_S, self._retry_waiting)
            own = self.release_order.token(key)
            if own is not None:
                # Released and reserved again before its release was written: the release
                # waits for nothing, so it goes now. Held whole, two such workloads each
                # reusing the other's room would wait for each other until the wait ran out.
                await self._render_and_write(key, release_only=True)
                self._retry_held(self.release_order.written(key, own))
            return None
        token = self.release_order.token(key)
        again = await self._render_and_write(key)  # raising: the work queue retries it
        if again is None or not self._stored_reserved(key):
            # Written, or deferred while the API shows no reservation of it: its release is stored.
            self._retry_held(self.release_order.written(key, token))
        return again

    def _retry_held(self, keys: set[str]) -> None:
        for key in sorted(keys):
            self.status_writes.add(key, urgent=True)

    def _retry_waiting(self) -> None:
        self._release_wait = None
        self._retry_held(self.release_order.take_blocked())

    async def _render_and_write(self, key: str, release_only: bool = False) -> float | None:
        """Write the core's record of the Workload over the stored one; with ``release_only``
        only its release (if the stored copy still holds a reservation)."""
        namespace, name = key.split("/", 1)
        path = res.WORKLOADS.object_path(name, namespace, "status")
        if not release_only:
            settle = self.core.publish_wait(key, time.time())
            if settle > 0 and not self._stored_reserved(key):
                return settle  # it may yet be withdrawn unseen (QueueingCore.publish_wait)
        current, trusted = self._current_workload(key)
        for _ in range(MAX_CONFLICT_RETRIES):
            rec = self.core.workload(key)
            if rec is None:
                return None
            if current is None:
                current = await self._get(res.WORKLOADS.object_path(name, namespace))
                trusted = True
                if current is None:
                    return None
                if self._admitted_elsewhere(current):
                    self._core_handler(EventType.MODIFIED, current, None)
                    return None
                self._follow_others(current)  # a 409 may be a check controller's or the extender's
            if rec.status != FINISHED and condition_true(current, keys.WorkloadCondition.FINISHED):
                # Stored finished by its job's controller before the core saw it: what this
                # write carries (most often an eviction decided on the older copy) is moot,
                # and written it would mark a finished job preempted. The core takes the
                # finish now, its quota released, as it would from the informer.
                self._core_handler(EventType.MODIFIED, current, None)
                return None
            if rec.holds_quota:
                self._reserved_by_us.add(key)
            if rec.deactivation_unwritten and (current.get("spec") or {}).get("active", True) is not False:
                # Kueue deactivates by setting spec.active (a rejected check, too many
                # requeues); written before the status that says why, so no copy read back
                # shows the eviction without it.
                try:
                    current = await self.client.patch(res.WORKLOADS.object_path(name, namespace),
                                                      {"spec": {"active": False}})
                except ApiError as exc:
                    if exc.not_found:
                        return None
                    raise
                trusted = True  # fresh from the API
            delayed, unhealthy = self.tas.status_fields(key)
            status = workload_status(rec, self.core.now, delayed_topology=delayed, unhealthy_nodes=unhealthy,
                                     tiered=self.core.config.tiered_reasons)
            if rec.status == FINISHED:
                # The job's verdict, else the core's own (a replaced elastic slice), else done.
                finished = self._finished.get(key) or (Finished(*rec.finished_as) if rec.finished_as
                                                       else SUCCEEDED)
                old = current.get("status") or {}
                status = {**old, "conditions": _finished_conditions(old, finished, self.core.now)}
            elif rec.status == ADMITTED:
                status["conditions"] = [*(status.get("conditions") or ()),
                                        _pods_ready_condition(rec.pods_ready, self.core.now)]
            old_status = current.get("status") or {}
            if "admissionChecks" in status:  # states are ours, the rest their controllers'
                status["admissionChecks"] = carry_check_details(old_status.get("admissionChecks") or (),
                                                                status["admissionChecks"], self.core.now)
            if not self.core.config.tiered_reasons and rec.status != FINISHED:
                status = legacy_admitted(old_status, status, self.core.now)
            if release_only:
                if not reserved(old_status):
                    return None  # the API shows it released already
                status = released(old_status, _keep_times(old_status, status), _timestamp(self.core.now))
            if trusted and not old_status.get("conditions") and self.core.awaiting_turn(key):
                return None  # new and queued: its first condition is the scheduler's first verdict
            new_status = accumulate_execution(old_status, _keep_times(old_status, status), self.core.now)
            if trusted and new_status == old_status:
                return None
            if trusted and only_pending_message_changed(old_status, new_status):
                wait = self._written_at.get(key, 0.0) + PENDING_MESSAGE_INTERVAL_S - time.monotonic()
                if wait > 0:
                    return wait
            if trusted and pending_notice(old_status, new_status) and self._optional_writes_wait() \
                    and not self._notice_overdue(key):
                # Telling a never-admitted workload why it waits gives way to admissions and
                # evictions while the request budget runs low; it may be outdated
                # (admitted meanwhile) by the time budget is back.
                return PENDING_NOTICE_RETRY_S
            if reservation_moved(old_status, new_status):
                # Released and reserved again elsewhere before the release was written: the
                # API takes no change of a reserved admission, so the release goes first.
                new_status = released(old_status, new_status, _timestamp(self.core.now))
            if rec.holds_quota and not release_only and self.core.publish(key):
                # It may be stored from here on: no longer withdrawn, and counted as admitted.
                self.metrics_feed.published(key, self.core.now)
            # What this write makes true, as Kueue's events say it: decided now, from the record
            # the status was rendered from (the core may move on while the write is out), and
            # recorded only once the API took it.
            planned = workload_events(current, {**current, "status": new_status}, rec, time.time(),
                                      tiered=self.core.config.tiered_reasons)
            try:
                # Only what changed, on the copy it was computed from (409 if that is stale).
                written = await self.client.patch(path, {
                    "metadata": {"resourceVersion": _rv(current)},
                    "status": merge_patch(old_status, new_status)})
            except ApiError as exc:
                if exc.not_found:
                    return None
                if not exc.conflict:
                    raise  # the work queue retries with backoff
                current = None  # re-read and recompute from the fresh object
                continue
            # Kept until the informer shows it; not when its echo (or a later version) came
            # first: waiting for an echo that has passed would hide other writers' changes (a
            # check controller's verdict) from _follow_others.
            self._written.wrote(key, current, written, self.informers["Workload"].get(key))
            self.events.record_all(pinned(planned, current, written))  # queued, not sent here
            self._written_at[key] = time.monotonic()
            self._notice_held_since.pop(key, None)
            self._agreed[key] = (_topology_of(written), _checks_of(written))
            if not release_only and reservation_moved(old_status, _keep_times(old_status, status)):
                current, trusted = written, True  # now the new reservation, on the released copy
                continue
            return None
        # Not counted written: the work queue tries again after a pause, from a fresh read.
        raise WriteConflicts(f"Workload {key}: {MAX_CONFLICT_RETRIES} conflicting writes in a row")

    async def _get(self, path: str) -> JSON | None:
        return await self.client.get_or_none(path)

    # -------------------------------------------------------------- queue status

    async def _queue_status_forever(self) -> None:
        failures = 0
        while True:
            await self._queues_dirty.wait()
            # Queue statuses (counts) give way to workload writes while the client's request
            # budget is low or workload writes queue up, as pending notices do; they catch
            # up once that ends, or after the longest deferral.
            defer_until = time.monotonic() + self._queue_status_max_defer()
            while self._optional_writes_wait() and time.monotonic() < defer_until:
                await asyncio.sleep(QUEUE_STATUS_PERIOD_S)  # polling the budget, not synchronisation
            self._queues_dirty.clear()
            if await self.write_queue_statuses():
                failures = 0
            else:
                self._queues_dirty.set()  # the failed ones again, after a growing pause
                failures += 1
            pause = QUEUE_STATUS_RETRY.delay(failures - 1) if failures else QUEUE_STATUS_PERIOD_S
            await asyncio.sleep(pause)  # rate limit, not synchronisation

    def _queue_status_max_defer(self) -> float:
        limiter = self.client.limiter
        queues = len(self.informers["ClusterQueue"]) + len(self.informers["LocalQueue"])
        return queue_status_max_defer(queues, limiter.qps if limiter.enabled else None)

    async def write_queue_statuses(self) -> bool:
        """Write every ClusterQueue and LocalQueue status that changed, a few at a time;
        returns whether all of them were written (failures are logged, never raised)."""
        index = QueueIndex.build(self.core)
        writes = []
        for obj in self.informers["ClusterQueue"].items():
            name = str(obj["metadata"]["name"])
            writes.append((res.CLUSTER_QUEUES, obj, partial(cluster_queue_status, self.core, name, index)))
        for obj in self.informers["LocalQueue"].items():
            ns, name = str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"])
            writes.append((res.LOCAL_QUEUES, obj, partial(local_queue_status, self.core, ns, name, index)))
        limit = asyncio.Semaphore(QUEUE_STATUS_WRITERS)

        async def one(ref: ResourceRef, obj: JSON, compute: Callable[[], JSON]) -> bool:
            async with limit:
                try:
                    return await self._write_queue(ref, obj, compute)
                except REQUEST_ERRORS as exc:
                    log.warning("writing status of %s %s failed: %s", ref.kind, obj["metadata"]["name"], exc)
                    return False

        return all(await asyncio.gather(*(one(*w) for w in writes)))

    async def _write_queue(self, ref: ResourceRef, obj: JSON, compute: Callable[[], JSON]) -> bool:
        meta = obj["metadata"]
        current: JSON | None = obj
        for _ in range(MAX_CONFLICT_RETRIES):
            if current is None:
                current = await self._get(ref.object_path(meta["name"], meta.get("namespace")))
                if current is None:
                    return True
            status = compute()
            old = current.get("status") or {}
            if same_status({k: old.get(k) for k in status}, status):
                return True
            now = _timestamp(time.time())
            for cond in status["conditions"]:
                cond["lastTransitionTime"] = now
            try:
                await self.client.replace(ref.object_path(meta["name"], meta.get("namespace"), "status"),
                                          {**current, "status": {**old, **status}})
                return True
            except ApiError as exc:
                if exc.not_found:
                    return True  # deleted meanwhile: nothing left to show
                if not exc.conflict:
                    raise
                current = None
        log.warning("gave up writing status of %s %s after %d conflicts", ref.kind, meta["name"],
                    MAX_CONFLICT_RETRIES)
        return False


def queue_status_max_defer(queues: int, qps: float | None) -> float:
    """How long queue statuses may wait for request budget: ``QUEUE_STATUS_MAX_DEFER_S``, or
    long enough that a pass over ``queues`` takes at most ``QUEUE_STATUS_BUDGET_SHARE`` of a
    client limited to ``qps`` (None: unlimited)."""
    if not qps:
        return QUEUE_STATUS_MAX_DEFER_S
    return max(QUEUE_STATUS_MAX_DEFER_S, queues / (QUEUE_STATUS_BUDGET_SHARE * qps))


def pinned(events: list[EventRecord], before: JSON, written: JSON) -> list[EventRecord]:
    """The events about the written object, pointed at the version the write made."""
    ref, was = ObjectReference.of(written), ObjectReference.of(before).identity
    return [replace(e, regarding=ref) if e.regarding.identity == was else e for e in events]


def _rv(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def pending_notice(old: JSON, new: JSON) -> bool:
    """The write only tells a workload that never held quota (per both statuses) that it
    is pending: no admission before or after, QuotaReserved False after (and Admitted False
    beside it, as the tiered reasons write it)."""
    if old.get("admission") or new.get("admission"):
        return False
    conds = {c.get("type"): c.get("status") for c in new.get("conditions") or ()}
    old_conds = {c.get("type"): c.get("status") for c in old.get("conditions") or ()}
    notice = (keys.WorkloadCondition.QUOTA_RESERVED, keys.WorkloadCondition.ADMITTED)
    return all(conds.get(t, "False") == "False" and old_conds.get(t) != "True" for t in notice) and \
        keys.WorkloadCondition.QUOTA_RESERVED in conds and \
        all(old_conds.get(t) == st for t, st in conds.items() if t not in notice)


def only_pending_message_changed(old: JSON, new: JSON) -> bool:
    """The new status differs from the old one only in the message of a pending
    (QuotaReserved=False, same reason) condition: the one change that may wait."""
    def split(s: JSON) -> tuple[JSON, list[JSON], JSON | None]:
        conds = list(s.get("conditions") or ())
        pending = next((c for c in conds if c.get("type") == keys.WorkloadCondition.QUOTA_RESERVED
                        and c.get("status") == "False"), None)
        rest = [c for c in conds if c is not pending]
        return {k: v for k, v in s.items() if k != "conditions"}, rest, pending

    old_fields, old_rest, old_pending = split(old)
    new_fields, new_rest, new_pending = split(new)
    if old_pending is None or new_pending is None or old_fields != new_fields or old_rest != new_rest:
        return False
    strip = ("message", "lastTransitionTime")
    return ({k: v for k, v in old_pending.items() if k not in strip}
            == {k: v for k, v in new_pending.items() if k not in strip}
            and old_pending.get("message") != new_pending.get("message"))


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


def true_since(workload: JSON, kind: str) -> float | None:
    """When the stored Workload's condition ``kind`` turned true, or None while it is not."""
    for cond in (workload.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind and cond.get("status") == "True":
            try:
                return parse_time(cond.get("lastTransitionTime"))
            except ObjectError:
                return None
    return None


def pods_ready_since(workload: JSON) -> float | None:
    """When the stored Workload's pods became ready (its PodsReady condition's time), or None
    while they are not."""
    return true_since(workload, keys.WorkloadCondition.PODS_READY)


def evicted_since(workload: JSON) -> float | None:
    """When the stored Workload was evicted (its Evicted condition's time), or None."""
    return true_since(workload, keys.WorkloadCondition.EVICTED)


def _pods_ready_condition(ready: bool, now: float) -> JSON:
    """Kueue's PodsReady condition of an admitted workload (from the job's ready pods)."""
    if ready:
        return {"type": keys.WorkloadCondition.PODS_READY, "status": "True", "reason": "Started",
                "message": "All pods reached readiness and the workload is running",
                "lastTransitionTime": _timestamp(now)}
    return {"type": keys.WorkloadCondition.PODS_READY, "status": "False", "reason": "WaitForStart",
            "message": "Not all pods are ready or succeeded", "lastTransitionTime": _timestamp(now)}


def _topology_of(workload: JSON) -> dict[str, Any]:
    """PodSet name -> stored topologyAssignment (None where there is none)."""
    admission = (workload.get("status") or {}).get("admission") or {}
    return {str(p.get("name") or "main"): p.get("topologyAssignment")
            for p in admission.get("podSetAssignments") or ()}


def _retry_after(workload: JSON, check: str) -> float | None:
    """A check in Retry: the backoff its controller asked for (``requeueAfterSeconds``)."""
    for entry in (workload.get("status") or {}).get("admissionChecks") or ():
        if entry.get("name") == check and entry.get("state") == "Retry" and \
                entry.get("requeueAfterSeconds") is not None:
            return float(entry["requeueAfterSeconds"])
    return None


def _checks_of(workload: JSON) -> dict[str, str]:
    """Admission check name -> state, as stored."""
    return {str(c.get("name")): str(c.get("state") or "Pending")
            for c in (workload.get("status") or {}).get("admissionChecks") or () if c.get("name")}


def _finished_conditions(old: JSON, finished: Finished, now: float) -> list[JSON]:
    """Finished keeps the admission history (Kueue leaves QuotaReserved/Admitted in place);
    reason and message are the job's own verdict."""
    conditions = [c for c in old.get("conditions") or () if c.get("type") != keys.WorkloadCondition.FINISHED]
    conditions.append({"type": keys.WorkloadCondition.FINISHED, "status": "True", "reason": finished.reason,
                       "message": finished.message, "lastTransitionTime": _timestamp(now)})
    return conditions

