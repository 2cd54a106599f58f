"""One scheduling cycle, decided and applied (the apply half of Kueue's scheduler).

:class:`CycleApplier` pops the head of every active queue and lets the
:class:`~.cycle.Scheduler` decide on them against a snapshot (:meth:`next_cycle`: values,
nothing changed); :meth:`apply_cycle` then carries the decisions out: reserves quota (with
topology placement), evicts or withdraws preemption targets, and puts every other head back
in its queue with its verdict. Before a cycle it finishes topology second passes, and under
``waitForPodsReady.blockAdmission`` it holds admissions while pods of an admitted workload
are not ready.

It also keeps each pending workload's flavor scan progress (Kueue's LastTriedFlavorIdx): a
scan that stopped at a flavor before the last resumes after it in a later cycle, and such a
workload goes back to the heap at once. The progress is dropped when the workload is
admitted or preempts, when its ClusterQueue released quota since (unless it was recorded in
the previous cycle, under FlavorFungibilityPreserveScanProgress), when its pod sets change,
and, without that gate, when the Workload is updated or skipped in a cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from pykueue.api import keys

from .assignment import CycleResult, Decision, Entry, Outcome
from .cache import ClusterCache
from .config import CoreConfig
from .cycle import Scheduler
from .hooks import TopologyTracker
from .lifecycle import ChangeLog, WorkloadLifecycle
from .objects import WorkloadDef
from .pending import PendingQueues
from .reasons import SCHEDULER, EvictionNote, Pending, PendingReason, Preemption
from .snapshot import Snapshot
from .workload_state import ADMITTED, PENDING, WorkloadRecord

# Pending reasons of a workload skipped in a cycle for another's sake (Kueue's markSkipped).
_SKIPPED = (Pending.OVERLAPPING_TARGETS, Pending.NO_LONGER_FITS, Pending.TOPOLOGY_RESERVATION)


@dataclass(frozen=True)
class ScanProgress:
    """Where a workload's flavor scan stopped (Kueue's AssignmentClusterQueueState)."""

    tried: tuple[dict[str, int], ...]
    cluster_queue: str
    generation: int  # the ClusterQueue's generation then
    cycle: int
    workload: WorkloadDef  # the definition it was computed for


class CycleApplier:
    def __init__(self, config: CoreConfig, cache: ClusterCache, pending: PendingQueues,
                 lifecycle: WorkloadLifecycle, changes: ChangeLog, tas: TopologyTracker | None,
                 scheduler: Scheduler, snapshot: Callable[[], Snapshot]) -> None:
        self._config = config
        self._cache = cache
        self._pending = pending
        self._lifecycle = lifecycle
        self._workloads = lifecycle.workloads
        self._changes = changes
        self._tas = tas
        self._scheduler = scheduler
        self._snapshot = snapshot
        # Victim key -> the reason of its latest preemption (condition Preempted's reason).
        self.preempted_reasons: dict[str, str] = {}
        # While a cycle is applied: ClusterQueue -> lowest priority it reserved quota for.
        self._reserved_in: dict[str, int] | None = None
        self._cycle = 0
        self._progress: dict[str, ScanProgress] = {}
        self._generations: dict[str, int] = {}  # the ClusterQueues' generations this cycle

    # ---------------------------------------------------------------- deciding

    def next_cycle(self) -> CycleResult:
        """Pop one head per active ClusterQueue and decide on them (nothing applied yet)."""
        self._lifecycle.ensure()
        self._second_pass()
        if self._blocked():
            self._hold_for_pods_ready()
            return CycleResult([])
        heads = self._pending.heads(take=True)
        if not heads:
            return CycleResult([])
        snap = self._snapshot()
        self._cycle += 1
        self._generations = dict(self._cache.generations)
        if len(self._progress) > len(self._workloads):
            self._progress = {k: p for k, p in self._progress.items() if k in self._workloads}
        for entry in heads:
            entry.resume = self._resume(entry)
        wfpr = self._config.wait_for_pods_ready
        # blockAdmission admits nothing after an admission until its pods are ready.
        followers = 0 if wfpr and wfpr.block_admission else self._config.scheduling.followers_per_cycle
        return self._scheduler.schedule(heads, snap, follow=self._pending.follower if followers > 0 else None,
                                        followers=followers)

    def _resume(self, entry: Entry) -> tuple[dict[str, int], ...] | None:
        """The entry's scan progress if still current (Kueue's lastAssignmentOutdated)."""
        key = entry.workload.key
        p = self._progress.get(key)
        if p is None:
            return None
        outdated = p.cluster_queue != entry.cluster_queue
        if not outdated and self._config.preserve_scan_progress:
            if p.workload.podsets != entry.workload.podsets:
                outdated = True
            elif self._cycle - p.cycle <= 1:
                return p.tried
        elif p.workload is not entry.workload:
            outdated = True  # without the gate an update of the Workload starts the scan over
        if outdated or self._generations.get(entry.cluster_queue, 0) > p.generation:
            del self._progress[key]
            return None
        return p.tried

    def _record_progress(self, rec: WorkloadRecord, d: Decision) -> bool:
        """Keep or drop the workload's scan progress after its decision; True when its scan
        has flavors left, so it goes back to the heap at once (Kueue's PendingFlavors)."""
        if d.outcome != Outcome.PENDING:
            self._progress.pop(rec.key, None)
            return False
        if d.assignment is None:
            return False  # not assigned this cycle: what it had stays
        skipped = d.pending is not None and d.pending.kind in _SKIPPED
        if skipped and not self._config.preserve_scan_progress:
            self._progress.pop(rec.key, None)
            return False
        self._progress[rec.key] = ScanProgress(d.assignment.tried, d.cluster_queue,
                                               self._generations.get(d.cluster_queue, 0), self._cycle, rec.wl)
        return d.assignment.pending_flavors

    def _blocked(self) -> bool:
        wfpr = self._config.wait_for_pods_ready
        return bool(wfpr and wfpr.block_admission and any(
            r.status == ADMITTED and not r.pods_ready for r in self._workloads.values()))

    def _hold_for_pods_ready(self) -> None:
        """Kueue's scheduler, held by waitForPodsReady.blockAdmission, stops at the first head
        it would admit and tells that one why (tier WaitingForPodsReady); nothing is popped."""
        heads = self._pending.heads(take=False)
        decisions = self._scheduler.schedule(heads, self._snapshot()).decisions if heads else []
        for d in decisions:
            if d.outcome == Outcome.ADMIT:
                rec = self._workloads[d.key]
                held = PendingReason(Pending.WAITING_FOR_PODS_READY, d.cluster_queue)
                if rec.pending != held:
                    rec.pending = held
                    self._changes.written.add(rec.key)
                return

    def _second_pass(self) -> None:
        """Workloads holding quota that wait for a topology (delayed request, failed node)."""
        if self._tas is None:
            return
        for key in self._tas.second_pass_keys():
            rec = self._workloads.get(key)
            if rec is None:
                self._tas.release(key)
                continue
            if rec.stopping is not None:
                continue  # its pods are going: nothing to place or replace
            outcome, message = self._tas.second_pass(rec, self._cache.cq_defs, self._cache.flavors)
            if outcome:
                self._changes.written.add(key)
            if outcome == "Admit":
                self._lifecycle.admit(rec)
            elif outcome == "Evict":  # Kueue's scheduler: no replacement for a failed node
                self._lifecycle.evict(rec, "NodeFailures", requeue_now=True,
                                      note=EvictionNote(message, SCHEDULER) if message else None)

    # ---------------------------------------------------------------- applying

    def apply_cycle(self, result: CycleResult) -> bool:
        """Apply decisions; True if anything changed beyond putting heads back."""
        progress = False
        for key, cq in result.untried:
            rec = self._workloads.get(key)
            if rec is not None:
                self._pending.put_back(rec, cq)
        self._pending.hold_requeues()
        self._reserved_in = {}
        try:
            progress = self._apply_decisions(result)
        finally:
            freed = self._pending.freed_trees()
            reserved, self._reserved_in = self._reserved_in or {}, None
        for root in freed:
            self._pending.requeue_tree(root)
        if self._config.withdraw_unpublished:
            self._pending.recall_higher_parked(reserved)
        return progress

    def _apply_decisions(self, result: CycleResult) -> bool:
        progress = False
        holder = self._scheduler.topology_preemption
        cq_defs, flavors = self._cache.cq_defs, self._cache.flavors
        for d in result.decisions:
            rec = self._workloads.get(d.key)
            if rec is None or rec.status != PENDING or rec.deactivated:
                continue
            if d.outcome == Outcome.ADMIT and d.assignment is not None:
                why = "" if self._tas is None else self._tas.reserve(
                    rec.key, rec.wl, cq_defs[d.cluster_queue], flavors, d.assignment)
                if not why:
                    self._progress.pop(rec.key, None)
                    self._pending.charge_admission(rec, d.cluster_queue, d.assignment.usage)
                    self._lifecycle.reserve(rec, d)
                    if self._reserved_in is not None:
                        low = self._reserved_in.get(d.cluster_queue, rec.priority)
                        self._reserved_in[d.cluster_queue] = min(rec.priority, low)
                    if d.replaces is not None:
                        self._lifecycle.replace_slice(d.replaces, rec)
                    progress = True
                    continue
                d = replace(d, outcome=Outcome.PENDING, immediate=True,
                            pending=PendingReason(Pending.TOPOLOGY_RESERVATION, detail=why))
            if d.outcome == Outcome.PREEMPT and d.assignment is not None and holder is not None:
                # Hold where it goes once its targets are gone, so that entries applied
                # after it cannot take that node capacity in this cycle (Kueue adds the
                # preemptor's TAS usage to the cycle's snapshot).
                why = holder.hold(rec.key, rec.wl, cq_defs[d.cluster_queue], flavors,
                                  d.assignment, d.targets)
                if why:
                    d = replace(d, outcome=Outcome.PENDING, immediate=True, targets=(),
                                pending=PendingReason(Pending.NO_LONGER_FITS))
            if d.outcome == Outcome.PREEMPT:
                rec.preempting = True
                for target in d.targets:
                    progress |= self._preempt(rec, d, target)
            elif not d.immediate:
                rec.preempting = False  # it no longer fits even with preemption: no claim to keep
            if self._record_progress(rec, d) and not d.immediate:
                d = replace(d, immediate=True)  # more flavors to try: back to the heap now
                progress = True
            pending = d.pending
            if self._tas is not None and pending is not None and pending.topology_failed:
                pending = pending.with_topology_detail(self._tas.explain(rec.key))
            if rec.pending != pending:
                rec.pending = pending
                self._changes.written.add(rec.key)
            if d.outcome == Outcome.PENDING and not rec.requests_reported:
                # A preemptor waiting for its victims is not told (Kueue writes no status then).
                rec.requests_reported = True
                self._changes.written.add(rec.key)
            progress |= self._pending.requeue_decided(rec, d)
        if holder is not None:
            holder.drop_holds()  # a cycle's holds end with it; the next one decides again
        return progress

    def _preempt(self, rec: WorkloadRecord, d: Decision, target: str) -> bool:
        """Evict (or take back unseen) one target of ``rec``'s preemption; True if it did."""
        victim = self._workloads.get(target)
        # A victim already stopping counts as preempted, as Kueue's does: the
        # preemptor waits for its quota and nothing is evicted twice.
        if victim is not None and victim.holds_quota and victim.unpublished and victim.took_over is None:
            self._lifecycle.withdraw(victim)
            return True
        if victim is not None and victim.holds_quota and victim.stopping is None:
            reason = d.target_reasons.get(target, "InClusterQueue")
            self.preempted_reasons[target] = reason
            victim.preemption_reasons.append(reason)
            job_uid = ((rec.wl.source.get("metadata") or {}).get("labels") or {}).get(keys.JOB_UID) or ""
            victim.preemption = Preemption(reason, rec.wl.uid, job_uid,
                                           self._cache.path(rec.cluster_queue),
                                           self._cache.path(victim.cluster_queue), rec.key,
                                           rec.priority, victim.priority)
            self._lifecycle.evict(victim, "Preempted", requeue_now=True)
            return True
        return False

    def run_until_idle(self, max_cycles: int = 1_000_000) -> list[Decision]:
        """Cycle until a cycle admits nothing and parks nothing."""
        decisions: list[Decision] = []
        for _ in range(max_cycles):
            result = self.next_cycle()
            decisions.extend(result.decisions)
            if not self.apply_cycle(result):
                break
        return decisions
