"""The queueing core: a cache of queues and quota plus the pending queues, fed by events.

:class:`QueueingCore` is what the runtime (and ``pykueue simulate``) drives:

* object events: :meth:`apply` (create or update from a plain object dict), :meth:`delete`;
* workload life events: :meth:`finish`, :meth:`set_check_state`, :meth:`set_pods_ready`,
  :meth:`job_stopped` (an evicted workload's job has no active pods left), :meth:`hold` and
  :meth:`unhold` (its job puts it on hold and lifts the hold);
* time: :meth:`next_deadline` and :meth:`fire_timers` (backoff expiries, PodsReady timeouts);
* scheduling: :meth:`next_cycle` pops the heads and returns a :class:`CycleResult` of
  decision values computed on a snapshot; :meth:`apply_cycle` applies them (reserving
  quota, requeueing, issuing evictions). :meth:`run_until_idle` loops both.

It composes the parts Kueue keeps apart: the cached objects and quota tree
(:mod:`.cache`), the pending queues (:mod:`.pending`), the workload state machine
(:mod:`.lifecycle`) and the apply half of a scheduling cycle (:mod:`.cycle_apply`), over
one clock and one heap of timers (:mod:`.timers`). The core never reads a clock: ``now``
is set by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from .assignment import CycleResult, Decision
from .cache import ClusterCache
from .changes import CoreChanges
from .config import CoreConfig
from .cycle import Scheduler
from .cycle_apply import CycleApplier
from .fair_sharing import FairSharingPreemption, tournament
from .hooks import PreemptionHook, TopologyHook, TopologyTracker
from .lifecycle import ChangeLog, WorkloadLifecycle
from .objects import FR, ClusterQueueDef, Flavor, LocalQueueDef, QueueDef
from .pending import PendingQueues
from .preemption import ClassicalPreemption
from .queue_activity import ActiveCondition
from .queues import PendingQueueView
from .quota import QuotaNodeView, QuotaTree
from .reasons import EvictionNote, PendingReason
from .snapshot import Snapshot
from .timers import Clock, Timers
from .workload_state import WorkloadRecord, WorkloadView

K = TypeVar("K")
V = TypeVar("V")


class _Live(Mapping[K, V]):
    """A read-only view of whichever table ``get`` returns at each access."""

    def __init__(self, get: Callable[[], Mapping[K, V]]) -> None:
        self._get = get

    def __getitem__(self, key: K) -> V:
        return self._get()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


class QueueingCore:
    def __init__(self, config: CoreConfig | None = None, now: float = 0.0,
                 preemption: PreemptionHook | None = None, topology: TopologyHook | None = None, *,
                 track_releases: bool = False) -> None:
        """``track_releases``: note released quota from the start (see :meth:`take_changes`),
        for a caller that orders its writes by it (the manager)."""
        config = config or CoreConfig()
        # Classical (or, with fairSharing configured, fair) preemption unless a hook is given.
        fair = config.fair_sharing
        if preemption is None:
            preemption = ClassicalPreemption() if fair is None else FairSharingPreemption(fair)
        scheduler = Scheduler(preemption, topology, config.partial_admission, config.ignore_undeclared)
        if fair is not None:
            scheduler.order = tournament
        # A topology hook that also tracks admitted placements (TAS usage, second pass).
        tas = topology if isinstance(topology, TopologyTracker) else None
        self._config = config
        self._preemption = preemption
        self._tas = tas
        self._clock = Clock(now)
        self._timers = Timers()
        self._changes = ChangeLog(track_releases)
        self._cache = ClusterCache(config.unreported_checks_active)
        self._workloads: dict[str, WorkloadRecord] = {}
        self._pending = PendingQueues(config, self._clock, self._timers, self._cache, self._workloads,
                                      self.snapshot, preemption)
        self._lifecycle = WorkloadLifecycle(config, self._clock, self._timers, self._changes, self._cache,
                                            self._pending, tas, self._workloads)
        self._applier = CycleApplier(config, self._cache, self._pending, self._lifecycle, self._changes,
                                     tas, scheduler, self.snapshot)

    # ---------------------------------------------------------------- object events

    def apply(self, obj: dict[str, Any]) -> None:
        """Create or update any object the core reads; other kinds raise ObjectError."""
        if obj.get("kind") == "Workload":
            self._lifecycle.apply_workload(obj)
        else:
            self._cache.apply(obj)

    def apply_workload(self, obj: dict[str, Any]) -> WorkloadView:
        return self._lifecycle.apply_workload(obj)

    def delete(self, kind: str, namespace: str | None, name: str) -> bool:
        """Forget an object; returns False when there was nothing to delete."""
        if kind == "Workload":
            return self._lifecycle.delete(f"{namespace or 'default'}/{name}")
        return self._cache.delete(kind, namespace, name)

    def set_terminating(self, name: str, terminating: bool) -> None:
        """A ClusterQueue being deleted is inactive (Kueue: reason Terminating) until it is gone;
        what it admitted keeps its quota."""
        self._cache.set_terminating(name, terminating)

    def adopt_topology(self, obj: dict[str, Any]) -> bool:
        """Another writer (the extender, replacing a failed node at bind time) rewrote the
        topology assignment of a workload holding quota: take it as stored. True if changed."""
        return self._lifecycle.adopt_topology(obj)

    # ---------------------------------------------------------------- workload events

    def finish(self, key: str, *, stored: bool = False) -> bool:
        """The workload finished: its quota is released. ``stored``: another writer stored it
        finished already, so unless a write was owed anyway there is nothing to write back nor
        a release to wait for. False if the workload is unknown."""
        owed = key in self._changes.written
        done = self._lifecycle.finish(key)
        if stored and done and not owed:
            self._changes.stored_elsewhere(key)
        return done

    def publish(self, key: str) -> bool:
        """A write carrying the workload's reservation out of the core starts: from now on
        taking it back is an eviction. Returns whether the reservation was unpublished."""
        return self._lifecycle.publish(key)

    def publish_wait(self, key: str, now: float | None = None) -> float:
        """Seconds the reservation of ``key`` should stay unpublished at ``now`` (the core's
        clock when None: a writer's clock runs on between cycles); 0: write it now.

        A reservation that may soon be taken back settles for the scheduling settings'
        ``publish_settle_s`` from when it was made: one made in a ClusterQueue that preempts
        within itself and has queued a workload of higher priority before, or one that
        borrows where a sibling may reclaim. A preemption decided meanwhile withdraws it
        (``CoreConfig.withdraw_unpublished``), so no job is started only to be stopped."""
        settle = self._config.scheduling.publish_settle_s
        rec = self._workloads.get(key)
        if (settle <= 0 or rec is None or not rec.unpublished or not rec.holds_quota
                or rec.reserved_at is None or rec.took_over is not None or rec.wl.replaces is not None):
            return 0.0
        wait = rec.reserved_at + settle - (self._clock.now if now is None else now)
        return wait if wait > 0 and self._contestable(rec) else 0.0

    def _contestable(self, rec: WorkloadRecord) -> bool:
        """Some workload may preempt ``rec``'s reservation under its queues' policies."""
        name = rec.cluster_queue or ""
        cq = self._cache.cq_defs.get(name)
        if cq is None:
            return False
        if (cq.policy("withinClusterQueue") != "Never"
                and self._pending.top_priority.get(name, rec.priority) > rec.priority):
            return True
        if rec.assignment is None or not rec.assignment.borrowing:
            return False
        if self._config.fair_sharing is not None:
            return True
        node = self._cache.nodes.get(name)
        siblings = node.root().cluster_queues() if node is not None else ()
        return any(c.name != name and self._cache.cq_defs[c.name].policy("reclaimWithinCohort") != "Never"
                   for c in siblings if c.name in self._cache.cq_defs)

    def job_stopped(self, key: str) -> bool:
        """The job of an evicted workload has no active pods left: release its quota and
        requeue (or deactivate) it. False if it was not waiting for that."""
        return self._lifecycle.job_stopped(key)

    def hold(self, key: str, message: str) -> bool:
        """The workload's job puts it on hold (Kueue's OnHold): its quota is released and it
        is not queued until :meth:`unhold`. False if nothing changed."""
        return self._lifecycle.hold(key, message)

    def unhold(self, key: str) -> bool:
        """The job lifts the hold: the workload is queued again. False if it was not held."""
        return self._lifecycle.unhold(key)

    def set_check_state(self, key: str, check: str, state: str, retry_after_s: float | None = None) -> bool:
        """An admission check controller's verdict. False if the check is unknown to the workload's CQ.
        ``retry_after_s``: with Retry, the check's own backoff (its ``requeueAfterSeconds``)."""
        return self._lifecycle.set_check_state(key, check, state, retry_after_s)

    def set_pods_ready(self, key: str, ready: bool = True) -> bool:
        return self._lifecycle.set_pods_ready(key, ready)

    def evict(self, key: str, reason: str, note: EvictionNote | None = None) -> bool:
        """Evict a workload holding quota and requeue it now (e.g. NodeFailures); ``note``:
        how Kueue words it, if the caller knows (the failed nodes)."""
        return self._lifecycle.evict_holder(key, reason, note)

    def requeue_inadmissible(self) -> None:
        """Capacity outside quota changed (nodes, pods): parked workloads may fit now."""
        self._pending.requeue_all()

    # ---------------------------------------------------------------- time

    def next_deadline(self) -> float | None:
        return self._lifecycle.next_deadline()

    def advance_clock(self, now: float) -> None:
        """Move the clock to ``now`` (never back) without acting on the timers due by then:
        the caller has events of its own to apply at that time first."""
        self._clock.now = max(self._clock.now, now)

    def fire_timers(self, now: float) -> int:
        """Move the clock to ``now`` and act on every timer due by then; returns how many fired."""
        return self._lifecycle.fire_timers(now)

    # ---------------------------------------------------------------- scheduling

    def snapshot(self) -> Snapshot:
        self._lifecycle.ensure()
        levels = getattr(self._tas, "topology_levels", None)
        return self._cache.snapshot(self._workloads, levels() if callable(levels) else {})

    def next_cycle(self) -> CycleResult:
        """Pop one head per active ClusterQueue and decide on them (nothing applied yet)."""
        return self._applier.next_cycle()

    def apply_cycle(self, result: CycleResult) -> bool:
        """Apply decisions; True if anything changed beyond putting heads back."""
        return self._applier.apply_cycle(result)

    def run_until_idle(self, max_cycles: int = 1_000_000) -> list[Decision]:
        """Cycle until a cycle admits nothing and parks nothing."""
        return self._applier.run_until_idle(max_cycles)

    # ---------------------------------------------------------------- decisions out

    def take_changes(self) -> CoreChanges:
        """What changed since the last call: the statuses to write back, the releases (tracked
        from the first call unless the core was made with ``track_releases``), PodsReady
        transitions and the counts the metrics report."""
        return self._changes.take(self._workloads)

    def take_stopping(self) -> frozenset[str]:
        """Keys of workloads that started waiting for their job to stop since the last call."""
        records = self._workloads
        return frozenset(k for k in self._changes.take_stopping()
                         if (r := records.get(k)) is not None and r.stopping is not None)

    # ---------------------------------------------------------------- reading
    #
    # Read-only views of the core's state: live (they follow the core), typed so that a
    # reader cannot change what they show. Structural ones are as of the last rebuild; the
    # quota queries that say so rebuild a changed structure first.

    @property
    def now(self) -> float:
        return self._clock.now

    @property
    def config(self) -> CoreConfig:
        return self._config

    @property
    def preemption(self) -> PreemptionHook:
        """The preemption hook the core decides with (given, or made from the config)."""
        return self._preemption

    @property
    def topology(self) -> TopologyTracker | None:
        """The topology hook the core was made with, when it tracks placements (TAS)."""
        return self._tas

    def workload(self, key: str) -> WorkloadView | None:
        return self._workloads.get(key)

    def all_workloads(self) -> Mapping[str, WorkloadView]:
        """Every workload the core knows, by key, in the order the core learnt of them."""
        return MappingProxyType(self._workloads)

    def cluster_queue(self, name: str) -> ClusterQueueDef | None:
        return self._cache.cq_defs.get(name)

    def cluster_queues(self) -> Mapping[str, ClusterQueueDef]:
        return MappingProxyType(self._cache.cq_defs)

    def cohorts(self) -> Mapping[str, QueueDef]:
        """The Cohort objects (a cohort only named as a parent has none: see ``quota_tree``)."""
        return MappingProxyType(self._cache.cohort_defs)

    def local_queue(self, key: str) -> LocalQueueDef | None:
        """The LocalQueue ``namespace/name``."""
        return self._cache.local_queues.get(key)

    def local_queues(self) -> Mapping[str, LocalQueueDef]:
        return MappingProxyType(self._cache.local_queues)

    def flavors(self) -> Mapping[str, Flavor]:
        return MappingProxyType(self._cache.flavors)

    def inactive_cluster_queues(self) -> Mapping[str, PendingReason]:
        """ClusterQueue name -> why it admits nothing (the reason its pending workloads get)."""
        return _Live(lambda: self._cache.inactive)  # a rebuild replaces the cache's table

    def holders(self, cq: str) -> Mapping[str, WorkloadView]:
        """The workloads holding quota in ``cq``, by key."""
        return MappingProxyType(self._cache.holding.get(cq, {}))

    def holders_by_queue(self) -> Mapping[str, Mapping[str, WorkloadView]]:
        return MappingProxyType(self._cache.holding)

    def pending_queue(self, cq: str) -> PendingQueueView | None:
        """The queue of ``cq``'s pending workloads (its heap and the parked), if it has one."""
        return self._pending.queues.get(cq)

    def preempted_reason(self, key: str) -> str | None:
        """The reason of the workload's latest preemption (its Preempted condition's)."""
        return self._applier.preempted_reasons.get(key)

    def quota_tree(self) -> QuotaTree:
        """The quota tree as last built (see ``usage_of`` to bring it up to date)."""
        return self._cache.tree

    def usage_at(self, node: QuotaNodeView) -> dict[FR, int]:
        """What is charged on a node of :meth:`quota_tree` (ClusterQueue or Cohort)."""
        return self._cache.usage_at(node)

    def headroom(self, cq: str, fr: FR) -> tuple[int, int]:
        """(what ``cq`` could still take on ``fr``, borrowing included; the part of it its
        own lending limit keeps for it); (0, 0) for a queue not in the tree."""
        return self._cache.headroom(cq, fr)

    def usage_of(self, cq: str) -> dict[FR, int]:
        self._lifecycle.ensure()
        return self._cache.usage_of(cq)

    def cluster_queue_condition(self, name: str) -> ActiveCondition | None:
        """The ClusterQueue's ``Active`` condition as Kueue words it; None if it is unknown."""
        self._lifecycle.ensure()
        return self._cache.cluster_queue_condition(name)

    def cluster_queue_shares(self) -> dict[str, float]:
        """Each ClusterQueue's weighted dominant resource share on the quota it holds now
        (Kueue's ClusterQueue ``status.fairSharing.weightedShare`` before rounding): 0 outside a
        cohort or within its quota, inf for a borrower of weight 0."""
        self._lifecycle.ensure()
        return self._cache.cluster_queue_shares()

    def cohort_subtree_quota(self) -> dict[str, dict[FR, int]]:
        """Each cohort's subtree quota (Kueue's ``SubtreeQuota``): its own nominal quota and
        what its children may lend it, per (flavor, resource)."""
        self._lifecycle.ensure()
        return self._cache.cohort_subtree_quota()

    def cohort_shares(self) -> dict[str, float]:
        """Each cohort's weighted dominant resource share on the quota it holds now (Kueue's
        Cohort ``status.fairSharing.weightedShare``): 0 at a root or within its quota, inf
        for a borrower of weight 0."""
        self._lifecycle.ensure()
        return self._cache.cohort_shares()

    def local_queue_usage(self, lq_key: str) -> float:
        """The admission fair sharing usage value of a LocalQueue (0 when off)."""
        return self._pending.local_queue_usage(lq_key)

    def queue_position(self, key: str) -> tuple[int, int] | None:
        """(1-based place, length) of a pending workload among its ClusterQueue's pending
        workloads in scheduling order; None when it is not waiting in a ClusterQueue."""
        return self._pending.queue_position(key)

    def awaiting_turn(self, key: str) -> bool:
        """Pending in a usable queue and not evaluated since it got there (Kueue writes no
        status for such a workload; the scheduler's first verdict is its first condition)."""
        return self._lifecycle.awaiting_turn(key)

    def debug_dump(self) -> list[str]:
        """One line per ClusterQueue and one for the timers: what an operator asks for when
        workloads wait and nobody knows why (Kueue dumps its cache and queues on SIGUSR2)."""
        self._lifecycle.ensure()
        cache = self._cache
        lines = []
        for name in sorted(cache.cq_defs):
            node = cache.nodes.get(name)
            usage = {f"{f}/{r}": v for (f, r), v in sorted(cache.usage.of(node).items())} if node else {}
            holding = cache.holding.get(name, {})
            lines.append(f"ClusterQueue {name}: {self._pending.describe(name)}, holding {len(holding)} "
                         f"{sorted(holding)[:5]}, usage {usage}, {cache.activity(name)}")
        lines.append(f"timers {self._timers.kinds()}, next deadline {self.next_deadline()}, "
                     f"clock {self._clock.now}, batched requeues due {self._pending.batches_due()}")
        return lines
