"""The pending queues of every ClusterQueue (Kueue's ``pkg/queue``).

:class:`PendingQueues` keeps one :class:`~.queues.PendingQueue` per ClusterQueue: where a
routed workload waits, in which order (with admission fair sharing, by its LocalQueue's
usage), which queues have a head to pop for the next cycle, and where a decided head goes
back (its queue's heap, or parked as inadmissible). Freed quota requeues the parked
workloads of the cohort tree, at once or in batches (``SchedulingSettings``), leaving parked
those that certainly still do not fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from .admission_fair_sharing import USAGE_BASED, UsageLedger, per_resource
from .assignment import Decision, Entry
from .cache import ClusterCache
from .config import CoreConfig
from .flavor_assigner import FlavorAssigner
from .hooks import PreemptionHook
from .objects import FR
from .queues import PendingQueue, SortKey, sort_key
from .quota import QuotaNode
from .reasons import Pending, PendingReason
from .snapshot import Snapshot
from .tiers import tier_of
from .timers import AFS_SAMPLE, REQUEUE, Clock, Timers
from .workload_state import ADMITTED, PENDING, WorkloadRecord


class PendingQueues:
    def __init__(self, config: CoreConfig, clock: Clock, timers: Timers, cache: ClusterCache,
                 workloads: Mapping[str, WorkloadRecord], snapshot: Callable[[], Snapshot],
                 preemption: PreemptionHook) -> None:
        self._config = config
        self._clock = clock
        self._timers = timers
        self._cache = cache
        self._workloads = workloads
        self._snapshot = snapshot
        self._preemption = preemption
        self.queues: dict[str, PendingQueue] = {}
        # Queues that may have a workload to pop (see heads), and the order queues were made.
        self._ready: set[str] = set()
        self._queue_order: dict[str, int] = {}
        # (ClusterQueue, shape) -> tier of the latest NoFit that parked the shape.
        self.no_fit_tiers: dict[tuple[str, int], str] = {}
        self._requeue_due: set[str] = set()  # roots with a batched requeue timer running
        # ClusterQueue -> the highest priority of any workload ever queued there: who may come
        # back to preempt within it (see QueueingCore.publish_wait).
        self.top_priority: dict[str, int] = {}
        # While a cycle is applied: trees whose quota was freed, requeued once it is applied.
        self._freed_roots: dict[str, QuotaNode] | None = None
        # Admission fair sharing: LocalQueue usage, sampled on the core's clock.
        afs = config.admission_fair_sharing
        self.afs: UsageLedger | None = None if afs is None else UsageLedger(afs, clock.now)
        if afs is not None:
            timers.add(clock.now + afs.sampling_interval, AFS_SAMPLE)

    def queue(self, name: str) -> PendingQueue:
        """The ClusterQueue's queue, made on first use."""
        q = self.queues.get(name)
        if q is None:
            self._queue_order.setdefault(name, len(self._queue_order))
            q = self.queues[name] = PendingQueue(on_ready=lambda: self._ready.add(name))
        return q

    def remove(self, cq: str | None, key: str) -> None:
        if cq in self.queues:
            self.queues[cq].remove(key)

    def requeue_all(self) -> None:
        """Every parked workload back in its queue (capacity outside quota changed, or the tree)."""
        for q in self.queues.values():
            q.requeue_parked()

    # ------------------------------------------------------------ order and equivalence

    def sort_key(self, rec: WorkloadRecord) -> SortKey:
        return sort_key(rec.priority, rec.queue_ts, rec.key, sticky=rec.preempting,
                        lq_usage=self._lq_usage(rec))

    def _replacement(self, rec: WorkloadRecord) -> bool:
        """An elastic job's scaled-up slice, judged with the quota of the slice it replaces."""
        return self._config.workload_slices and rec.wl.replaces is not None

    def shape(self, rec: WorkloadRecord, cq_name: str) -> int | None:
        """The workload's shape where equivalent workloads share verdicts, else None."""
        cq = self._cache.cq_defs.get(cq_name)
        if not self._config.equivalence_hashing or cq is None or cq.queueing_strategy == "StrictFIFO":
            return None
        if self._replacement(rec):
            return None  # it asks for less than its shape says: no verdict of others is its own
        return rec.shape

    def behind_equivalent(self, rec: WorkloadRecord, target: str) -> PendingReason | None:
        """Kueue's workload controller: a workload back in its queue behind an equivalent one
        that did not fit is parked unevaluated and takes that verdict's tier (a new one keeps
        none: Kueue's UnadmittedWorkloadsExplicitStatus is off by default)."""
        q = self.queues.get(target)
        shape = self.shape(rec, target)
        if not self._config.tiered_reasons or q is None or shape is None or rec.key in q \
                or not q.shape_failed(shape):
            return None
        return PendingReason(Pending.EQUIVALENT_NO_FIT, target,
                             self.no_fit_tiers.get((target, shape), "WaitingForQuota"))

    def place(self, rec: WorkloadRecord, target: str | None, unpark: bool) -> None:
        """Move a routed workload to the queue of ``target`` (None: none), parked if it was
        (unless ``unpark``) or if its shape is known not to fit."""
        if rec.cluster_queue != target and rec.cluster_queue in self.queues:
            self.queues[rec.cluster_queue].remove(rec.key)
        rec.cluster_queue = target
        if target is not None:
            self.top_priority[target] = max(rec.priority, self.top_priority.get(target, rec.priority))
            q = self.queue(target)
            skey = self.sort_key(rec)
            if q.is_parked(rec.key) and not unpark:
                q.park(rec.key, skey, self.shape(rec, target))
            else:
                q.offer(rec.key, skey, self.shape(rec, target))

    # ------------------------------------------------------------ a cycle

    def heads(self, take: bool) -> list[Entry]:
        """The head of every active ClusterQueue's queue, popped if ``take``."""
        heads: list[Entry] = []
        for name in sorted(self._ready, key=self._queue_order.__getitem__):  # as self.queues iterates
            q = self.queues[name]
            if not q.active_count:
                self._ready.discard(name)
                continue
            if name in self._cache.inactive:
                continue
            key = q.pop() if take else q.peek()
            if key is None:
                continue
            heads.append(self._entry(self._workloads[key], name))
        return heads

    def _entry(self, rec: WorkloadRecord, cq: str) -> Entry:
        return Entry(rec.wl, cq, rec.priority, rec.queue_ts,
                     preempting=rec.preempting and self._config.prioritize_preemptors,
                     replaces=rec.wl.replaces if self._config.workload_slices else None)

    def follower(self, cq: str) -> Entry | None:
        """Pop the next workload of ``cq``'s queue for the cycle under way (its head was
        admitted); None when none is waiting there (parked ones are not)."""
        q = self.queues.get(cq)
        if q is None or not q.active_count or cq in self._cache.inactive:
            return None
        if self.afs is not None and self._afs_enabled(cq):
            return None  # each admission changes its LocalQueue's usage, so the order: re-sorted first
        key = q.pop()
        return None if key is None else self._entry(self._workloads[key], cq)

    def put_back(self, rec: WorkloadRecord, cq: str) -> None:
        """A follower the cycle did not admit goes back where it was popped from."""
        if rec.cluster_queue == cq and rec.status == PENDING:
            self.queue(cq).push(rec.key, self.sort_key(rec), self.shape(rec, cq))

    def requeue_decided(self, rec: WorkloadRecord, d: Decision) -> bool:
        """A head decided on goes back to its queue: to the heap (to be tried again at once,
        or StrictFIFO) or parked; True if it was parked."""
        q = self.queues.get(d.cluster_queue)
        if q is None or rec.cluster_queue != d.cluster_queue:
            return False
        cq = self._cache.cq_defs[d.cluster_queue]
        skey = self.sort_key(rec)
        strict = cq.queueing_strategy == "StrictFIFO" and (
            d.pending is None or d.pending.kind is not Pending.NAMESPACE_MISMATCH)
        shape = self.shape(rec, d.cluster_queue)
        if d.immediate or strict:
            q.push(rec.key, skey, shape)
            return False
        q.park(rec.key, skey, shape)
        if d.no_fit and shape is not None:
            q.park_shape(shape)
            if d.pending is not None:
                self.no_fit_tiers[(d.cluster_queue, shape)] = tier_of(d.pending).value
        return True

    def hold_requeues(self) -> None:
        """While a cycle is applied, freed trees are only collected (see :meth:`freed_trees`):
        workloads parked later in the same cycle must see the freed capacity too (Kueue
        releases it after the cycle)."""
        self._freed_roots = {}

    def freed_trees(self) -> list[QuotaNode]:
        """The roots of the trees freed since :meth:`hold_requeues`, which ends collecting:
        the caller requeues them (:meth:`requeue_tree`) once the cycle is applied."""
        freed, self._freed_roots = self._freed_roots or {}, None
        return list(freed.values())

    def recall_higher_parked(self, reserved: Mapping[str, int]) -> None:
        """A reservation made this cycle is a new preemption candidate for the parked
        workloads of higher priority in its queue (``withinClusterQueue``), which a release
        only would requeue: let those that may now find enough victims look at once, while
        the reservation can still be taken back unseen. Waiting for the next release, they
        found it written and its job started, and evicted it instead (on Kueue's TAS shape,
        most evictions were of workloads admitted past a parked higher-priority one)."""
        still: Callable[[str], bool] | None = None
        for name, lowest in reserved.items():
            q = self.queues.get(name)
            cq = self._cache.cq_defs.get(name)
            if q is None or cq is None or not q.parked_count or name in self._cache.inactive:
                continue
            if cq.policy("withinClusterQueue") == "Never":
                continue
            if still is None:
                still = self._still_no_fit()
            q.requeue_parked(keep=still, above=lowest)

    # ------------------------------------------------------------ freed quota

    def requeue_tree(self, node: QuotaNode) -> None:
        """Freed quota may let parked workloads of the whole cohort tree in: requeue them
        now, or, batching, once the period that the first request started has passed."""
        root = node.root()
        settings = self._config.scheduling
        if self._freed_roots is not None:
            self._freed_roots[root.name] = root
        elif settings.requeue_batch_s <= 0:
            self._requeue_subtree(root)
        else:
            key = ("ClusterQueue/" if root.is_cq else "Cohort/") + root.name
            if key not in self._requeue_due:
                self._requeue_due.add(key)
                self._timers.add(self._clock.now + self._requeue_period(root, key), REQUEUE, key)

    def _requeue_period(self, root: QuotaNode, key: str) -> float:
        """The batch period of the tree under ``root`` (``key``: its timer key)."""
        cfg = self._config.scheduling
        if not cfg.requeue_batch_per_queue_s and not cfg.requeue_batch_per_group_s:
            return cfg.requeue_batch_s
        spread = cfg.requeue_batch_per_queue_s * self._cache.tree_queues(key, root)
        if cfg.requeue_batch_per_group_s:
            groups = sum(q.parked_groups for q in (self.queues.get(n.name) for n in root.cluster_queues())
                         if q is not None)
            spread = max(spread, cfg.requeue_batch_per_group_s * groups)
        return max(cfg.requeue_batch_s, min(cfg.requeue_batch_max_s, spread))

    def batch_due(self, key: str) -> None:
        """The batched requeue timer of ``key`` fired: a new release starts a new batch."""
        self._requeue_due.discard(key)

    def requeue_batch(self, key: str) -> None:
        """Requeue the tree a batched requeue timer names (the tree up to date)."""
        root = self._cache.root_node(key)
        if root is not None:
            self._requeue_subtree(root.root())

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
        if self._cache.dirty:
            return lambda key: False  # the rebuild to come requeues everything
        assigner = FlavorAssigner(self._snapshot(), self._preemption)

        def still(key: str) -> bool:
            rec = self._workloads.get(key)
            if rec is None or rec.preempting or rec.cluster_queue in self._cache.inactive \
                    or self._replacement(rec):
                return False
            cq = self._cache.cq_defs.get(rec.cluster_queue or "")
            return cq is not None and assigner.cannot_fit(rec.wl, cq, rec.priority)

        return still

    # ------------------------------------------------------------ admission fair sharing

    def _afs_enabled(self, cq_name: str | None) -> bool:
        cq = self._cache.cq_defs.get(cq_name or "")
        return self.afs is not None and cq is not None and cq.admission_mode == USAGE_BASED

    def _lq_usage(self, rec: WorkloadRecord) -> float:
        if self.afs is None or not self._afs_enabled(rec.cluster_queue):
            return 0.0
        return self.local_queue_usage(f"{rec.wl.namespace}/{rec.wl.queue_name}")

    def local_queue_usage(self, lq_key: str) -> float:
        """The admission fair sharing usage value of a LocalQueue (0 when off)."""
        if self.afs is None:
            return 0.0
        lq = self._cache.local_queues.get(lq_key)
        return self.afs.usage(lq_key, lq.weight if lq is not None else 1.0)

    def sample_due(self) -> bool:
        """The sampling timer fired: fold admitted usage into every LocalQueue's decayed
        consumption, re-sort, and set the next one interval after this one (a late call,
        a process that slept, takes one sample, not one per missed interval). False when
        admission fair sharing is off (nothing sampled)."""
        if self.afs is None:
            return False
        admitted: dict[str, dict[str, float]] = {}
        for rec in self._workloads.values():
            if rec.status == ADMITTED:
                row = admitted.setdefault(f"{rec.wl.namespace}/{rec.wl.queue_name}", {})
                for res, v in per_resource(rec.usage).items():
                    row[res] = row.get(res, 0.0) + v
        self.afs.sample(self._clock.now, admitted, list(self._cache.local_queues))
        self._afs_resort()
        self._timers.add(self._clock.now + self.afs.config.sampling_interval, AFS_SAMPLE)
        return True

    def _afs_resort(self, only: str | None = None) -> None:
        for name, q in self.queues.items():
            if (only is None or name == only) and self._afs_enabled(name) and len(q):
                q.resort(lambda key: self.sort_key(self._workloads[key]))

    def charge_admission(self, rec: WorkloadRecord, cq: str, usage: Mapping[FR, int]) -> None:
        """A reservation in ``cq`` counts against its LocalQueue's usage at once."""
        if self.afs is not None and self._afs_enabled(cq):
            self.afs.penalize(f"{rec.wl.namespace}/{rec.wl.queue_name}", per_resource(usage))
            self._afs_resort(cq)

    # ------------------------------------------------------------ reading

    def _pending_in(self, cq: str) -> Iterable[WorkloadRecord]:
        return (r for r in self._workloads.values()
                if r.status == PENDING and not r.deactivated and r.cluster_queue == cq)

    def queue_position(self, key: str) -> tuple[int, int] | None:
        """(1-based place, length) of a pending workload among its ClusterQueue's pending
        workloads in scheduling order; None when it is not waiting in a ClusterQueue."""
        rec = self._workloads.get(key)
        if rec is None or rec.status != PENDING or rec.deactivated or not rec.cluster_queue:
            return None
        ordered = sorted(self._pending_in(rec.cluster_queue), key=self.sort_key)
        return 1 + next(i for i, r in enumerate(ordered) if r.key == key), len(ordered)

    def describe(self, name: str) -> str:
        q = self.queues.get(name) or PendingQueue()
        return f"active {q.active_count}, parked {q.parked_count}, no-fit shapes {q.no_fit_shapes}"

    def batches_due(self) -> list[str]:
        return sorted(self._requeue_due)
