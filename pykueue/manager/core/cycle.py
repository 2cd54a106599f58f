"""One scheduling cycle: heads in, decisions out (Kueue's ``schedule``).

1. *Nominate*: each head is checked (ClusterQueue active, namespace selected, checks
   not failed) and gets a flavor assignment against the snapshot taken at cycle start.
   Entries whose assignment needs preemption ask the preemption hook for targets.
2. *Order*: entries that do not borrow, then higher priority, then earlier queue-order
   timestamp (then key, for determinism); under Kueue's PrioritizePreemptorWorkloads a
   preemptor waiting for its victims goes before all of them. With fair sharing, a
   tournament by dominant resource share instead.
3. *Process* in that order on the cycle's usage view: an entry is admitted only if it
   still fits after the entries before it took their share, so two heads of one cohort
   cannot both take the last free capacity. An entry that must wait for preemption
   holds the capacity it needs, so lower-ordered entries cannot take it.

An elastic job's scaled-up slice (``Entry.replaces``) is judged as if the admitted slice it
replaces had given its quota back (Kueue asks for the increase only) and keeps its flavors;
that slice is never a preemption target of its replacement. Admitted, the replacement takes
the slice's place in the cycle's view, and nothing later may preempt the slice.

Nothing outside the returned :class:`CycleResult` changes; the caller applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from .assignment import Assignment, CycleResult, Decision, Entry, Mode, Outcome
from .flavor_assigner import FlavorAssigner
from .hooks import NoPreemption, PreemptionHook, QuotaOnlyTopology, TopologyHook, TopologyPreemption
from .matching import label_selector_matches
from .objects import FR
from .quota import QuotaNode, Usage, available
from .reasons import FlavorVerdict, Miss, Pending, PendingReason, PodSetMiss
from .snapshot import Snapshot
from .workload_state import WorkloadRecord

FAILED_AFTER_NOMINATION = "FailedAfterNomination"
NAMESPACE_MISMATCH = "NamespaceMismatch"
PENDING_PREEMPTION = "PendingPreemption"


def _fits(node: QuotaNode, usage: Usage, amounts: dict[FR, int]) -> bool:
    return all(available(node, usage, fr) >= v for fr, v in amounts.items() if v)


def _without(snap: Snapshot, old: WorkloadRecord) -> Snapshot:
    """The snapshot as if ``old`` held nothing: its quota free, and it no one's victim. Its
    queue's holding version is left out, so nothing preemption keeps across snapshots is
    derived from this one."""
    cq = old.cluster_queue or ""
    usage = snap.usage.overlay()
    node = snap.nodes.get(cq)
    if node is not None:
        usage.add_all(node, old.usage, sign=-1)
    holding = {**snap.holding, cq: {k: r for k, r in (snap.holding.get(cq) or {}).items() if k != old.key}}
    versions = {k: v for k, v in snap.holding_versions.items() if k != cq}
    return replace(snap, usage=usage, holding=holding, holding_versions=versions)


def _flavors_of(old: WorkloadRecord) -> dict[str, dict[str, str]]:
    """podset -> resource -> flavor of an admitted slice."""
    return {ps.name: dict(ps.flavors) for ps in (old.assignment.podsets if old.assignment else ())}


def _preemption_hold(node: QuotaNode, usage: Usage, amounts: dict[FR, int], borrowing: bool) -> dict[FR, int]:
    """What a preempting entry can get, held so later entries of the cohort cannot take it."""
    holds: dict[FR, int] = {}
    for fr, v in amounts.items():
        q = node.quota(fr)
        used = usage.get(node, fr)
        if borrowing:
            hold = v if q.borrowing_limit is None else min(v, q.nominal + q.borrowing_limit - used)
        else:
            hold = min(v, q.nominal - used)
        if hold > 0:
            holds[fr] = hold
    return holds


class Scheduler:
    def __init__(self, preemption: PreemptionHook | None = None, topology: TopologyHook | None = None,
                 partial_admission: bool = True, ignore_undeclared: bool = False) -> None:
        """``ignore_undeclared``: Kueue's quotaCheckStrategy IgnoreUndeclared (see ``FlavorAssigner``)."""
        self.preemption: PreemptionHook = preemption or NoPreemption()
        self.topology: TopologyHook = topology or QuotaOnlyTopology()
        # Checked once: isinstance against a runtime-checkable Protocol is slow (every head).
        self.topology_preemption: TopologyPreemption | None = (
            self.topology if isinstance(self.topology, TopologyPreemption) else None)
        self.partial_admission = partial_admission
        self.ignore_undeclared = ignore_undeclared
        # Fair sharing replaces the order of step 2 with an iterator that re-decides the
        # next entry on the cycle's live usage view (see fair_sharing.tournament).
        self.order: Callable[[Sequence[Entry], Snapshot, Usage], Iterable[Entry]] | None = None

    # -- nomination ----------------------------------------------------------------------

    def _assign(self, assigner: FlavorAssigner, entry: Entry, snap: Snapshot,
                pinned: Mapping[str, Mapping[str, str]] | None = None) -> Assignment:
        """Kueue's getAssignments: the full counts if they fit or can preempt, else the
        largest partial counts that do; the entry's targets are set to match. ``pinned``
        (a replacement slice's flavors) rules out partial counts: Kueue never combines them."""
        cq = snap.cluster_queues[entry.cluster_queue]
        wl = entry.workload
        full = self._place_topology(snap, entry, assigner.assign(wl, cq, entry.priority, pinned=pinned,
                                                                 resume=entry.resume))
        if self._usable(snap, entry, full) or not self.partial_admission or pinned is not None:
            return full
        deltas = [ps.count - ps.min_count if ps.min_count is not None else 0 for ps in wl.podsets]
        total = sum(deltas)
        if total == 0:
            return full

        def counts(k: int) -> list[int]:
            return [ps.count - (d * k // total) for ps, d in zip(wl.podsets, deltas, strict=True)]

        # Smallest reduction k (largest counts) that fits or can preempt; monotone in k.
        lo, hi, found = 1, total, None
        while lo <= hi:
            mid = (lo + hi) // 2
            trial = self._place_topology(snap, entry, assigner.assign(wl, cq, entry.priority, counts(mid),
                                                                      resume=entry.resume))
            if self._usable(snap, entry, trial):
                found, hi = trial, mid - 1
            else:
                lo = mid + 1
        chosen = found if found is not None else full
        self._usable(snap, entry, chosen)  # the entry's targets follow the chosen assignment
        return chosen

    def _usable(self, snap: Snapshot, entry: Entry, assignment: Assignment) -> bool:
        """Fits, or needs preemption and has targets (left on the entry)."""
        entry.assignment = assignment
        entry.targets, entry.target_reasons, entry.fits_topology = (), {}, None
        if assignment.mode == Mode.FIT:
            return True
        if not assignment.mode.needs_preemption:
            return False
        if assignment.topology_preemption:
            entry.fits_topology = lambda freed: self._topology_fits(snap, entry, assignment, freed)
        entry.targets = tuple(self.preemption.targets(snap, entry))
        # The hook remembers why it chose each target; move that onto the entry so the
        # hook's memory stays bounded and the reasons travel with the decision.
        reasons: dict[str, str] = getattr(self.preemption, "reasons", {})
        entry.target_reasons = {t: reasons.pop(t, "InClusterQueue") for t in entry.targets}
        reasons.clear()
        if assignment.topology_preemption:
            # The placement to hold while the targets go: without them, or on an empty
            # cluster when there are none (Kueue's updateAssignmentForTAS).
            self._place_freeing(snap, entry, assignment, frozenset(entry.targets) if entry.targets else None)
        return bool(entry.targets)

    @staticmethod
    def _tas_podsets(snap: Snapshot, assignment: Assignment) -> list[tuple[int, str, str]]:
        """(index, topology, flavor) of each pod set assigned a TAS flavor."""
        out = []
        for i, psa in enumerate(assignment.podsets):
            for fname in sorted(set(psa.flavors.values())):
                flavor = snap.flavors.get(fname)
                if flavor is not None and flavor.topology_name:
                    out.append((i, flavor.topology_name, fname))
                    break
        return out

    def _topology_fits(self, snap: Snapshot, entry: Entry, assignment: Assignment,
                       freed: frozenset[str] | None) -> bool:
        hook = self.topology_preemption
        if hook is None:
            return True
        return all(hook.place_freeing(snap, entry, assignment, i, freed) is not None
                   for i, _, _ in self._tas_podsets(snap, assignment))

    def _place_freeing(self, snap: Snapshot, entry: Entry, assignment: Assignment,
                       freed: frozenset[str] | None) -> None:
        hook = self.topology_preemption
        if hook is None:
            return
        for i, _, _ in self._tas_podsets(snap, assignment):
            placed = hook.place_freeing(snap, entry, assignment, i, freed)
            if isinstance(placed, dict):
                assignment.podsets[i].topology_assignment = placed

    def _place_topology(self, snap: Snapshot, entry: Entry, assignment: Assignment) -> Assignment:
        tas = self._tas_podsets(snap, assignment)
        if not tas:
            return assignment
        simulates = self.topology_preemption is not None
        if assignment.mode.needs_preemption and simulates:
            # Preemption must also free node capacity: it is only worth it if the pod sets
            # would fit an empty cluster (Kueue's NoFit otherwise).
            if self._topology_fits(snap, entry, assignment, None):
                assignment.topology_preemption = True
            else:
                assignment.mode = Mode.NO_FIT
            return assignment
        if assignment.mode != Mode.FIT:
            return assignment
        failed: list[int] = []
        for i, topo, topo_flavor in tas:
            psa = assignment.podsets[i]
            placed = self.topology.place(snap, entry, assignment, i, topo)
            if placed is None:
                failed.append(i)
                psa.mode = Mode.NO_CANDIDATES
                verdict = FlavorVerdict(Miss.TOPOLOGY, topo_flavor)
                psa.reasons.append(verdict)
                assignment.mode = Mode.NO_CANDIDATES
                # Kueue reports only the topology failure of the pod set, not earlier misses.
                assignment.misses = (PodSetMiss(psa.name, (verdict,)),)
            elif isinstance(placed, dict):
                psa.topology_assignment = placed
        if failed and simulates and self._topology_fits(snap, entry, assignment, None):
            # Quota fits but node capacity does not: preempting on the pod sets' flavors
            # may free it.
            assignment.topology_preemption = True
            assignment.preempt_frs = assignment.preempt_frs | {
                (f, r) for i in failed for r, f in assignment.podsets[i].flavors.items()}
        return assignment

    @staticmethod
    def _inadmissible(entry: Entry, snap: Snapshot) -> PendingReason | None:
        """Why the entry cannot be considered at all in its ClusterQueue, if it cannot."""
        cq_name = entry.cluster_queue
        cq = snap.cluster_queues.get(cq_name)
        if cq is None or cq_name not in snap.nodes:
            return PendingReason(Pending.CLUSTER_QUEUE_GONE, cq_name)
        why = snap.inactive.get(cq_name)
        if why is not None:
            return why
        labels = snap.namespaces.get(entry.workload.namespace,
                                     {"kubernetes.io/metadata.name": entry.workload.namespace})
        if not label_selector_matches(cq.namespace_selector, labels):
            return PendingReason(Pending.NAMESPACE_MISMATCH, cq_name)
        invalid = entry.workload.invalid_resources
        if invalid:
            return PendingReason(Pending.INVALID_RESOURCES, detail=invalid)
        return None

    def _nominate(self, entry: Entry, snap: Snapshot, assigner: FlavorAssigner) -> None:
        why = self._inadmissible(entry, snap)
        if why is not None:
            entry.inadmissible = why
            if why.kind is Pending.NAMESPACE_MISMATCH:
                entry.requeue_reason = NAMESPACE_MISMATCH
            return
        replaced = self._replaced_slice(snap, entry)
        if replaced is None:
            entry.replaces = None  # nothing (left) to take over: it asks for all it needs
            entry.assignment = self._assign(assigner, entry, snap)
            return
        view = _without(snap, replaced)
        assigner = FlavorAssigner(view, self.preemption, self.ignore_undeclared)
        entry.assignment = self._assign(assigner, entry, view, pinned=_flavors_of(replaced))

    @staticmethod
    def _replaced_slice(snap: Snapshot, entry: Entry) -> WorkloadRecord | None:
        """The admitted slice the entry replaces, if it holds quota in the entry's queue and
        is not being evicted (then its quota is on the way out, not to be taken over)."""
        if entry.replaces is None:
            return None
        old = (snap.holding.get(entry.cluster_queue) or {}).get(entry.replaces)
        if old is None or old.stopping is not None or old.wl.namespace != entry.workload.namespace:
            return None
        return old

    # -- the cycle -----------------------------------------------------------------------

    @staticmethod
    def _holder(snap: Snapshot, key: str) -> tuple[QuotaNode, WorkloadRecord] | None:
        """The node of the queue where ``key`` holds quota, and its record (None: holds none)."""
        rec = snap.workloads.get(key)
        if rec is not None:
            held = snap.holding.get(rec.cluster_queue or "")
            node = snap.nodes.get(rec.cluster_queue or "")
            if held is not None and node is not None and held.get(key) is rec:
                return node, rec
        for cq_name, held in snap.holding.items():  # a snapshot built without its workloads
            node = snap.nodes.get(cq_name)
            if node is not None and key in held:
                return node, held[key]
        return None

    def _give_back(self, snap: Snapshot, usage: Usage, victims: Iterable[str]) -> None:
        """Give the victims' quota back in ``usage``."""
        for key in dict.fromkeys(victims):
            held = self._holder(snap, key)
            if held is not None:
                usage.add_all(held[0], held[1].usage, sign=-1)

    def schedule(self, heads: Sequence[Entry], snap: Snapshot,
                 follow: Callable[[str], Entry | None] | None = None, followers: int = 0) -> CycleResult:
        """Decide on ``heads`` (one per ClusterQueue). With ``follow`` (pops the next workload
        of a queue), up to ``followers`` more of each queue whose head was admitted are tried
        after all heads (see :meth:`_followers`)."""
        assigner = FlavorAssigner(snap, self.preemption, self.ignore_undeclared)
        for entry in heads:
            self._nominate(entry, snap, assigner)
        # The cycle's own view: admissions of this cycle count against later entries. Beside
        # it, the same view without the victims chosen so far (kept as they are chosen: a
        # cycle of a thousand heads may choose thousands).
        usage = snap.usage.overlay()
        freed = snap.usage.overlay()
        decisions: list[Decision] = []
        entries = [e for e in heads if e.assignment is not None]
        for e in heads:
            if e.assignment is None:
                decisions.append(Decision(e.workload.key, e.cluster_queue, Outcome.PENDING, e.inadmissible,
                                          reason="Inadmissible"))
        ordered: Iterable[Entry]
        if self.order is not None:
            ordered = self.order(entries, snap, usage)
        else:
            # A preemptor already waiting for its victims first (PrioritizePreemptorWorkloads),
            # so the quota they release goes to it; then non-borrowing, higher priority,
            # earlier queue order.
            ordered = sorted(entries, key=lambda e: (not e.preempting, e.assignment.borrowing if e.assignment
                                                     else 0, -e.priority, e.timestamp, e.workload.key))
        victims: set[str] = set()
        for e in ordered:
            a = e.assignment
            assert a is not None
            node = snap.nodes[e.cluster_queue]
            key = e.workload.key
            if a.mode == Mode.NO_FIT:
                decisions.append(Decision(key, e.cluster_queue, Outcome.PENDING,
                                          PendingReason(Pending.NO_FIT, podsets=a.misses),
                                          assignment=a, no_fit=True))
                continue
            if a.mode.needs_preemption and not e.targets:
                reclaim = snap.cluster_queues[e.cluster_queue].preemption.get("reclaimWithinCohort", "Never")
                if reclaim != "Any" or e.preempting:
                    hold = _preemption_hold(node, usage, {fr: a.usage[fr] for fr in a.preempt_frs
                                                          if fr in a.usage}, a.borrowing > 0)
                    usage.add_all(node, hold)
                    freed.add_all(node, hold)
                decisions.append(Decision(key, e.cluster_queue, Outcome.PENDING,
                                          PendingReason(Pending.NO_CANDIDATES, podsets=a.misses),
                                          assignment=a, no_fit=True))
                continue
            if victims.intersection(e.targets):
                decisions.append(Decision(key, e.cluster_queue, Outcome.PENDING,
                                          PendingReason(Pending.OVERLAPPING_TARGETS),
                                          assignment=a, immediate=True))
                continue
            # The slice it replaces gives its quota to it; gone already if an entry before
            # this one preempts it.
            taken_over = (e.replaces,) if e.replaces is not None else ()
            view = freed
            if e.targets or taken_over:
                view = freed.overlay()
                self._give_back(snap, view, e.targets + taken_over)
            if victims.intersection(taken_over) or not _fits(node, view, a.usage):
                decisions.append(Decision(key, e.cluster_queue, Outcome.PENDING,
                                          PendingReason(Pending.NO_LONGER_FITS),
                                          assignment=a, immediate=True))
                continue
            usage.add_all(node, a.usage)
            freed.add_all(node, a.usage)
            self._give_back(snap, usage, taken_over)
            self._give_back(snap, freed, taken_over)
            if e.targets:
                victims.update(e.targets)
                self._give_back(snap, freed, e.targets)
                decisions.append(Decision(key, e.cluster_queue, Outcome.PREEMPT,
                                          PendingReason(Pending.PREEMPTING), assignment=a,
                                          targets=e.targets, immediate=True, target_reasons=e.target_reasons,
                                          replaces=e.replaces))
            else:
                victims.update(taken_over)  # finished as this is applied: no one's victim
                decisions.append(Decision(key, e.cluster_queue, Outcome.ADMIT, assignment=a,
                                          replaces=e.replaces))
        untried: list[tuple[str, str]] = []
        if follow is not None and followers > 0:
            admitted = [d.cluster_queue for d in decisions if d.outcome == Outcome.ADMIT]
            self._followers(snap, assigner, usage, freed, list(dict.fromkeys(admitted)), follow, followers,
                            decisions, untried)
        return CycleResult(decisions, untried)

    def _followers(self, snap: Snapshot, assigner: FlavorAssigner, usage: Usage, freed: Usage,
                   queues: list[str], follow: Callable[[str], Entry | None], limit: int,
                   decisions: list[Decision], untried: list[tuple[str, str]]) -> None:
        """More admissions of the queues whose head was admitted, a round of one per queue at
        a time (in the order their heads were), each taken only while it fits on the cycle's
        view within its queue's nominal quota, with no preemption or partial counts; a queue's
        first follower that does not stops that queue, and goes back untried.

        In Kueue each of these would be its queue's head in one of the next cycles, and would be
        admitted there the same way: an entry within nominal quota goes before every borrowing
        one (and under fair sharing has no share to lose to), needs no victims, and takes nothing
        that another queue's nominal quota guarantees. Only the waiting for those cycles is saved
        (kubernetes-sigs/kueue#14477). Node capacity (TAS) is checked again as the cycle is
        applied, as for heads of different queues."""
        active = queues
        for _ in range(limit):
            still: list[str] = []
            for cq in active:
                e = follow(cq)
                if e is None:
                    continue
                a = self._follower_assignment(e, snap, assigner)
                node = snap.nodes[cq]
                if a is None or not all(usage.get(node, fr) + v <= node.quota(fr).nominal
                                        for fr, v in a.usage.items() if v) \
                        or not _fits(node, usage, a.usage) or not _fits(node, freed, a.usage):
                    untried.append((e.workload.key, cq))
                    continue
                usage.add_all(node, a.usage)
                freed.add_all(node, a.usage)
                decisions.append(Decision(e.workload.key, cq, Outcome.ADMIT, assignment=a))
                still.append(cq)
            if not still:
                return
            active = still

    def _follower_assignment(self, entry: Entry, snap: Snapshot,
                             assigner: FlavorAssigner) -> Assignment | None:
        """A follower's full assignment when it fits without borrowing or preemption (against
        the snapshot; the caller checks the cycle's view), else None."""
        if entry.replaces is not None or entry.preempting:
            return None  # the paths of a head: taken over quota, or victims to wait for
        if self._inadmissible(entry, snap) is not None:
            return None
        a = assigner.assign(entry.workload, snap.cluster_queues[entry.cluster_queue], entry.priority)
        if a.mode != Mode.FIT or a.borrowing:
            return None
        a = self._place_topology(snap, entry, a)
        if a.mode != Mode.FIT:
            return None
        entry.assignment = a
        return a
