"""The queueing core: a cache of queues and quota plus the pending queues, fed by events.

:class:`QueueingCore` is what the runtime (and ``pykueue simulate``) drives:

* object events: :meth:`apply` (create or update from a plain object dict), :meth:`delete`;
* workload life events: :meth:`finish`, :meth:`set_check_state`, :meth:`set_pods_ready`,
  :meth:`job_stopped` (an evicted workload's job has no active pods left);
* time: :meth:`next_deadline` and :meth:`fire_timers` (backoff expiries, PodsReady timeouts);
* scheduling: :meth:`next_cycle` pops the heads and returns a :class:`CycleResult` of
  decision values computed on a snapshot; :meth:`apply_cycle` applies them (reserving
  quota, requeueing, issuing evictions). :meth:`run_until_idle` loops both.

Structural changes (queues, cohorts, flavors, checks) only mark the tree dirty; it is
rebuilt once before the next cycle or query, so loading a thousand queues stays linear.
The core never reads a clock: ``now`` is set by the caller.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from pykueue.api import keys

from . import max_execution
from .admission_fair_sharing import USAGE_BASED, UsageLedger, per_resource
from .assignment import Assignment, CycleResult, Decision, Entry, Mode, Outcome, PodSetAssignment
from .config import CoreConfig
from .cycle import Scheduler
from .fair_sharing import FairSharingPreemption, WeightError, dominant_share, parse_weight, tournament
from .flavor_assigner import FlavorAssigner
from .hooks import PreemptionHook, TopologyHook, TopologyTracker
from .objects import (
    FR,
    AdmissionCheckDef,
    ClusterQueueDef,
    Flavor,
    LocalQueueDef,
    ObjectError,
    QueueDef,
    WorkloadDef,
    admission_check_from,
    amount,
    cluster_queue_from,
    cohort_from,
    flavor_from,
    local_queue_from,
    parse_time,
    workload_from,
)
from .preemption import ClassicalPreemption
from .queue_activity import ACTIVE, ActiveCondition, Inactivity, cluster_queue_inactivity
from .queues import PendingQueue, SortKey, scheduling_shape, sort_key
from .quota import QuotaNode, Usage, compute_subtree
from .reasons import (
    ROUTING,
    SCHEDULER,
    TAS_NODE_CONTROLLER,
    WORKLOAD_CONTROLLER,
    EvictionNote,
    Pending,
    PendingReason,
    Preemption,
    checks_message,
)
from .resources import transform_requests
from .snapshot import Snapshot
from .tiers import tier_of
from .workload_state import ADMITTED, FINISHED, PENDING, QUOTA_RESERVED, Stopping, WorkloadRecord

_BACKOFF = "backoff"
_PODS_READY = "podsReady"
_MAX_EXECUTION = "maxExecution"
_AFS_SAMPLE = "afsSample"
_REQUEUE = "requeue"  # a batched requeue of a cohort tree (key: "Cohort/<root>" or "ClusterQueue/<name>")


class QueueingCore:
    def __init__(self, config: CoreConfig | None = None, now: float = 0.0,
                 preemption: PreemptionHook | None = None, topology: TopologyHook | None = None) -> None:
        self.config = config or CoreConfig()
        self.now = now
        # Classical (or, with fairSharing configured, fair) preemption unless a hook is given.
        fair = self.config.fair_sharing
        if preemption is None:
            preemption = ClassicalPreemption() if fair is None else FairSharingPreemption(fair)
        self.preemption: PreemptionHook = preemption
        self.scheduler = Scheduler(self.preemption, topology, self.config.partial_admission)
        if fair is not None:
            self.scheduler.order = tournament
        self.fair_weights: dict[str, float] = {}  # "ClusterQueue/<name>" or "Cohort/<name>" -> weight
        # Victim key -> the reason of its latest preemption (condition Preempted's reason).
        self.preempted_reasons: dict[str, str] = {}
        # (ClusterQueue, shape) -> tier of the latest NoFit that parked the shape.
        self.no_fit_tiers: dict[tuple[str, int], str] = {}
        # A topology hook that also tracks admitted placements (TAS usage, second pass).
        self.tas: TopologyTracker | None = topology if isinstance(topology, TopologyTracker) else None
        self.flavors: dict[str, Flavor] = {}
        self.cq_defs: dict[str, ClusterQueueDef] = {}
        self.cohort_defs: dict[str, QueueDef] = {}
        self.local_queues: dict[str, LocalQueueDef] = {}
        self.priority_classes: dict[str, int] = {}
        self.checks: dict[str, AdmissionCheckDef] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.workloads: dict[str, WorkloadRecord] = {}
        self.queues: dict[str, PendingQueue] = {}
        # Queues that may have a workload to pop (see _heads), and the order queues were made.
        self._ready: set[str] = set()
        self._queue_order: dict[str, int] = {}
        self.nodes: dict[str, QuotaNode] = {}
        self.cohort_nodes: dict[str, QuotaNode] = {}
        self.inactive: dict[str, PendingReason] = {}
        # Why each inactive ClusterQueue is so, every cause (the Active condition lists them).
        self.inactivity: dict[str, Inactivity] = {}
        self.terminating: set[str] = set()  # ClusterQueues being deleted: they admit nothing new
        self.usage = Usage()
        self.holding: dict[str, dict[str, WorkloadRecord]] = {}
        self.holding_versions: dict[str, int] = {}  # see Snapshot.holding_versions
        self._holding_version = itertools.count(1)
        self.changed: set[str] = set()  # workloads whose status may differ from the last write
        # Workloads whose PodsReady changed since the last take_ready_changed (the metrics
        # feed counts those transitions; nothing scheduling decides changed).
        self.ready_changed: set[str] = set()
        # Workloads whose quota was released since the last take_released; None: untracked
        # (only a caller that orders its writes by it, the manager, asks for them).
        self.released: set[str] | None = None
        # Of those, the ones whose only release since then took back an unpublished
        # reservation: nothing of it was ever sent, so no write has to carry its release.
        self.withdrawn: set[str] = set()
        # Withdrawals per ClusterQueue since the last take_withdrawals: each is a preemption
        # target no API reader saw admitted (counted apart from evictions, see _withdraw).
        self.withdrawals: dict[str, int] = {}
        # Workloads that started stopping (evicted, quota held) since the last take_stopping.
        self.stopping: set[str] = set()
        # Slices finished as replaced by a scaled-up slice, per ClusterQueue, since the last
        # take_replaced_slices.
        self.replaced_slices: dict[str, int] = {}
        self._timers: list[tuple[float, int, str, str, int]] = []
        self._seq = itertools.count()
        self._reservations = itertools.count(1)  # WorkloadRecord.reserved_seq
        self._requeue_due: set[str] = set()  # roots with a batched requeue timer running
        self._tree_queues: dict[str, int] = {}  # root key -> ClusterQueues in its tree (see _requeue_period)
        # While a cycle is applied: trees whose quota was freed, requeued once it is applied.
        self._freed_roots: dict[str, QuotaNode] | None = None
        # While a cycle is applied: ClusterQueue -> lowest priority it reserved quota for.
        self._reserved_in: dict[str, int] | None = None
        self._dirty = True
        self._created = 0
        # Admission fair sharing: LocalQueue usage, sampled on the core's clock.
        afs = self.config.admission_fair_sharing
        self.afs: UsageLedger | None = None if afs is None else UsageLedger(afs, now)
        if afs is not None:
            heapq.heappush(self._timers, (now + afs.sampling_interval, next(self._seq), _AFS_SAMPLE, "", 0))

    # ---------------------------------------------------------------- object events

    def apply(self, obj: dict[str, Any]) -> None:
        """Create or update any object the core reads; other kinds raise ObjectError.

        Only a change of what the core reads marks the tree for a rebuild: status writes
        echo back as updates of the same spec, and a rebuild re-routes every workload."""
        kind = obj.get("kind")
        if kind == "Workload":
            self.apply_workload(obj)
            return
        table: dict[str, Any]
        name: str
        value: object
        weight_changed = False
        if kind == "ResourceFlavor":
            f = flavor_from(obj)
            table, name, value = self.flavors, f.name, f
        elif kind == "ClusterQueue":
            cq = cluster_queue_from(obj)
            weight_changed = self._weight("ClusterQueue", cq.name, obj)
            table, name, value = self.cq_defs, cq.name, cq
        elif kind == "Cohort":
            c = cohort_from(obj)
            weight_changed = self._weight("Cohort", c.name, obj)
            table, name, value = self.cohort_defs, c.name, c
        elif kind == "LocalQueue":
            lq = local_queue_from(obj)
            table, name, value = self.local_queues, lq.key, lq
        elif kind == "WorkloadPriorityClass":
            pc_name = (obj.get("metadata") or {}).get("name")
            if not pc_name:
                raise ObjectError("WorkloadPriorityClass without metadata.name")
            table, name, value = self.priority_classes, pc_name, int(obj.get("value") or 0)
        elif kind == "AdmissionCheck":
            ac = admission_check_from(obj, self.config.unreported_checks_active)
            table, name, value = self.checks, ac.name, ac
        elif kind == "Namespace":
            meta = obj.get("metadata") or {}
            ns = meta.get("name")
            if not ns:
                raise ObjectError("Namespace without metadata.name")
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            labels["kubernetes.io/metadata.name"] = ns
            table, name, value = self.namespaces, ns, labels
        else:
            raise ObjectError(f"unsupported kind {kind!r}")
        self._store(table, name, value, weight_changed)

    def _store(self, table: dict[str, Any], name: str, value: object, changed: bool) -> None:
        if changed or name not in table or table[name] != value:
            table[name] = value
            self._dirty = True

    def delete(self, kind: str, namespace: str | None, name: str) -> bool:
        """Forget an object; returns False when there was nothing to delete."""
        key = f"{namespace or 'default'}/{name}"
        tables: dict[str, dict[str, Any]] = {
            "ResourceFlavor": self.flavors, "ClusterQueue": self.cq_defs, "Cohort": self.cohort_defs,
            "WorkloadPriorityClass": self.priority_classes, "AdmissionCheck": self.checks,
            "Namespace": self.namespaces,
        }
        table = tables.get(kind)
        if kind == "Workload":
            rec = self.workloads.get(key)
            if rec is None:
                return False
            self._leave(rec)
            del self.workloads[key]
            self.ready_changed.discard(key)
            return True
        if kind == "LocalQueue":
            table, name = self.local_queues, key
        if table is None or name not in table:
            return False
        del table[name]
        self._dirty = True
        return True

    def _weight(self, kind: str, name: str, obj: dict[str, Any]) -> bool:
        """Record a fair-sharing weight; True if it changed."""
        fs = (obj.get("spec") or {}).get("fairSharing") or {}
        try:
            weight = parse_weight(fs.get("weight"))
        except WeightError as exc:
            raise ObjectError(f"{kind} {name}: {exc}") from exc
        key = f"{kind}/{name}"
        changed = self.fair_weights.get(key) != weight
        self.fair_weights[key] = weight
        return changed

    def apply_workload(self, obj: dict[str, Any]) -> WorkloadRecord:
        self._created += 1
        wl = workload_from(obj, default_created=self.now + self._created * 1e-6)
        if self.config.transformations or self.config.excluded_prefixes:
            wl = replace(wl, podsets=tuple(
                replace(ps, requests=transform_requests(ps.requests, self.config.transformations,
                                                        self.config.excluded_prefixes))
                for ps in wl.podsets))
        prio = self.priority_classes.get(wl.priority_class, wl.priority) if wl.priority_class else wl.priority
        old = self.workloads.get(wl.key)
        if old is not None:
            held = old.key in self.holding.get(old.cluster_queue or "", ())
            if held and (prio, wl.uid) != (old.priority, old.wl.uid):
                self._holders_changed(old.cluster_queue)
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
        self._ensure()
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
            self.changed.add(rec.key)
            return rec
        admission = status.get("admission")
        if admission and (true("QuotaReserved") or true("Admitted")):
            self._ensure()
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
        self._route(rec)
        return rec

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
        node = self.nodes.get(rec.cluster_queue or "")
        if node is not None:
            self.usage.add_all(node, rec.usage, sign=-1)
            self.usage.add_all(node, held)
        freed = any(held.get(fr, 0) < v for fr, v in rec.usage.items())
        rec.usage = held
        self._holders_changed(rec.cluster_queue)
        if freed and node is not None:
            self._requeue_tree(node)

    def _take_admitted(self, rec: WorkloadRecord, admission: dict[str, Any], status: dict[str, Any],
                       admitted: bool, pods_ready: bool, evicted: str | None = None) -> None:
        """``evicted``: the reason of an Evicted condition still True beside the reservation
        (read mid-eviction: its job has not stopped yet)."""
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
        rec.reserved_at = self.now if reserved is None else min(reserved, self.now)
        rec.reserved_seq = 0  # read, not made here: its time says more than the order we read it in
        rec.checks = {c["name"]: c.get("state", "Pending") for c in status.get("admissionChecks") or ()
                      if c.get("name")}
        rec.status = ADMITTED if admitted else QUOTA_RESERVED
        if admitted:
            rec.admitted_at = self.now
            # With waitForPodsReady, Kueue reads readiness from the PodsReady condition and
            # counts the timeout from the Admitted transition: a workload admitted before
            # this process started whose pods never became ready still times out (the job
            # reconciler marks it ready if they are).
            wfpr = self.config.wait_for_pods_ready
            rec.pods_ready = pods_ready or wfpr is None
            since = times.get("Admitted")
            rec.admitted_since = admitted_since = self.now if since is None else min(since, self.now)
            if wfpr is not None and not rec.pods_ready:
                self._timer(admitted_since + wfpr.timeout, _PODS_READY, rec)
            self._limit_execution(rec)
        self.holding.setdefault(cq_name, {})[rec.key] = rec
        self._holders_changed(cq_name)
        node = self.nodes.get(cq_name)
        if node is not None:
            self.usage.add_all(node, rec.usage)
        if self.tas is not None:
            self.tas.adopt(rec.key, rec.wl, rec.assignment, self.flavors)
        if evicted is not None:
            self._evict(rec, evicted, requeue_now=True, note=rec.eviction_note)
            return
        # Kueue drains a stopped queue also of what was admitted before it was read.
        self._drain_if_stopped(rec)

    # ---------------------------------------------------------------- structure

    def _ensure(self) -> None:
        if self._dirty:
            self._rebuild()

    def _rebuild(self) -> None:
        """Rebuild the quota tree and usage, re-route pending workloads, requeue everything."""
        self._dirty = False
        nodes = {n: QuotaNode(n, True, d.quotas) for n, d in self.cq_defs.items()}
        cohorts = {n: QuotaNode(n, False, d.quotas) for n, d in self.cohort_defs.items()}

        def cohort(name: str) -> QuotaNode:
            if name not in cohorts:
                cohorts[name] = QuotaNode(name, False, {})  # implicit cohort
            return cohorts[name]

        for name, cq in self.cq_defs.items():
            if cq.parent:
                nodes[name].parent = cohort(cq.parent)
        for name, cdef in list(self.cohort_defs.items()):
            if cdef.parent:
                cohorts[name].parent = cohort(cdef.parent)
        cyclic: set[str] = set()
        for name, cnode in cohorts.items():
            seen: set[str] = set()
            n: QuotaNode | None = cnode
            while n is not None:
                if n.name in seen:
                    cyclic.add(name)
                    break
                seen.add(n.name)
                n = n.parent
        for name in cyclic:
            cohorts[name].parent = None  # break the cycle; its queues are inactive anyway
        for node in (*nodes.values(), *cohorts.values()):
            if node.parent is not None:
                node.parent.children.append(node)
        for node in cohorts.values():
            if node.parent is None:
                compute_subtree(node)
        for node in nodes.values():
            if node.parent is None:
                compute_subtree(node)
        self.nodes, self.cohort_nodes = nodes, cohorts
        self._tree_queues = {}
        self.inactive, self.inactivity = {}, {}
        for name, cq in self.cq_defs.items():
            why = self._inactivity(cq, cyclic)
            if why.blocks_admission:
                self.inactivity[name] = why
                self.inactive[name] = PendingReason(Pending.CLUSTER_QUEUE_INACTIVE, name, why.detail())
        usage = Usage()
        for rec in self.workloads.values():
            holder = nodes.get(rec.cluster_queue or "") if rec.holds_quota else None
            if holder is not None:
                usage.add_all(holder, rec.usage)
        self.usage = usage
        for name in self.cq_defs:
            self._queue(name)
            # Every queue is versioned, holders or not: what preemption keeps across
            # snapshots is keyed on the versions of all queues of a cohort.
            self.holding_versions.setdefault(name, next(self._holding_version))
        for rec in self.workloads.values():
            if rec.status == PENDING and not rec.deactivated and rec.requeue_at is None:
                self._route(rec)
        self._drain_stopped()
        for q in self.queues.values():
            q.requeue_parked()

    def set_terminating(self, name: str, terminating: bool) -> None:
        """A ClusterQueue being deleted is inactive (Kueue: reason Terminating) until it is gone;
        what it admitted keeps its quota."""
        if terminating != (name in self.terminating):
            (self.terminating.add if terminating else self.terminating.discard)(name)
            self._dirty = True

    def _inactivity(self, cq: ClusterQueueDef, cyclic: set[str]) -> Inactivity:
        in_cycle = bool(cq.parent) and any(n in cyclic for n in self._ancestors(cq.parent or ""))
        return cluster_queue_inactivity(cq, self.flavors, self.checks,
                                        terminating=cq.name in self.terminating, cohort_cycle=in_cycle)

    def cluster_queue_condition(self, name: str) -> ActiveCondition | None:
        """The ClusterQueue's ``Active`` condition as Kueue words it; None if it is unknown."""
        self._ensure()
        if name not in self.cq_defs:
            return None
        return self.inactivity.get(name, ACTIVE).condition()

    def _ancestors(self, cohort: str) -> list[str]:
        out: list[str] = []
        name: str | None = cohort
        while name and name not in out:
            out.append(name)
            d = self.cohort_defs.get(name)
            name = d.parent if d else None
        return out

    def _drain_stopped(self) -> None:
        for rec in list(self.workloads.values()):
            self._drain_if_stopped(rec)

    def _drain_if_stopped(self, rec: WorkloadRecord) -> None:
        """A quota holder of a stopped queue, as Kueue's workload controller treats it (the
        LocalQueue first): an admitted workload is evicted under HoldAndDrain and keeps
        running under Hold; one still waiting for its checks loses the reservation under
        either, without an eviction (Kueue unsets it: nothing ran, nothing to stop)."""
        if not rec.holds_quota:
            return
        cq = self.cq_defs.get(rec.cluster_queue or "")
        lq = self.local_queues.get(f"{rec.wl.namespace}/{rec.wl.queue_name}")
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
                self._evict(rec, reason, requeue_now=True)
                return

    def _route(self, rec: WorkloadRecord, unpark: bool = False) -> None:
        """Put a pending workload in the queue of its LocalQueue's ClusterQueue, or say why not
        (``unpark``: even if it waits among the inadmissible)."""
        self.changed.add(rec.key)
        wl = rec.wl
        lq = self.local_queues.get(f"{wl.namespace}/{wl.queue_name}")
        target: str | None = None
        if not wl.queue_name:
            rec.pending = PendingReason(Pending.NO_QUEUE_NAME)
        elif lq is None:
            rec.pending = PendingReason(Pending.LOCAL_QUEUE_NOT_FOUND, wl.queue_name)
        elif lq.stop_policy != "None":
            rec.pending = PendingReason(Pending.LOCAL_QUEUE_STOPPED, wl.queue_name)
        elif lq.cluster_queue not in self.cq_defs:
            rec.pending = PendingReason(Pending.CLUSTER_QUEUE_NOT_FOUND, lq.cluster_queue)
        else:
            target = lq.cluster_queue
            gated = self._admission_gate(rec)
            if target in self.inactive:
                rec.pending = self.inactive[target]
            elif gated:  # Kueue does not queue it until the annotation is cleared
                rec.pending = PendingReason(Pending.ADMISSION_GATED, target, gated)
                target = None
            elif rec.pending is None or rec.pending.kind in ROUTING:
                # A reason routing wrote is stale now that the queue is usable.
                stale = rec.pending is not None
                rec.pending = PendingReason(Pending.WAITING_FOR_TURN, target)
                if stale:
                    rec.pending = self._behind_equivalent(rec, target) or rec.pending
        if rec.cluster_queue != target and rec.cluster_queue in self.queues:
            self.queues[rec.cluster_queue].remove(rec.key)
        rec.cluster_queue = target
        if target is not None:
            q = self._queue(target)
            skey = self._sort_key(rec)
            if q.is_parked(rec.key) and not unpark:
                q.park(rec.key, skey, self._shape(rec, target))
            else:
                q.offer(rec.key, skey, self._shape(rec, target))

    def _behind_equivalent(self, rec: WorkloadRecord, target: str) -> PendingReason | None:
        """Kueue's workload controller: a workload back in its queue behind an equivalent one
        that did not fit is parked unevaluated and takes that verdict's tier (a new one keeps
        none: Kueue's UnadmittedWorkloadsExplicitStatus is off by default)."""
        q = self.queues.get(target)
        shape = self._shape(rec, target)
        if not self.config.tiered_reasons or q is None or shape is None or rec.key in q \
                or not q.shape_failed(shape):
            return None
        return PendingReason(Pending.EQUIVALENT_NO_FIT, target,
                             self.no_fit_tiers.get((target, shape), "WaitingForQuota"))

    def _admission_gate(self, rec: WorkloadRecord) -> str:
        """Who gates the workload's admission (Kueue's AdmissionGatedBy), empty when nobody."""
        if not self.config.admission_gated_by:
            return ""
        annotations = (rec.wl.source.get("metadata") or {}).get("annotations") or {}
        return str(annotations.get(keys.ADMISSION_GATED_BY) or "")

    def _shape(self, rec: WorkloadRecord, cq_name: str) -> int | None:
        """The workload's shape where equivalent workloads share verdicts, else None."""
        cq = self.cq_defs.get(cq_name)
        if not self.config.equivalence_hashing or cq is None or cq.queueing_strategy == "StrictFIFO":
            return None
        if self._replacement(rec):
            return None  # it asks for less than its shape says: no verdict of others is its own
        return rec.shape

    def _replacement(self, rec: WorkloadRecord) -> bool:
        """An elastic job's scaled-up slice, judged with the quota of the slice it replaces."""
        return self.config.workload_slices and rec.wl.replaces is not None

    # ---------------------------------------------------------------- workload events

    def finish(self, key: str) -> bool:
        rec = self.workloads.get(key)
        if rec is None:
            return False
        if rec.status != FINISHED:
            self.changed.add(key)
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
        elif rec.cluster_queue in self.queues:
            self.queues[rec.cluster_queue].remove(rec.key)
        rec.requeue_at = None

    def _release(self, rec: WorkloadRecord) -> None:
        self.changed.add(rec.key)
        rec.stopping = None
        if self.released is not None:
            self.released.add(rec.key)
            self.withdrawn.discard(rec.key)
        if self.tas is not None:
            self.tas.release(rec.key)
        if self.holding.get(rec.cluster_queue or "", {}).pop(rec.key, None) is not None:
            self._holders_changed(rec.cluster_queue)
        node = self.nodes.get(rec.cluster_queue or "")
        if node is not None:
            self.usage.add_all(node, rec.usage, sign=-1)
            self._requeue_tree(node)
        rec.usage = {}
        rec.assignment = None
        rec.took_over = None
        rec.status = PENDING
        rec.admitted_at = rec.reserved_at = rec.admitted_since = None
        rec.execution_timer = None
        rec.pods_ready = False

    def _requeue_tree(self, node: QuotaNode) -> None:
        """Freed quota may let parked workloads of the whole cohort tree in: requeue them
        now, or, batching, once the period that the first request started has passed."""
        root = node.root()
        if self._freed_roots is not None:
            # A victim evicted while the cycle is applied: workloads parked later in the same
            # cycle must see the freed capacity too (Kueue releases it after the cycle).
            self._freed_roots[root.name] = root
        elif self.config.scheduling.requeue_batch_s <= 0:
            self._requeue_subtree(root)
        else:
            key = ("ClusterQueue/" if root.is_cq else "Cohort/") + root.name
            if key not in self._requeue_due:
                self._requeue_due.add(key)
                heapq.heappush(self._timers, (self.now + self._requeue_period(root, key), next(self._seq),
                                              _REQUEUE, key, 0))

    def _requeue_period(self, root: QuotaNode, key: str) -> float:
        """The batch period of the tree under ``root`` (``key``: its timer key)."""
        cfg = self.config.scheduling
        if not cfg.requeue_batch_per_queue_s and not cfg.requeue_batch_per_group_s:
            return cfg.requeue_batch_s
        queues = self._tree_queues.get(key)
        if queues is None:
            queues = self._tree_queues[key] = sum(1 for _ in root.cluster_queues())
        spread = cfg.requeue_batch_per_queue_s * queues
        if cfg.requeue_batch_per_group_s:
            groups = sum(q.parked_groups for q in (self.queues.get(n.name) for n in root.cluster_queues())
                         if q is not None)
            spread = max(spread, cfg.requeue_batch_per_group_s * groups)
        return max(cfg.requeue_batch_s, min(cfg.requeue_batch_max_s, spread))

    def _requeue_subtree(self, root: QuotaNode) -> None:
        """Quota was freed in the tree under ``root``: put its parked workloads back, except
        each group of one shape whose flavor assignment would certainly fail again (the
        freed quota is less than its head lacks, and preemption cannot make up the rest).
        In a full cohort of hundreds of queues that is most of them, and evaluating each
        again is most of a scheduling pass; the next free looks at them again."""
        still: Callable[[str], bool] | None = None
        for n in root.cluster_queues():
            q = self.queues.get(n.name)
            if q is not None and q.parked_count:
                if still is None:
                    still = self._still_no_fit()
                q.requeue_parked(keep=still)

    def _still_no_fit(self) -> Callable[[str], bool]:
        """Whether a parked workload certainly does not fit now (see ``_requeue_subtree``)."""
        if self._dirty:
            return lambda key: False  # the rebuild to come requeues everything
        assigner = FlavorAssigner(self.snapshot(), self.preemption)

        def still(key: str) -> bool:
            rec = self.workloads.get(key)
            if rec is None or rec.preempting or rec.cluster_queue in self.inactive or self._replacement(rec):
                return False
            cq = self.cq_defs.get(rec.cluster_queue or "")
            return cq is not None and assigner.cannot_fit(rec.wl, cq, rec.priority)

        return still

    def _holders_changed(self, cq_name: str | None) -> None:
        self.holding_versions[cq_name or ""] = next(self._holding_version)

    def _evict(self, rec: WorkloadRecord, reason: str, requeue_now: bool = False,
               backoff: float | None = None, deactivate: bool = False,
               note: EvictionNote | None = None) -> None:
        """Evict a workload holding quota. With ``hold_quota_until_stopped`` it keeps its
        quota (Evicted while QuotaReserved) until :meth:`job_stopped`; a second eviction
        meanwhile changes nothing but may turn it into a deactivation. ``note``: Kueue's
        wording of it, when the caller knows more than the reason (see ``eviction_note``)."""
        if deactivate and reason != "InactiveWorkload":
            # Kueue sets spec.active first and then evicts: written before the eviction.
            rec.deactivation_unwritten = True
        if rec.stopping is not None:
            if deactivate:
                rec.stopping = replace(rec.stopping, deactivated_by=reason)
            return
        self.changed.add(rec.key)
        rec.generation += 1
        rec.evictions.append(reason)
        rec.eviction_note = note or eviction_note(rec, reason)
        # A backoff runs from the eviction, however long the job takes to stop.
        backoff_until = None if backoff is None or backoff <= 0 or requeue_now else self.now + backoff
        stop = Stopping(reason, backoff_until, reason if deactivate else None)
        if self.config.hold_quota_until_stopped:
            rec.stopping = stop
            self._holders_changed(rec.cluster_queue)  # a stopping workload is the first victim
            self.stopping.add(rec.key)
            return
        self._complete_eviction(rec, stop)

    def _withdraw(self, rec: WorkloadRecord) -> None:
        """Take back a reservation no one has seen (see ``CoreConfig.withdraw_unpublished``):
        the workload goes back to its queue as if it had never been admitted, with no
        eviction recorded, since to its job and the API it never was."""
        only = self.released is not None and rec.key not in self.released
        cq = rec.cluster_queue or ""
        self.withdrawals[cq] = self.withdrawals.get(cq, 0) + 1
        self._release(rec)
        if only:
            self.withdrawn.add(rec.key)
        rec.generation += 1
        rec.unpublished = False
        rec.checks = {}
        self._route(rec)

    def publish(self, key: str) -> bool:
        """A write carrying the workload's reservation out of the core starts: from now on
        taking it back is an eviction. Returns whether the reservation was unpublished."""
        rec = self.workloads.get(key)
        if rec is None or not rec.unpublished:
            return False
        rec.unpublished = False
        self._holders_changed(rec.cluster_queue)  # it moves back among the victims
        return True

    def job_stopped(self, key: str) -> bool:
        """The job of an evicted workload has no active pods left: release its quota and
        requeue (or deactivate) it. False if it was not waiting for that."""
        rec = self.workloads.get(key)
        if rec is None or rec.stopping is None:
            return False
        self._complete_eviction(rec, rec.stopping)
        return True

    def take_stopping(self) -> set[str]:
        """Keys of workloads that started waiting for their job to stop since the last call."""
        out, self.stopping = self.stopping, set()
        return {k for k in out if (r := self.workloads.get(k)) is not None and r.stopping is not None}

    def _follow_active_while_stopping(self, rec: WorkloadRecord, active: bool) -> None:
        """``spec.active`` flipped by the user while the job stops: end the eviction
        deactivated or not, as the last word says (a deactivation of our own stands)."""
        assert rec.stopping is not None
        by = rec.stopping.deactivated_by
        if by is None or by == "InactiveWorkload":
            rec.stopping = replace(rec.stopping, deactivated_by=None if active else "InactiveWorkload")

    def _complete_eviction(self, rec: WorkloadRecord, stop: Stopping) -> None:
        self._release(rec)
        rec.generation += 1
        rec.checks = {name: "Pending" for name in rec.checks}
        reason = stop.reason
        if stop.deactivated_by is not None:
            rec.deactivated = True
            # Not the user's own doing: spec.active was to be written from the eviction on
            # (``deactivation_unwritten``, set by _evict, cleared once a copy shows it).
            rec.requeue_at = None
            rec.pending = PendingReason(Pending.DEACTIVATED, detail=stop.deactivated_by)
            if rec.cluster_queue in self.queues:
                self.queues[rec.cluster_queue].remove(rec.key)
            return
        if reason in ("PodsReadyTimeout", "AdmissionCheck") and \
                self.config.requeuing.timestamp == "Eviction":
            rec.queue_ts = self.now
        if stop.backoff_until is not None and stop.backoff_until > self.now:
            rec.requeue_at = stop.backoff_until
            rec.pending = PendingReason(Pending.REQUEUE_BACKOFF, detail=reason)
            self._timer(rec.requeue_at, _BACKOFF, rec)
            return
        rec.requeue_at = None
        self._route(rec)

    def _set_active(self, rec: WorkloadRecord, active: bool) -> None:
        """``spec.active`` flipped (by a user, or by our own deactivation coming back):
        Kueue evicts a deactivated workload holding quota and requeues a reactivated one."""
        self.changed.add(rec.key)
        if not active:
            if rec.holds_quota:
                self._evict(rec, "InactiveWorkload", deactivate=True)
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
        if rec.cluster_queue in self.queues:
            self.queues[rec.cluster_queue].remove(rec.key)

    def _timer(self, when: float, kind: str, rec: WorkloadRecord) -> None:
        heapq.heappush(self._timers, (when, next(self._seq), kind, rec.key, rec.generation))

    def set_check_state(self, key: str, check: str, state: str, retry_after_s: float | None = None) -> bool:
        """An admission check controller's verdict. False if the check is unknown to the workload's CQ.
        ``retry_after_s``: with Retry, the check's own backoff (its ``requeueAfterSeconds``),
        which Kueue requeues after instead of the requeuing strategy's."""
        self._ensure()
        rec = self.workloads.get(key)
        if rec is None:
            return False
        cq = self.cq_defs.get(rec.cluster_queue or "")
        if cq is None or all(r.name != check for r in cq.checks):
            return False
        if not rec.holds_quota or rec.stopping is not None or check not in rec.checks:
            return True  # check controllers only act on workloads holding quota
        rec.checks[check] = state
        self.changed.add(key)
        if state == "Retry":
            rec.requeue_count += 1
            backoff = retry_after_s
            if backoff is None:
                backoff = self.config.requeuing.delay(rec.requeue_count)
            self._evict(rec, "AdmissionCheck", backoff=backoff)
        elif state == "Rejected":
            self._evict(rec, "DeactivatedDueToAdmissionCheck", deactivate=True)
        elif rec.status == QUOTA_RESERVED and all(s == "Ready" for s in rec.checks.values()) and (
                self.tas is None or not self.tas.holds_admission(key)):
            self._admit(rec)  # with a delayed topology, the second pass admits once it is assigned
        return True

    def _admit(self, rec: WorkloadRecord) -> None:
        self.changed.add(rec.key)
        rec.status = ADMITTED
        rec.admitted_at = rec.admitted_since = self.now
        rec.pods_ready = False
        rec.generation += 1
        wfpr = self.config.wait_for_pods_ready
        if wfpr is not None:
            self._timer(self.now + wfpr.timeout, _PODS_READY, rec)
        self._limit_execution(rec)

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
        if armed is not None and armed[0] == rec.generation and self.now < armed[1] <= due:
            return  # one already fires by then
        rec.execution_timer = (rec.generation, due)
        self._timer(due, _MAX_EXECUTION, rec)

    def set_pods_ready(self, key: str, ready: bool = True) -> bool:
        rec = self.workloads.get(key)
        if rec is None or rec.status != ADMITTED:
            return False
        if rec.pods_ready != ready:
            self.ready_changed.add(key)
        rec.pods_ready = ready
        return True

    def take_ready_changed(self) -> set[str]:
        out, self.ready_changed = self.ready_changed, set()
        return out

    # ---------------------------------------------------------------- time

    def next_deadline(self) -> float | None:
        while self._timers:
            when, _, kind, key, gen = self._timers[0]
            rec = self.workloads.get(key)
            if kind in (_AFS_SAMPLE, _REQUEUE) or (rec is not None and rec.generation == gen):
                return when
            heapq.heappop(self._timers)
        return None

    def fire_timers(self, now: float) -> int:
        """Move the clock to ``now`` and act on every timer due by then; returns how many fired."""
        self.now = max(self.now, now)
        fired = 0
        while self._timers and self._timers[0][0] <= self.now:
            _, _, kind, key, gen = heapq.heappop(self._timers)
            if kind == _AFS_SAMPLE and self.afs is not None:
                fired += 1
                self._afs_sample()
                # The next sample is one interval after this one was taken; a late call
                # (a process that slept) takes one sample, not one per missed interval.
                heapq.heappush(self._timers, (self.now + self.afs.config.sampling_interval,
                                              next(self._seq), _AFS_SAMPLE, "", 0))
                continue
            if kind == _REQUEUE:
                fired += 1
                self._requeue_due.discard(key)
                self._ensure()
                kind_of_root, _, name = key.partition("/")
                root = (self.nodes if kind_of_root == "ClusterQueue" else self.cohort_nodes).get(name)
                if root is not None:
                    self._requeue_subtree(root.root())
                continue
            rec = self.workloads.get(key)
            if rec is None or rec.generation != gen:
                continue
            fired += 1
            if kind == _BACKOFF:
                rec.requeue_at = None
                rec.generation += 1
                self._route(rec)
            elif kind == _PODS_READY and rec.status == ADMITTED and not rec.pods_ready:
                self._pods_ready_timeout(rec)
            elif kind == _MAX_EXECUTION:
                if max_execution.exceeded(self._execution_due(rec), self.now):
                    reason = keys.Reason.DEACTIVATED_DUE_TO_MAXIMUM_EXECUTION_TIME_EXCEEDED
                    self._evict(rec, reason, deactivate=True)
                else:
                    self._limit_execution(rec)
        return fired

    def _pods_ready_timeout(self, rec: WorkloadRecord) -> None:
        strategy = self.config.requeuing
        limit = strategy.backoff_limit_count
        if limit is not None and rec.requeue_count + 1 > limit:
            self._evict(rec, "DeactivatedDueToRequeuingLimitExceeded", deactivate=True)
            return
        rec.requeue_count += 1
        self._evict(rec, "PodsReadyTimeout", backoff=strategy.delay(rec.requeue_count))

    # ---------------------------------------------------------------- scheduling

    def snapshot(self) -> Snapshot:
        self._ensure()
        levels = getattr(self.tas, "topology_levels", None)
        return Snapshot(self.cq_defs, self.nodes, self.flavors, self.namespaces, self.inactive,
                        self.usage.overlay(), self.holding, self.fair_weights,
                        levels() if callable(levels) else {}, self.workloads, self.holding_versions)

    def _blocked(self) -> bool:
        wfpr = self.config.wait_for_pods_ready
        return bool(wfpr and wfpr.block_admission and any(
            r.status == ADMITTED and not r.pods_ready for r in self.workloads.values()))

    def next_cycle(self) -> CycleResult:
        """Pop one head per active ClusterQueue and decide on them (nothing applied yet)."""
        self._ensure()
        self._second_pass()
        if self._blocked():
            self._hold_for_pods_ready()
            return CycleResult([])
        heads = self._heads(take=True)
        if not heads:
            return CycleResult([])
        return self.scheduler.schedule(heads, self.snapshot())

    def _queue(self, name: str) -> PendingQueue:
        q = self.queues.get(name)
        if q is None:
            self._queue_order.setdefault(name, len(self._queue_order))
            q = self.queues[name] = PendingQueue(on_ready=lambda: self._ready.add(name))
        return q

    def _heads(self, take: bool) -> list[Entry]:
        heads: list[Entry] = []
        for name in sorted(self._ready, key=self._queue_order.__getitem__):  # as self.queues iterates
            q = self.queues[name]
            if not q.active_count:
                self._ready.discard(name)
                continue
            if name in self.inactive:
                continue
            key = q.pop() if take else q.peek()
            if key is None:
                continue
            rec = self.workloads[key]
            heads.append(Entry(rec.wl, name, rec.priority, rec.queue_ts,
                               preempting=rec.preempting and self.config.prioritize_preemptors,
                               replaces=rec.wl.replaces if self.config.workload_slices else None))
        return heads

    def _hold_for_pods_ready(self) -> None:
        """Kueue's scheduler, held by waitForPodsReady.blockAdmission, stops at the first head
        it would admit and tells that one why (tier WaitingForPodsReady); nothing is popped."""
        heads = self._heads(take=False)
        decisions = self.scheduler.schedule(heads, self.snapshot()).decisions if heads else []
        for d in decisions:
            if d.outcome == Outcome.ADMIT:
                rec = self.workloads[d.key]
                held = PendingReason(Pending.WAITING_FOR_PODS_READY, d.cluster_queue)
                if rec.pending != held:
                    rec.pending = held
                    self.changed.add(rec.key)
                return

    def _second_pass(self) -> None:
        """Workloads holding quota that wait for a topology (delayed request, failed node)."""
        if self.tas is None:
            return
        for key in self.tas.second_pass_keys():
            rec = self.workloads.get(key)
            if rec is None:
                self.tas.release(key)
                continue
            if rec.stopping is not None:
                continue  # its pods are going: nothing to place or replace
            outcome, message = self.tas.second_pass(rec, self.cq_defs, self.flavors)
            if outcome:
                self.changed.add(key)
            if outcome == "Admit":
                self._admit(rec)
            elif outcome == "Evict":  # Kueue's scheduler: no replacement for a failed node
                self._evict(rec, "NodeFailures", requeue_now=True,
                            note=EvictionNote(message, SCHEDULER) if message else None)

    def adopt_topology(self, obj: dict[str, Any]) -> bool:
        """Another writer (the extender, replacing a failed node at bind time) rewrote the
        topology assignment of a workload holding quota: take the stored assignment and
        unhealthy nodes as they are, so the next status write keeps them. True if changed."""
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        rec = self.workloads.get(key)
        if rec is None or not rec.holds_quota or rec.assignment is None or self.tas is None:
            return False
        status = obj.get("status") or {}
        stored = {str(p.get("name") or "main"): p.get("topologyAssignment")
                  for p in (status.get("admission") or {}).get("podSetAssignments") or ()}
        ours = {p.name: p.topology_assignment for p in rec.assignment.podsets}
        if set(stored) != set(ours) or any(not stored[n] for n in ours if ours[n]) or stored == ours:
            return False  # unchanged, or not a rewrite of this admission
        for psa in rec.assignment.podsets:
            psa.topology_assignment = stored[psa.name]
        self.tas.adopt(key, replace(rec.wl, source=obj), rec.assignment, self.flavors)
        return True

    def evict(self, key: str, reason: str, note: EvictionNote | None = None) -> bool:
        """Evict a workload holding quota and requeue it now (e.g. NodeFailures); ``note``:
        how Kueue words it, if the caller knows (the failed nodes)."""
        rec = self.workloads.get(key)
        if rec is None or not rec.holds_quota or rec.stopping is not None:
            return False
        self._evict(rec, reason, requeue_now=True, note=note)
        return True

    def requeue_inadmissible(self) -> None:
        """Capacity outside quota changed (nodes, pods): parked workloads may fit now."""
        for q in self.queues.values():
            q.requeue_parked()

    def apply_cycle(self, result: CycleResult) -> bool:
        """Apply decisions; True if anything changed beyond putting heads back."""
        progress = False
        self._freed_roots = {}
        self._reserved_in = {}
        try:
            progress = self._apply_decisions(result)
        finally:
            freed, self._freed_roots = self._freed_roots, None
            reserved, self._reserved_in = self._reserved_in, None
        for root in freed.values():
            self._requeue_tree(root)
        if self.config.withdraw_unpublished:
            self._recall_higher_parked(reserved)
        return progress

    def _recall_higher_parked(self, reserved: Mapping[str, int]) -> None:
        """A reservation made this cycle is a new preemption candidate for the parked
        workloads of higher priority in its queue (``withinClusterQueue``), which a release
        only would requeue: let those that may now find enough victims look at once, while
        the reservation can still be taken back unseen. Waiting for the next release, they
        found it written and its job started, and evicted it instead (on Kueue's TAS shape,
        most evictions were of workloads admitted past a parked higher-priority one)."""
        still: Callable[[str], bool] | None = None
        for name, lowest in reserved.items():
            q = self.queues.get(name)
            cq = self.cq_defs.get(name)
            if q is None or cq is None or not q.parked_count or name in self.inactive:
                continue
            if cq.policy("withinClusterQueue") == "Never":
                continue
            if still is None:
                still = self._still_no_fit()
            q.requeue_parked(keep=still, above=lowest)

    def _apply_decisions(self, result: CycleResult) -> bool:
        progress = False
        holder = self.scheduler.topology_preemption
        for d in result.decisions:
            rec = self.workloads.get(d.key)
            if rec is None or rec.status != PENDING or rec.deactivated:
                continue
            if d.outcome == Outcome.ADMIT and d.assignment is not None:
                why = "" if self.tas is None else self.tas.reserve(
                    rec.key, rec.wl, self.cq_defs[d.cluster_queue], self.flavors, d.assignment)
                if not why:
                    self._reserve(rec, d)
                    if d.replaces is not None:
                        self._replace_slice(d.replaces, rec)
                    progress = True
                    continue
                d = replace(d, outcome=Outcome.PENDING, immediate=True,
                            pending=PendingReason(Pending.TOPOLOGY_RESERVATION, detail=why))
            if d.outcome == Outcome.PREEMPT and d.assignment is not None and holder is not None:
                # Hold where it goes once its targets are gone, so that entries applied
                # after it cannot take that node capacity in this cycle (Kueue adds the
                # preemptor's TAS usage to the cycle's snapshot).
                why = holder.hold(rec.key, rec.wl, self.cq_defs[d.cluster_queue], self.flavors,
                                  d.assignment, d.targets)
                if why:
                    d = replace(d, outcome=Outcome.PENDING, immediate=True, targets=(),
                                pending=PendingReason(Pending.NO_LONGER_FITS))
            if d.outcome == Outcome.PREEMPT:
                rec.preempting = True
                for target in d.targets:
                    victim = self.workloads.get(target)
                    # A victim already stopping counts as preempted, as Kueue's does: the
                    # preemptor waits for its quota and nothing is evicted twice.
                    if victim is not None and victim.holds_quota and victim.unpublished and \
                            victim.took_over is None:
                        self._withdraw(victim)
                        progress = True
                    elif victim is not None and victim.holds_quota and victim.stopping is None:
                        reason = d.target_reasons.get(target, "InClusterQueue")
                        self.preempted_reasons[target] = reason
                        victim.preemption_reasons.append(reason)
                        job_uid = ((rec.wl.source.get("metadata") or {}).get("labels") or {}).get(
                            keys.JOB_UID) or ""
                        victim.preemption = Preemption(reason, rec.wl.uid, job_uid,
                                                       self._path(rec.cluster_queue),
                                                       self._path(victim.cluster_queue), rec.key,
                                                       rec.priority, victim.priority)
                        self._evict(victim, "Preempted", requeue_now=True)
                        progress = True
            elif not d.immediate:
                rec.preempting = False  # it no longer fits even with preemption: no claim to keep
            pending = d.pending
            if self.tas is not None and pending is not None and pending.topology_failed:
                pending = pending.with_topology_detail(self.tas.explain(rec.key))
            if rec.pending != pending:
                rec.pending = pending
                self.changed.add(rec.key)
            if d.outcome == Outcome.PENDING and not rec.requests_reported:
                # A preemptor waiting for its victims is not told (Kueue writes no status then).
                rec.requests_reported = True
                self.changed.add(rec.key)
            progress |= self._requeue(rec, d)
        if holder is not None:
            holder.drop_holds()  # a cycle's holds end with it; the next one decides again
        return progress

    def _replace_slice(self, old_key: str, new: WorkloadRecord) -> None:
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
        self.replaced_slices[cq] = self.replaced_slices.get(cq, 0) + 1

    def _requeue(self, rec: WorkloadRecord, d: Decision) -> bool:
        q = self.queues.get(d.cluster_queue)
        if q is None or rec.cluster_queue != d.cluster_queue:
            return False
        cq = self.cq_defs[d.cluster_queue]
        skey = self._sort_key(rec)
        strict = cq.queueing_strategy == "StrictFIFO" and (
            d.pending is None or d.pending.kind is not Pending.NAMESPACE_MISMATCH)
        shape = self._shape(rec, d.cluster_queue)
        if d.immediate or strict:
            q.push(rec.key, skey, shape)
            return False
        q.park(rec.key, skey, shape)
        if d.no_fit and shape is not None:
            q.park_shape(shape)
            if d.pending is not None:
                self.no_fit_tiers[(d.cluster_queue, shape)] = tier_of(d.pending).value
        return True

    def _path(self, cq: str | None) -> str:
        """"/root/.../cq", as Kueue names a queue in preemption messages."""
        parts: list[str] = []
        n = self.nodes.get(cq or "")
        while n is not None:
            parts.append(n.name)
            n = n.parent
        return "/" + "/".join(reversed(parts)) if parts else "UNKNOWN"

    def _sort_key(self, rec: WorkloadRecord) -> SortKey:
        return sort_key(rec.priority, rec.queue_ts, rec.key, sticky=rec.preempting,
                        lq_usage=self._lq_usage(rec))

    def _afs_enabled(self, cq_name: str | None) -> bool:
        cq = self.cq_defs.get(cq_name or "")
        return self.afs is not None and cq is not None and cq.admission_mode == USAGE_BASED

    def _lq_usage(self, rec: WorkloadRecord) -> float:
        if self.afs is None or not self._afs_enabled(rec.cluster_queue):
            return 0.0
        lq_key = f"{rec.wl.namespace}/{rec.wl.queue_name}"
        lq = self.local_queues.get(lq_key)
        return self.afs.usage(lq_key, lq.weight if lq is not None else 1.0)

    def local_queue_usage(self, lq_key: str) -> float:
        """The admission fair sharing usage value of a LocalQueue (0 when off)."""
        if self.afs is None:
            return 0.0
        lq = self.local_queues.get(lq_key)
        return self.afs.usage(lq_key, lq.weight if lq is not None else 1.0)

    def _afs_sample(self) -> None:
        """Fold admitted usage into every LocalQueue's decayed consumption and re-sort."""
        assert self.afs is not None
        admitted: dict[str, dict[str, float]] = {}
        for rec in self.workloads.values():
            if rec.status == ADMITTED:
                row = admitted.setdefault(f"{rec.wl.namespace}/{rec.wl.queue_name}", {})
                for res, v in per_resource(rec.usage).items():
                    row[res] = row.get(res, 0.0) + v
        self.afs.sample(self.now, admitted, list(self.local_queues))
        self._afs_resort()

    def _afs_resort(self, only: str | None = None) -> None:
        for name, q in self.queues.items():
            if (only is None or name == only) and self._afs_enabled(name) and len(q):
                q.resort(lambda key: self._sort_key(self.workloads[key]))

    def _reserve(self, rec: WorkloadRecord, d: Decision) -> None:
        assert d.assignment is not None
        if self.afs is not None and self._afs_enabled(d.cluster_queue):
            self.afs.penalize(f"{rec.wl.namespace}/{rec.wl.queue_name}", per_resource(d.assignment.usage))
            self._afs_resort(d.cluster_queue)
        self._do_reserve(rec, d)

    def _do_reserve(self, rec: WorkloadRecord, d: Decision) -> None:
        assert d.assignment is not None
        self.changed.add(rec.key)
        rec.preempting = False
        rec.generation += 1
        rec.status = QUOTA_RESERVED
        rec.cluster_queue = d.cluster_queue
        rec.assignment = d.assignment
        rec.usage = dict(d.assignment.usage)
        rec.reserved_at = self.now
        rec.reserved_seq = next(self._reservations)
        if self._reserved_in is not None:
            low = self._reserved_in.get(d.cluster_queue, rec.priority)
            self._reserved_in[d.cluster_queue] = min(rec.priority, low)
        rec.unpublished = self.config.withdraw_unpublished
        rec.pending = None
        rec.requests_reported = False  # the admission's resourceUsage supersedes them
        self.holding.setdefault(d.cluster_queue, {})[rec.key] = rec
        self._holders_changed(d.cluster_queue)
        self.usage.add_all(self.nodes[d.cluster_queue], rec.usage)
        cq = self.cq_defs[d.cluster_queue]
        used = {f for ps in d.assignment.podsets for f in ps.flavors.values()}
        rec.checks = {r.name: "Pending" for r in sorted(cq.checks, key=lambda r: r.name)
                      if not r.on_flavors or r.on_flavors & used}
        if not rec.checks:
            self._admit(rec)

    def run_until_idle(self, max_cycles: int = 1_000_000) -> list[Decision]:
        """Cycle until a cycle admits nothing and parks nothing."""
        decisions: list[Decision] = []
        for _ in range(max_cycles):
            result = self.next_cycle()
            decisions.extend(result.decisions)
            if not self.apply_cycle(result):
                break
        return decisions

    # ---------------------------------------------------------------- reading

    def take_changes(self) -> set[str]:
        """Keys of workloads whose status changed since the last call (what to write back)."""
        changed, self.changed = self.changed, set()
        return {k for k in changed if k in self.workloads}

    def take_released(self) -> tuple[set[str], set[str]]:
        """Keys of workloads whose quota was released since the last call (tracking starts
        with the first call), and those of them whose only release was a withdrawal."""
        released, self.released = self.released or set(), set()
        withdrawn, self.withdrawn = self.withdrawn, set()
        return {k for k in released if k in self.workloads}, {k for k in withdrawn if k in self.workloads}

    def take_replaced_slices(self) -> dict[str, int]:
        """Slices replaced by scaled-up ones since the last call, per ClusterQueue."""
        taken, self.replaced_slices = self.replaced_slices, {}
        return taken

    def take_withdrawals(self) -> dict[str, int]:
        """Reservations taken back unpublished since the last call, per ClusterQueue."""
        taken, self.withdrawals = self.withdrawals, {}
        return taken

    def awaiting_turn(self, key: str) -> bool:
        """Pending in a usable queue and not evaluated since it got there (Kueue writes no
        status for such a workload; the scheduler's first verdict is its first condition)."""
        rec = self.workloads.get(key)
        return rec is not None and rec.status == PENDING and rec.cluster_queue is not None \
            and rec.pending == PendingReason(Pending.WAITING_FOR_TURN, rec.cluster_queue)

    def _activity(self, name: str) -> str:
        why = self.inactive.get(name)
        return why.message() if why is not None else "active"

    def debug_dump(self) -> list[str]:
        """One line per ClusterQueue and one for the timers: what an operator asks for when
        workloads wait and nobody knows why (Kueue dumps its cache and queues on SIGUSR2)."""
        self._ensure()
        lines = []
        for name in sorted(self.cq_defs):
            q = self.queues.get(name) or PendingQueue()
            node = self.nodes.get(name)
            usage = {f"{f}/{r}": v for (f, r), v in sorted(self.usage.of(node).items())} if node else {}
            lines.append(f"ClusterQueue {name}: active {q.active_count}, parked {q.parked_count}, "
                         f"no-fit shapes {q.no_fit_shapes}, holding {len(self.holding.get(name, {}))} "
                         f"{sorted(self.holding.get(name, {}))[:5]}, "
                         f"usage {usage}, {self._activity(name)}")
        kinds: dict[str, int] = {}
        for _, _, kind, _, _ in self._timers:
            kinds[kind] = kinds.get(kind, 0) + 1
        lines.append(f"timers {kinds}, next deadline {self.next_deadline()}, clock {self.now}, "
                     f"batched requeues due {sorted(self._requeue_due)}")
        return lines

    def pending_in(self, cq: str) -> Iterable[WorkloadRecord]:
        return (r for r in self.workloads.values()
                if r.status == PENDING and not r.deactivated and r.cluster_queue == cq)

    def queue_position(self, key: str) -> tuple[int, int] | None:
        """(1-based place, length) of a pending workload among its ClusterQueue's pending
        workloads in scheduling order; None when it is not waiting in a ClusterQueue."""
        rec = self.workloads.get(key)
        if rec is None or rec.status != PENDING or rec.deactivated or not rec.cluster_queue:
            return None
        ordered = sorted(self.pending_in(rec.cluster_queue), key=self._sort_key)
        return 1 + next(i for i, r in enumerate(ordered) if r.key == key), len(ordered)

    def usage_of(self, cq: str) -> dict[FR, int]:
        self._ensure()
        node = self.nodes.get(cq)
        return dict(self.usage.of(node)) if node is not None else {}

    def cluster_queue_shares(self) -> dict[str, float]:
        """Each ClusterQueue's weighted dominant resource share on the quota it holds now
        (Kueue's ClusterQueue ``status.fairSharing.weightedShare`` before rounding): 0 outside a
        cohort or within its quota, inf for a borrower of weight 0."""
        self._ensure()
        return {name: dominant_share(node, self.usage, self.fair_weights)
                for name, node in self.nodes.items()}

    def cohort_subtree_quota(self) -> dict[str, dict[FR, int]]:
        """Each cohort's subtree quota (Kueue's ``SubtreeQuota``): its own nominal quota and
        what its children may lend it, per (flavor, resource)."""
        self._ensure()
        return {name: dict(node.subtree) for name, node in self.cohort_nodes.items()}

    def cohort_shares(self) -> dict[str, float]:
        """Each cohort's weighted dominant resource share on the quota it holds now (Kueue's
        Cohort ``status.fairSharing.weightedShare``): 0 at a root or within its quota, inf
        for a borrower of weight 0."""
        self._ensure()
        return {name: dominant_share(node, self.usage, self.fair_weights)
                for name, node in self.cohort_nodes.items()}


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
    if reason == "InactiveWorkload":  # spec.active set false by the user
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
