"""The queueing core: a cache of queues and quota plus the pending queues, fed by events.

:class:`QueueingCore` is what the runtime (and ``pykueue simulate``) drives:

* object events: :meth:`apply` (create or update from a plain object dict), :meth:`delete`;
* workload life events: :meth:`finish`, :meth:`set_check_state`, :meth:`set_pods_ready`,
  :meth:`job_stopped` (an evicted workload's job has no active pods left);
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

from collections.abc import Iterable
from typing import Any

from .assignment import CycleResult, Decision
from .cache import ClusterCache
from .changes import ChangeLog
from .config import CoreConfig
from .cycle import Scheduler
from .cycle_apply import CycleApplier
from .fair_sharing import FairSharingPreemption, tournament
from .hooks import PreemptionHook, TopologyHook, TopologyTracker
from .lifecycle import WorkloadLifecycle
from .objects import FR
from .pending import PendingQueues
from .preemption import ClassicalPreemption
from .queue_activity import ActiveCondition
from .reasons import EvictionNote
from .snapshot import Snapshot
from .timers import Clock, Timers
from .workload_state import WorkloadRecord


class QueueingCore:
    def __init__(self, config: CoreConfig | None = None, now: float = 0.0,
                 preemption: PreemptionHook | None = None, topology: TopologyHook | None = None) -> None:
        config = config or CoreConfig()
        # Classical (or, with fairSharing configured, fair) preemption unless a hook is given.
        fair = config.fair_sharing
        if preemption is None:
            preemption = ClassicalPreemption() if fair is None else FairSharingPreemption(fair)
        scheduler = Scheduler(preemption, topology, config.partial_admission)
        if fair is not None:
            scheduler.order = tournament
        # A topology hook that also tracks admitted placements (TAS usage, second pass).
        tas = topology if isinstance(topology, TopologyTracker) else None
        self._config = config
        self._preemption = preemption
        self._scheduler = scheduler
        self._tas = tas
        self._clock = Clock(now)
        self._timers = Timers()
        self._changes = ChangeLog()
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

    def apply_workload(self, obj: dict[str, Any]) -> WorkloadRecord:
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

    def finish(self, key: str) -> bool:
        return self._lifecycle.finish(key)

    def publish(self, key: str) -> bool:
        """A write carrying the workload's reservation out of the core starts: from now on
        taking it back is an eviction. Returns whether the reservation was unpublished."""
        return self._lifecycle.publish(key)

    def job_stopped(self, key: str) -> bool:
        """The job of an evicted workload has no active pods left: release its quota and
        requeue (or deactivate) it. False if it was not waiting for that."""
        return self._lifecycle.job_stopped(key)

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

    # ---------------------------------------------------------------- reading

    def take_changes(self) -> set[str]:
        """Keys of workloads whose status changed since the last call (what to write back)."""
        changed, self._changes.written = self._changes.written, set()
        return {k for k in changed if k in self._workloads}

    def take_released(self) -> tuple[set[str], set[str]]:
        """Keys of workloads whose quota was released since the last call (tracking starts
        with the first call), and those of them whose only release was a withdrawal."""
        c = self._changes
        released, c.released = c.released or set(), set()
        withdrawn, c.withdrawn = c.withdrawn, set()
        return {k for k in released if k in self._workloads}, {k for k in withdrawn if k in self._workloads}

    def take_replaced_slices(self) -> dict[str, int]:
        taken, self._changes.replaced_slices = self._changes.replaced_slices, {}
        return taken

    def take_withdrawals(self) -> dict[str, int]:
        taken, self._changes.withdrawals = self._changes.withdrawals, {}
        return taken

    def take_ready_changed(self) -> set[str]:
        out, self._changes.pods_ready = self._changes.pods_ready, set()
        return out

    def take_stopping(self) -> set[str]:
        """Keys of workloads that started waiting for their job to stop since the last call."""
        out = self._changes.take_stopping()
        return {k for k in out if (r := self._workloads.get(k)) is not None and r.stopping is not None}

    def awaiting_turn(self, key: str) -> bool:
        """Pending in a usable queue and not evaluated since it got there."""
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

    def pending_in(self, cq: str) -> Iterable[WorkloadRecord]:
        return (r for r in self._workloads.values()
                if r.status == "Pending" and not r.deactivated and r.cluster_queue == cq)

    def queue_position(self, key: str) -> tuple[int, int] | None:
        """(1-based place, length) of a pending workload among its ClusterQueue's pending
        workloads in scheduling order; None when it is not waiting in a ClusterQueue."""
        return self._pending.queue_position(key)

    def cluster_queue_condition(self, name: str) -> ActiveCondition | None:
        """The ClusterQueue's ``Active`` condition as Kueue words it; None if it is unknown."""
        self._lifecycle.ensure()
        return self._cache.cluster_queue_condition(name)

    def usage_of(self, cq: str) -> dict[FR, int]:
        self._lifecycle.ensure()
        return self._cache.usage_of(cq)

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

    # ---------------------------------------------------------------- old field names (to go)

    @property
    def config(self) -> CoreConfig:
        return self._config

    @property
    def now(self) -> float:
        return self._clock.now

    @now.setter
    def now(self, value: float) -> None:
        self._clock.now = value

    @property
    def workloads(self) -> dict[str, WorkloadRecord]:
        return self._workloads

    @property
    def changed(self) -> set[str]:
        return self._changes.written

    @changed.setter
    def changed(self, value: set[str]) -> None:
        self._changes.written = value

    @property
    def released(self) -> set[str] | None:
        return self._changes.released

    @released.setter
    def released(self, value: set[str] | None) -> None:
        self._changes.released = value

    @property
    def tas(self) -> TopologyTracker | None:
        return self._tas

    @property
    def preemption(self) -> PreemptionHook:
        return self._preemption

    @property
    def scheduler(self) -> Scheduler:
        return self._scheduler

    @property
    def preempted_reasons(self) -> dict[str, str]:
        return self._applier.preempted_reasons

    @property
    def queues(self) -> Any:
        return self._pending.queues

    @property
    def cq_defs(self) -> Any:
        return self._cache.cq_defs

    @property
    def cohort_defs(self) -> Any:
        return self._cache.cohort_defs

    @property
    def local_queues(self) -> Any:
        return self._cache.local_queues

    @property
    def flavors(self) -> Any:
        return self._cache.flavors

    @property
    def nodes(self) -> Any:
        return self._cache.nodes

    @property
    def cohort_nodes(self) -> Any:
        return self._cache.cohort_nodes

    @property
    def inactive(self) -> Any:
        return self._cache.inactive

    @property
    def usage(self) -> Any:
        return self._cache.usage

    @property
    def holding(self) -> Any:
        return self._cache.holding
