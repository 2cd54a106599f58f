"""The workload state machine: Pending, QuotaReserved, Admitted, Finished, and the ways between.

:class:`WorkloadLifecycle` owns the :class:`~.workload_state.WorkloadRecord` of every
Workload and moves it on each event: a Workload created, changed or read back admitted,
routed to the queue of its LocalQueue's ClusterQueue (or told why not), a reservation made by
a cycle, an admission check's verdict, pods ready, an eviction (with the quota held until the
job stopped, when the manager runs it), a requeue backoff or PodsReady timeout, a finish. It
also keeps the cache's structure current (:meth:`ensure`): a rebuilt tree re-routes every
pending workload. What the caller has to act on is noted in the :class:`ChangeLog`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pykueue.api import keys

from . import max_execution
from .assignment import Assignment, Decision, Mode, PodSetAssignment
from .cache import ClusterCache
from .changes import CoreChanges
from .config import CoreConfig
from .hooks import TopologyTracker
from .objects import FR, WorkloadDef, amount, parse_time, workload_from
from .pending import PendingQueues
from .queues import scheduling_shape
from .reasons import (
    ROUTING,
    SCHEDULER,
    TAS_NODE_CONTROLLER,
    USER_DEACTIVATION,
    WORKLOAD_CONTROLLER,
    EvictionNote,
    Pending,
    PendingReason,
    checks_message,
)
from .timers import AFS_SAMPLE, BACKOFF, MAX_EXECUTION, PODS_READY, REQUEUE, Clock, Timers
from .workload_state import ADMITTED, FINISHED, PENDING, QUOTA_RESERVED, Stopping, WorkloadRecord

ON_HOLD = "OnHold"  # the QuotaReserved=False reason of a workload its job put on hold


class ChangeLog:
    """The core's own notes of what changed, until they are taken (mutable, internal)."""

    def __init__(self, track_releases: bool = False) -> None:
        self.written: set[str] = set()
        self.pods_ready: set[str] = set()
        # None: releases are not tracked (only a caller that orders its writes by them asks).
        self.released: set[str] | None = set() if track_releases else None
        # Of the released, those whose only release since the last take took back an
        # unpublished reservation: nothing of it was ever sent, so no write carries its release.
        self.withdrawn: set[str] = set()
        # Withdrawals per ClusterQueue: each a preemption target no API reader saw admitted.
        self.withdrawals: dict[str, int] = {}
        # Workloads that started stopping (evicted, quota held) since the last take_stopping.
        self.stopping: set[str] = set()
        self.replaced_slices: dict[str, int] = {}

    def released_quota(self, key: str) -> None:
        if self.released is not None:
            self.released.add(key)
            self.withdrawn.discard(key)

    def first_release(self, key: str) -> bool:
        """Whether ``key`` is tracked and was not released since the last take."""
        return self.released is not None and key not in self.released

    def withdrew(self, cluster_queue: str) -> None:
        self.withdrawals[cluster_queue] = self.withdrawals.get(cluster_queue, 0) + 1

    def replaced_slice(self, cluster_queue: str) -> None:
        self.replaced_slices[cluster_queue] = self.replaced_slices.get(cluster_queue, 0) + 1

    def stored_elsewhere(self, key: str) -> None:
        """Another writer stored the workload's latest state: nothing to write, nor to wait for."""
        self.written.discard(key)
        if self.released is not None:
            self.released.discard(key)

    def take(self, alive: Mapping[str, object]) -> CoreChanges:
        """Everything but ``stopping``, of the workloads still ``alive`` (the counts and
        PodsReady changes as noted); starts tracking releases."""
        written, self.written = self.written, set()
        released, self.released = self.released or set(), set()
        withdrawn, self.withdrawn = self.withdrawn, set()
        pods_ready, self.pods_ready = self.pods_ready, set()
        withdrawals, self.withdrawals = self.withdrawals, {}
        replaced, self.replaced_slices = self.replaced_slices, {}
        return CoreChanges(frozenset(k for k in written if k in alive),
                           frozenset(k for k in released if k in alive),
                           frozenset(k for k in withdrawn if k in alive),
                           frozenset(pods_ready), withdrawals, replaced)

    def take_stopping(self) -> set[str]:
        out, self.stopping = self.stopping, set()
        return out


class WorkloadLifecycle:
    def __init__(self, config: CoreConfig, clock: Clock, timers: Timers, changes: ChangeLog,
                 cache: ClusterCache, pending: PendingQueues, tas: TopologyTracker | None,
                 workloads: dict[str, WorkloadRecord]) -> None:
        self._config = config
        self._clock = clock
        self._timers = timers
        self._changes = changes
        self._cache = cache
        self._pending = pending
        self._tas = tas
        self.workloads = workloads
        self._created = 0
        self._reservations = itertools.count(1)  # WorkloadRecord.reserved_seq

    # ---------------------------------------------------------------- structure

    def ensure(self) -> None:
        """Rebuild a changed structure: the quota tree and usage, then every pending workload
        re-routed and every parked one requeued."""
        if not self._cache.dirty:
            return
        self._cache.rebuild(self.workloads.values())
        for name in self._cache.cq_defs:
            self._pending.queue(name)
        for rec in self.workloads.values():
            if rec.status == PENDING and not rec.deactivated and rec.requeue_at is None:
                self._route(rec)
        for rec in list(self.workloads.values()):
            self._drain_if_stopped(rec)
        self._pending.requeue_all()

    # ---------------------------------------------------------------- Workload objects

    def apply_workload(self, obj: dict[str, Any]) -> WorkloadRecord:
        self._created += 1
        config = self._config
        wl = workload_from(obj, default_created=self._clock.now + self._created * 1e-6,
                           transformations=config.transformations, excluded_prefixes=config.excluded_prefixes,
                           reclaimable_pods=config.reclaimable_pods)
        prio = self._cache.priority_of(wl)
        old = self.workloads.get(wl.key)
        if old is not None:
            held = self._cache.holds(old.cluster_queue, old.key)
            if held and (prio, wl.uid) != (old.priority, old.wl.uid):
                self._cache.holders_changed(old.cluster_queue)
            resized = old.wl.podsets != wl.podsets
            limit_moved = old.wl.max_execution_s != wl.max_execution_s
            old.wl, old.priority = wl, prio
            if limit_moved:
                self._limit_execution(old)
            old.shape = scheduling_shape(prio, wl.podsets)
            if old.holds_quota:
                self._follow_counts(old)
            if not wl.active:
                old.deactivation_unwritten = False  # it is stored now
            if old.stopping is not None:
                self._follow_active_while_stopping(old, wl.active)
                return old
            flipped = old.deactivated != (not wl.active)
            if flipped and old.status != FINISHED and not old.deactivation_unwritten:
                self._set_active(old, wl.active)
            elif old.status == PENDING and not old.deactivated:
                # Kueue's PushOrUpdate: a changed spec may fit now, so it leaves the parked.
                self._route(old, unpark=resized)
            return old
        # Rebuild a changed structure before the record exists: the rebuild routes every
        # pending record, and one about to be read as admitted must not be queued as well
        # (it would take its queue's head in the next cycle).
        self.ensure()
        rec = WorkloadRecord(wl=wl, priority=prio, queue_ts=wl.created,
                             shape=scheduling_shape(prio, wl.podsets))
        self.workloads[wl.key] = rec
        status = obj.get("status") or {}
        conds = {c.get("type"): c for c in status.get("conditions") or ()}

        def true(t: str) -> bool:
            return (conds.get(t) or {}).get("status") == "True"

        if true("Finished"):
            rec.status = FINISHED
            return rec
        if not wl.active:
            rec.deactivated = True
            rec.pending = PendingReason(Pending.DEACTIVATED)
            self._changes.written.add(rec.key)
            return rec
        admission = status.get("admission")
        if admission and (true("QuotaReserved") or true("Admitted")):
            self.ensure()
            evicted = str((conds.get("Evicted") or {}).get("reason") or "Evicted") \
                if true("Evicted") else None
            if evicted is not None:  # its wording as stored: another process chose it
                rec.eviction_note = EvictionNote(str((conds.get("Evicted") or {}).get("message") or ""),
                                                 WORKLOAD_CONTROLLER)
            self._take_admitted(rec, admission, status, admitted=true("Admitted"),
                                pods_ready=true("PodsReady"), evicted=evicted)
            return rec
        # Read back after a restart: a verdict that wrote them was given already.
        rec.requests_reported = bool(status.get("resourceRequests"))
        reserved = conds.get("QuotaReserved") or {}
        if reserved.get("status") == "False" and reserved.get("reason") == ON_HOLD:
            rec.on_hold = str(reserved.get("message") or "")  # its job keeps it so
        self._route(rec)
        return rec

    def delete(self, key: str) -> bool:
        rec = self.workloads.get(key)
        if rec is None:
            return False
        self._leave(rec)
        del self.workloads[key]
        self._changes.pods_ready.discard(key)
        return True

    def _follow_counts(self, rec: WorkloadRecord) -> None:
        """A holder whose pod sets shrank below their admitted counts (an elastic job scaled
        down, pods reclaimed) holds only what its pods need now; the rest is free at once."""
        if rec.assignment is None:
            return
        counts = {ps.name: ps.count for ps in rec.wl.podsets}
        if all(counts.get(psa.name, psa.count) >= psa.count for psa in rec.assignment.podsets):
            return  # nothing shrank (most updates are status echoes)
        held = held_usage(rec.assignment, rec.wl)
        if held == rec.usage:
            return
        node = self._cache.charge(rec.cluster_queue, rec.usage, sign=-1)
        self._cache.charge(rec.cluster_queue, held)
        freed = any(held.get(fr, 0) < v for fr, v in rec.usage.items())
        rec.usage = held
        self._cache.holders_changed(rec.cluster_queue)
        if freed and node is not None:
            self._pending.requeue_tree(node)

    def _take_admitted(self, rec: WorkloadRecord, admission: dict[str, Any], status: dict[str, Any],
                       admitted: bool, pods_ready: bool, evicted: str | None = None) -> None:
        """``evicted``: the reason of an Evicted condition still True beside the reservation
        (read mid-eviction: its job has not stopped yet)."""
        now = self._clock.now
        cq_name = admission.get("clusterQueue") or ""
        by_name = {ps.name: ps for ps in rec.wl.podsets}
        podsets: list[PodSetAssignment] = []
        total: dict[FR, int] = {}
        for psa in admission.get("podSetAssignments") or ():
            name = psa.get("name") or "main"
            ps = by_name.get(name)
            count = int(psa.get("count", ps.count if ps else 1))
            flavors = {str(r): str(f) for r, f in (psa.get("flavors") or {}).items()}
            if psa.get("resourceUsage"):
                used = {str(r): amount(str(r), q, f"Workload {rec.key}")
                        for r, q in psa["resourceUsage"].items()}
            else:
                used = {r: v * count for r, v in (ps.requests if ps else {}).items()}
            for r, f in flavors.items():
                if r in used:
                    total[(f, r)] = total.get((f, r), 0) + used[r]
            podsets.append(PodSetAssignment(name, count, flavors, used,
                                            topology_assignment=psa.get("topologyAssignment")))
        rec.assignment = Assignment(podsets, Mode.FIT, 0, total)
        rec.cluster_queue = cq_name
        rec.usage = held_usage(rec.assignment, rec.wl)
        # Kueue orders preemption candidates by their QuotaReserved transition (most recent
        # first), so a workload read as admitted keeps the time its condition says.
        times = {c.get("type"): parse_time(c.get("lastTransitionTime"))
                 for c in status.get("conditions") or () if isinstance(c, dict)}
        reserved = times.get("QuotaReserved") or times.get("Admitted")
        rec.reserved_at = now if reserved is None else min(reserved, now)
        rec.reserved_seq = 0  # read, not made here: its time says more than the order we read it in
        rec.checks = {c["name"]: c.get("state", "Pending") for c in status.get("admissionChecks") or ()
                      if c.get("name")}
        rec.status = ADMITTED if admitted else QUOTA_RESERVED
        if admitted:
            rec.admitted_at = now
            # With waitForPodsReady, Kueue reads readiness from the PodsReady condition and
            # counts the timeout from the Admitted transition: a workload admitted before
            # this process started whose pods never became ready still times out (the job
            # reconciler marks it ready if they are).
            wfpr = self._config.wait_for_pods_ready
            rec.pods_ready = pods_ready or wfpr is None
            since = times.get("Admitted")
            rec.admitted_since = admitted_since = now if since is None else min(since, now)
            if wfpr is not None and not rec.pods_ready:
                self._timer(admitted_since + wfpr.timeout, PODS_READY, rec)
            self._limit_execution(rec)
        self._cache.hold(cq_name, rec)
        self._cache.charge(cq_name, rec.usage)
        if self._tas is not None:
            self._tas.adopt(rec.key, rec.wl, rec.assignment, self._cache.flavors)
        if evicted is not None:
            self.evict(rec, evicted, requeue_now=True, note=rec.eviction_note)
            return
        # Kueue drains a stopped queue also of what was admitted before it was read.
        self._drain_if_stopped(rec)

    def adopt_topology(self, obj: dict[str, Any]) -> bool:
        """Another writer (the extender, replacing a failed node at bind time) rewrote the
        topology assignment of a workload holding quota: take the stored assignment and
        unhealthy nodes as they are, so the next status write keeps them. True if changed."""
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        rec = self.workloads.get(key)
        if rec is None or not rec.holds_quota or rec.assignment is None or self._tas is None:
            return False
        status = obj.get("status") or {}
        stored = {str(p.get("name") or "main"): p.get("topologyAssignment")
                  for p in (status.get("admission") or {}).get("podSetAssignments") or ()}
        ours = {p.name: p.topology_assignment for p in rec.assignment.podsets}
        if set(stored) != set(ours) or any(not stored[n] for n in ours if ours[n]) or stored == ours:
            return False  # unchanged, or not a rewrite of this admission
        for psa in rec.assignment.podsets:
            psa.topology_assignment = stored[psa.name]
        self._tas.adopt(key, replace(rec.wl, source=obj), rec.assignment, self._cache.flavors)
        return True

    # ---------------------------------------------------------------- routing

    def _drain_if_stopped(self, rec: WorkloadRecord) -> None:
        """A quota holder of a stopped queue, as Kueue's workload controller treats it (the
        LocalQueue first): an admitted workload is evicted under HoldAndDrain and keeps
        running under Hold; one still waiting for its checks loses the reservation under
        either, without an eviction (Kueue unsets it: nothing ran, nothing to stop)."""
        if not rec.holds_quota:
            return
        cq = self._cache.cq_defs.get(rec.cluster_queue or "")
        lq = self._cache.local_queue_of(rec.wl)
        for policy, reason in ((lq.stop_policy if lq else "None", keys.Reason.LOCAL_QUEUE_STOPPED),
                               (cq.stop_policy if cq else "None", keys.Reason.CLUSTER_QUEUE_STOPPED)):
            if policy == "None":
                continue
            if rec.status == QUOTA_RESERVED:
                self._release(rec)
                rec.generation += 1
                self._route(rec)
                return
            if policy == "HoldAndDrain":
                self.evict(rec, reason, requeue_now=True)
                return

    def _route(self, rec: WorkloadRecord, unpark: bool = False) -> None:
        """Put a pending workload in the queue of its LocalQueue's ClusterQueue, or say why not
        (``unpark``: even if it waits among the inadmissible)."""
        self._changes.written.add(rec.key)
        if rec.on_hold is not None:  # not queued until its job lifts the hold
            rec.pending = PendingReason(Pending.ON_HOLD, detail=rec.on_hold)
            self._pending.place(rec, None, unpark)
            return
        wl = rec.wl
        lq = self._cache.local_queue_of(wl)
        inactive = self._cache.inactive
        target: str | None = None
        if not wl.queue_name:
            rec.pending = PendingReason(Pending.NO_QUEUE_NAME)
        elif lq is None:
            rec.pending = PendingReason(Pending.LOCAL_QUEUE_NOT_FOUND, wl.queue_name)
        elif lq.stop_policy != "None":
            rec.pending = PendingReason(Pending.LOCAL_QUEUE_STOPPED, wl.queue_name)
        elif lq.cluster_queue not in self._cache.cq_defs:
            rec.pending = PendingReason(Pending.CLUSTER_QUEUE_NOT_FOUND, lq.cluster_queue)
        else:
            target = lq.cluster_queue
            gated = self._admission_gate(rec)
            if target in inactive:
                rec.pending = inactive[target]
            elif gated:  # Kueue does not queue it until the annotation is cleared
                rec.pending = PendingReason(Pending.ADMISSION_GATED, target, gated)
                target = None
            elif rec.pending is None or rec.pending.kind in ROUTING:
                # A reason routing wrote is stale now that the queue is usable.
                stale = rec.pending is not None
                rec.pending = PendingReason(Pending.WAITING_FOR_TURN, target)
                if stale:
                    rec.pending = self._pending.behind_equivalent(rec, target) or rec.pending
        self._pending.place(rec, target, unpark)

    def _admission_gate(self, rec: WorkloadRecord) -> str:
        """Who gates the workload's admission (Kueue's AdmissionGatedBy), empty when nobody."""
        if not self._config.admission_gated_by:
            return ""
        annotations = (rec.wl.source.get("metadata") or {}).get("annotations") or {}
        return str(annotations.get(keys.ADMISSION_GATED_BY) or "")

    # ---------------------------------------------------------------- reservations

    def reserve(self, rec: WorkloadRecord, d: Decision) -> None:
        """A cycle's admission: the quota of ``d`` is the workload's, Admitted at once unless
        admission checks apply to the flavors it got."""
        assert d.assignment is not None
        self._changes.written.add(rec.key)
        rec.preempting = False
        rec.generation += 1
        rec.status = QUOTA_RESERVED
        rec.cluster_queue = d.cluster_queue
        rec.assignment = d.assignment
        rec.usage = dict(d.assignment.usage)
        rec.reserved_at = self._clock.now
        rec.reserved_seq = next(self._reservations)
        rec.unpublished = self._config.withdraw_unpublished
        rec.pending = None
        rec.requests_reported = False  # the admission's resourceUsage supersedes them
        self._cache.hold(d.cluster_queue, rec)
        self._cache.charge(d.cluster_queue, rec.usage)
        cq = self._cache.cq_defs[d.cluster_queue]
        used = {f for ps in d.assignment.podsets for f in ps.flavors.values()}
        rec.checks = {r.name: "Pending" for r in sorted(cq.checks, key=lambda r: r.name)
                      if not r.on_flavors or r.on_flavors & used}
        if not rec.checks:
            self.admit(rec)

    def admit(self, rec: WorkloadRecord) -> None:
        self._changes.written.add(rec.key)
        now = self._clock.now
        rec.status = ADMITTED
        rec.admitted_at = rec.admitted_since = now
        rec.pods_ready = False
        rec.generation += 1
        wfpr = self._config.wait_for_pods_ready
        if wfpr is not None:
            self._timer(now + wfpr.timeout, PODS_READY, rec)
        self._limit_execution(rec)

    def publish(self, key: str) -> bool:
        """A write carrying the workload's reservation out of the core starts: from now on
        taking it back is an eviction. Returns whether the reservation was unpublished."""
        rec = self.workloads.get(key)
        if rec is None or not rec.unpublished:
            return False
        rec.unpublished = False
        self._cache.holders_changed(rec.cluster_queue)  # it moves back among the victims
        return True

    def replace_slice(self, old_key: str, new: WorkloadRecord) -> None:
        """The scaled-up slice ``new`` was admitted: the slice it replaces is finished and its
        quota, counted as ``new``'s own, goes with it (Kueue's replaceWorkloadSlice)."""
        old = self.workloads.get(old_key)
        if old is None or old.status == FINISHED:
            return
        job_uid = ((new.wl.source.get("metadata") or {}).get("labels") or {}).get(keys.JOB_UID) or ""
        cq = old.cluster_queue or ""
        old.finished_as = (keys.Reason.WORKLOAD_SLICE_REPLACED,
                           f"Replaced to accommodate a workload (UID: {new.wl.uid}, JobUID: {job_uid}) "
                           "due to workload slice aggregation")
        self.finish(old_key)
        new.took_over = old_key
        self._changes.replaced_slice(cq)

    # ---------------------------------------------------------------- leaving

    def finish(self, key: str) -> bool:
        rec = self.workloads.get(key)
        if rec is None:
            return False
        if rec.status != FINISHED:
            self._changes.written.add(key)
            self._leave(rec)
            rec.status = FINISHED
            rec.pending = None
        return True

    def _leave(self, rec: WorkloadRecord) -> None:
        """The workload stops competing: release its quota or take it out of its queue."""
        rec.generation += 1
        rec.preempting = False
        if rec.holds_quota:
            self._release(rec)
        else:
            self._pending.remove(rec.cluster_queue, rec.key)
        rec.requeue_at = None

    def _release(self, rec: WorkloadRecord) -> None:
        self._changes.written.add(rec.key)
        rec.stopping = None
        self._changes.released_quota(rec.key)
        if self._tas is not None:
            self._tas.release(rec.key)
        self._cache.unhold(rec.cluster_queue, rec.key)
        node = self._cache.charge(rec.cluster_queue, rec.usage, sign=-1)
        if node is not None:
            self._pending.requeue_tree(node)
        rec.usage = {}
        rec.assignment = None
        rec.took_over = None
        rec.status = PENDING
        rec.admitted_at = rec.reserved_at = rec.admitted_since = None
        rec.execution_timer = None
        rec.pods_ready = False

    def evict(self, rec: WorkloadRecord, reason: str, requeue_now: bool = False,
              backoff: float | None = None, deactivate: bool = False,
              note: EvictionNote | None = None) -> None:
        """Evict a workload holding quota. With ``hold_quota_until_stopped`` it keeps its
        quota (Evicted while QuotaReserved) until :meth:`job_stopped`; a second eviction
        meanwhile changes nothing but may turn it into a deactivation. ``note``: Kueue's
        wording of it, when the caller knows more than the reason (see ``eviction_note``)."""
        if deactivate and reason != USER_DEACTIVATION:
            # Kueue sets spec.active first and then evicts: written before the eviction.
            rec.deactivation_unwritten = True
        if rec.stopping is not None:
            if deactivate:
                rec.stopping = replace(rec.stopping, deactivated_by=reason)
            return
        self._changes.written.add(rec.key)
        rec.generation += 1
        rec.evictions.append(reason)
        rec.eviction_note = note or eviction_note(rec, reason)
        # A backoff runs from the eviction, however long the job takes to stop.
        now = self._clock.now
        backoff_until = None if backoff is None or backoff <= 0 or requeue_now else now + backoff
        stop = Stopping(reason, backoff_until, reason if deactivate else None)
        if self._config.hold_quota_until_stopped:
            rec.stopping = stop
            self._cache.holders_changed(rec.cluster_queue)  # a stopping workload is the first victim
            self._changes.stopping.add(rec.key)
            return
        self._complete_eviction(rec, stop)

    def hold(self, key: str, message: str) -> bool:
        """Kueue's OnHold, asked by the workload's job (a StatefulSet scaled to zero): its quota
        reservation is released at once, without an eviction (the job stops its pods itself),
        and it is not queued until :meth:`unhold`. ``message``: the QuotaReserved condition's.
        False if unknown, finished, or held already with that message."""
        rec = self.workloads.get(key)
        if rec is None or rec.status == FINISHED or rec.on_hold == message:
            return False
        if rec.stopping is not None:
            self._complete_eviction(rec, rec.stopping)  # releases it (or deactivates it)
        elif rec.holds_quota:
            self._release(rec)
            rec.checks = {name: "Pending" for name in rec.checks}
        rec.on_hold = message
        rec.generation += 1
        rec.unpublished = rec.preempting = False
        rec.requeue_at = None
        if rec.deactivated:
            self._changes.written.add(key)  # a deactivation says more; it stays the reason
        else:
            self._route(rec)
        return True

    def unhold(self, key: str) -> bool:
        """The job lifts the hold (scaled up again): the workload is queued. False if it was
        not on hold."""
        rec = self.workloads.get(key)
        if rec is None or rec.on_hold is None:
            return False
        rec.on_hold = None
        rec.generation += 1
        self._changes.written.add(key)
        if rec.status == PENDING and not rec.deactivated:
            rec.pending = None
            self._route(rec)
        return True

    def evict_holder(self, key: str, reason: str, note: EvictionNote | None = None) -> bool:
        """Evict a workload holding quota and requeue it now (e.g. NodeFailures); False if it
        holds none or is stopping already."""
        rec = self.workloads.get(key)
        if rec is None or not rec.holds_quota or rec.stopping is not None:
            return False
        self.evict(rec, reason, requeue_now=True, note=note)
        return True

    def withdraw(self, rec: WorkloadRecord) -> None:
        """Take back a reservation no one has seen (see ``CoreConfig.withdraw_unpublished``):
        the workload goes back to its queue as if it had never been admitted, with no
        eviction recorded, since to its job and the API it never was."""
        only = self._changes.first_release(rec.key)
        self._changes.withdrew(rec.cluster_queue or "")
        self._release(rec)
        if only:
            self._changes.withdrawn.add(rec.key)
        rec.generation += 1
        rec.unpublished = False
        rec.checks = {}
        self._route(rec)

    def job_stopped(self, key: str) -> bool:
        """The job of an evicted workload has no active pods left: release its quota and
        requeue (or deactivate) it. False if it was not waiting for that."""
        rec = self.workloads.get(key)
        if rec is None or rec.stopping is None:
            return False
        self._complete_eviction(rec, rec.stopping)
        return True

    def _follow_active_while_stopping(self, rec: WorkloadRecord, active: bool) -> None:
        """``spec.active`` flipped by the user while the job stops: end the eviction
        deactivated or not, as the last word says (a deactivation of our own stands)."""
        assert rec.stopping is not None
        by = rec.stopping.deactivated_by
        if by is None or by == USER_DEACTIVATION:
            rec.stopping = replace(rec.stopping, deactivated_by=None if active else USER_DEACTIVATION)

    def _complete_eviction(self, rec: WorkloadRecord, stop: Stopping) -> None:
        self._release(rec)
        rec.generation += 1
        rec.checks = {name: "Pending" for name in rec.checks}
        reason = stop.reason
        now = self._clock.now
        if stop.deactivated_by is not None:
            rec.deactivated = True
            # Not the user's own doing: spec.active was to be written from the eviction on
            # (``deactivation_unwritten``, set by evict, cleared once a copy shows it).
            rec.requeue_at = None
            rec.pending = PendingReason(Pending.DEACTIVATED, detail=stop.deactivated_by)
            self._pending.remove(rec.cluster_queue, rec.key)
            return
        if reason in ("PodsReadyTimeout", "AdmissionCheck") and \
                self._config.requeuing.timestamp == "Eviction":
            rec.queue_ts = now
        if stop.backoff_until is not None and stop.backoff_until > now:
            rec.requeue_at = stop.backoff_until
            rec.pending = PendingReason(Pending.REQUEUE_BACKOFF, detail=reason)
            self._timer(rec.requeue_at, BACKOFF, rec)
            return
        rec.requeue_at = None
        self._route(rec)

    def _set_active(self, rec: WorkloadRecord, active: bool) -> None:
        """``spec.active`` flipped (by a user, or by our own deactivation coming back):
        Kueue evicts a deactivated workload holding quota and requeues a reactivated one."""
        self._changes.written.add(rec.key)
        if not active:
            if rec.holds_quota:
                self.evict(rec, USER_DEACTIVATION, deactivate=True)
            else:
                self._deactivate_pending(rec)
            return
        rec.deactivated = False
        rec.pending = None
        rec.requeue_count = 0
        self._route(rec)

    def _deactivate_pending(self, rec: WorkloadRecord) -> None:
        rec.deactivated = True
        rec.requeue_at = None
        rec.pending = PendingReason(Pending.DEACTIVATED)
        self._pending.remove(rec.cluster_queue, rec.key)

    # ---------------------------------------------------------------- checks and pods

    def set_check_state(self, key: str, check: str, state: str, retry_after_s: float | None = None) -> bool:
        """An admission check controller's verdict. False if the check is unknown to the workload's CQ.
        ``retry_after_s``: with Retry, the check's own backoff (its ``requeueAfterSeconds``),
        which Kueue requeues after instead of the requeuing strategy's."""
        self.ensure()
        rec = self.workloads.get(key)
        if rec is None:
            return False
        cq = self._cache.cq_defs.get(rec.cluster_queue or "")
        if cq is None or all(r.name != check for r in cq.checks):
            return False
        if not rec.holds_quota or rec.stopping is not None or check not in rec.checks:
            return True  # check controllers only act on workloads holding quota
        rec.checks[check] = state
        self._changes.written.add(key)
        if state == "Retry":
            rec.requeue_count += 1
            backoff = retry_after_s
            if backoff is None:
                backoff = self._config.requeuing.delay(rec.requeue_count)
            self.evict(rec, "AdmissionCheck", backoff=backoff)
        elif state == "Rejected":
            self.evict(rec, "DeactivatedDueToAdmissionCheck", deactivate=True)
        elif rec.status == QUOTA_RESERVED and all(s == "Ready" for s in rec.checks.values()) and (
                self._tas is None or not self._tas.holds_admission(key)):
            self.admit(rec)  # with a delayed topology, the second pass admits once it is assigned
        return True

    def set_pods_ready(self, key: str, ready: bool = True) -> bool:
        rec = self.workloads.get(key)
        if rec is None or rec.status != ADMITTED:
            return False
        if rec.pods_ready != ready:
            self._changes.pods_ready.add(key)
        rec.pods_ready = ready
        return True

    def awaiting_turn(self, key: str) -> bool:
        """Pending in a usable queue and not evaluated since it got there (Kueue writes no
        status for such a workload; the scheduler's first verdict is its first condition)."""
        rec = self.workloads.get(key)
        return rec is not None and rec.status == PENDING and rec.cluster_queue is not None \
            and rec.pending == PendingReason(Pending.WAITING_FOR_TURN, rec.cluster_queue)

    # ---------------------------------------------------------------- time

    def _timer(self, when: float, kind: str, rec: WorkloadRecord) -> None:
        self._timers.add(when, kind, rec.key, rec.generation)

    def _execution_due(self, rec: WorkloadRecord) -> float | None:
        """When an admitted workload's maximum execution time is up (see ``max_execution``)."""
        if rec.status != ADMITTED or rec.stopping is not None:
            return None
        return max_execution.due_at(rec.wl.max_execution_s, rec.admitted_since)

    def _limit_execution(self, rec: WorkloadRecord) -> None:
        """Kueue's maximum execution time: a timer for when what is left of
        ``spec.maximumExecutionTimeSeconds`` (less what earlier admissions ran) has run since
        the Admitted transition. Called again when the Workload changes (a stored
        ``accumulatedPastExecutionTimeSeconds`` read after the admission moves it earlier);
        a timer that fires early finds the time not up and sets the next one."""
        due = self._execution_due(rec)
        if due is None:
            return
        armed = rec.execution_timer
        if armed is not None and armed[0] == rec.generation and self._clock.now < armed[1] <= due:
            return  # one already fires by then
        rec.execution_timer = (rec.generation, due)
        self._timer(due, MAX_EXECUTION, rec)

    def next_deadline(self) -> float | None:
        def current(kind: str, key: str, gen: int) -> bool:
            rec = self.workloads.get(key)
            return kind in (AFS_SAMPLE, REQUEUE) or (rec is not None and rec.generation == gen)

        return self._timers.next_due(current)

    def fire_timers(self, now: float) -> int:
        """Move the clock to ``now`` and act on every timer due by then; returns how many fired."""
        self._clock.now = max(self._clock.now, now)
        fired = 0
        while (due := self._timers.pop_due(self._clock.now)) is not None:
            kind, key, gen = due
            if kind == AFS_SAMPLE:
                fired += self._pending.sample_due()
                continue
            if kind == REQUEUE:
                fired += 1
                self._pending.batch_due(key)
                self.ensure()
                self._pending.requeue_batch(key)
                continue
            rec = self.workloads.get(key)
            if rec is None or rec.generation != gen:
                continue
            fired += 1
            if kind == BACKOFF:
                rec.requeue_at = None
                rec.generation += 1
                self._route(rec)
            elif kind == PODS_READY and rec.status == ADMITTED and not rec.pods_ready:
                self._pods_ready_timeout(rec)
            elif kind == MAX_EXECUTION:
                if max_execution.exceeded(self._execution_due(rec), self._clock.now):
                    reason = keys.Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED
                    self.evict(rec, reason, deactivate=True)
                else:
                    self._limit_execution(rec)
        return fired

    def _pods_ready_timeout(self, rec: WorkloadRecord) -> None:
        strategy = self._config.requeuing
        limit = strategy.backoff_limit_count
        if limit is not None and rec.requeue_count + 1 > limit:
            self.evict(rec, "DeactivatedDueToRequeuingLimitExceeded", deactivate=True)
            return
        rec.requeue_count += 1
        self.evict(rec, "PodsReadyTimeout", backoff=strategy.delay(rec.requeue_count))


def eviction_note(rec: WorkloadRecord, reason: str) -> EvictionNote:
    """Kueue's wording of an eviction for ``reason``, from what the record says at that moment
    (the checks in Retry or Rejected state, the preemption): written as the Evicted
    condition's message and recorded as its event's note."""
    if reason == keys.Reason.PREEMPTED and rec.preemption is not None:
        return EvictionNote(rec.preemption.message(), SCHEDULER)
    if reason == keys.Reason.PODS_READY_TIMEOUT:
        return EvictionNote(f"Exceeded the PodsReady timeout {rec.key}", WORKLOAD_CONTROLLER)
    if reason == keys.Reason.LOCAL_QUEUE_STOPPED:
        return EvictionNote("The LocalQueue is stopped", WORKLOAD_CONTROLLER)
    if reason == keys.Reason.CLUSTER_QUEUE_STOPPED:
        return EvictionNote("The ClusterQueue is stopped", WORKLOAD_CONTROLLER)
    if reason == keys.Reason.ADMISSION_CHECK:
        retry = [n for n, state in rec.checks.items() if state == "Retry"]
        return EvictionNote(f"Evicted due to {checks_message(retry, 'Retry')}", WORKLOAD_CONTROLLER)
    deactivated = "The workload is deactivated"
    if reason == USER_DEACTIVATION:  # spec.active set false by the user
        return EvictionNote(deactivated, WORKLOAD_CONTROLLER)
    detail = ""
    if reason == keys.Reason.DEACTIVATED_DUE_TO_ADMISSION_CHECK:
        detail = checks_message([n for n, state in rec.checks.items() if state == "Rejected"], "Rejected")
    elif reason == keys.Reason.DEACTIVATED_DUE_TO_REQUEUING_LIMIT_EXCEEDED:
        detail = "exceeding the maximum number of re-queuing retries"
    elif reason == keys.Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED:
        detail = max_execution.DETAIL
    if detail:
        return EvictionNote(f"{deactivated} due to {detail}", WORKLOAD_CONTROLLER, detail)
    reporter = TAS_NODE_CONTROLLER if reason == keys.Reason.NODE_FAILURES else WORKLOAD_CONTROLLER
    return EvictionNote(f"Evicted: {reason}", reporter)


def held_usage(assignment: Assignment, wl: WorkloadDef) -> dict[FR, int]:
    """The quota an admission holds for the workload's pod sets as they are now: Kueue
    counts a pod set that shrank below its admitted count (an elastic job scaled down,
    pods reclaimed) at its current count, each pod at its admitted share."""
    counts = {ps.name: ps.count for ps in wl.podsets}
    total: dict[FR, int] = {}
    for psa in assignment.podsets:
        now = min(psa.count, counts.get(psa.name, psa.count))
        for r, f in psa.flavors.items():
            if r in psa.usage:
                v = psa.usage[r] if now == psa.count else psa.usage[r] * now // psa.count
                total[(f, r)] = total.get((f, r), 0) + v
    return total
