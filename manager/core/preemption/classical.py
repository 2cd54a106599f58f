"""Classical preemption: which admitted workloads to evict so that a pending one fits.

Candidates (see ../shared spec §5.1-5.4):

* in the preemptor's own ClusterQueue, by ``withinClusterQueue`` (``LowerPriority``:
  strictly lower priority; ``LowerOrNewerEqualPriority``: also equal priority but queued
  later);
* in other ClusterQueues of the same cohort tree that borrow on a contested
  (flavor, resource), by ``reclaimWithinCohort`` (``LowerPriority`` or ``Any``). When the
  preemptor's request fits in its own quota these are plain reclamations
  (``InCohortReclamation``); otherwise ``borrowWithinCohort: LowerPriority`` (with its
  optional ``maxPriorityThreshold``) lets it take lower-priority ones while borrowing
  (``InCohortReclaimWhileBorrowing``), and the rest are only usable if the preemptor
  ends up within its nominal quota.

Candidates are ordered other ClusterQueues first, then lower priority, then the most
recent quota reservation, then key. The minimal set is found by removing candidates in
that order until the request fits, then giving back every removed one (from the
second-to-last to the first) the request does not need. A candidate from another
ClusterQueue is only taken while that queue still borrows on a contested resource.

The search works on throw-away overlays of the snapshot's usage, so it never changes
what the cycle sees; ``reasons`` remembers why each returned target was chosen. A
snapshot does not change while its cycle nominates, and every queue's head is searched
for against it (twice: the flavor assigner's oracle, then the targets), so the borrowing
queues of each cohort, each queue's candidate workloads and whole answers are kept per
snapshot (:class:`_Memo`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..assignment import Entry
from ..hooks import NO_CANDIDATES, PREEMPT, RECLAIM
from ..objects import FR, ClusterQueueDef
from ..quota import QuotaNode, Usage, available, local_available
from ..snapshot import Snapshot
from ..workload_state import WorkloadRecord

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

# Variants of a candidate (Kueue's preemption variants).
_WITHIN_CQ = 0
_RECLAIM = 1  # the preemptor has the quota's "advantage": reclaim regardless of borrowing
_WHILE_BORROWING = 2
_WITHOUT_BORROWING = 3  # valid only if the preemptor ends up not borrowing

TopologyFit = Callable[[frozenset[str]], bool]  # do the TAS pod sets fit with these workloads gone?

_REASON = {_WITHIN_CQ: IN_CLUSTER_QUEUE, _RECLAIM: IN_COHORT_RECLAMATION,
           _WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING, _WITHOUT_BORROWING: IN_COHORT_RECLAMATION}


@dataclass(frozen=True, eq=False)  # identity: a record compared field by field is costly
class Candidate:
    key: str
    cluster_queue: str
    record: WorkloadRecord
    variant: int
    lca: str = ""  # the cohort whose subtree the candidate was found in (other queues only)


def _borrowing_on(node: QuotaNode, usage: Usage, frs: frozenset[FR]) -> bool:
    return any(usage.get(node, fr) > node.subtree.get(fr, 0) for fr in frs)


def _within_nominal(node: QuotaNode, usage: Usage, frs: frozenset[FR]) -> bool:
    return not _borrowing_on(node, usage, frs)


def _at_nominal(node: QuotaNode, usage: Usage, frs: frozenset[FR]) -> bool:
    return any(usage.get(node, fr) >= node.quota(fr).nominal for fr in frs)


def _bwc_forbidden(cq: ClusterQueueDef) -> bool:
    bwc = cq.preemption.get("borrowWithinCohort") or {}
    return str(bwc.get("policy") or "Never") == "Never"


def _fits_in_quota(node: QuotaNode, usage: Usage, request: Mapping[FR, int]) -> tuple[bool, dict[FR, int]]:
    """Whether ``request`` fits in the node's subtree quota, and what is left after its local quota."""
    fits = all(usage.get(node, fr) + v <= node.subtree.get(fr, 0) for fr, v in request.items())
    return fits, {fr: max(0, v - local_available(node, usage, fr)) for fr, v in request.items()}


def policy_allows(policy: str, rec: WorkloadRecord, priority: int, timestamp: float) -> bool:
    """Kueue's preemption policies, as seen from a preemptor of ``priority`` queued at ``timestamp``
    (shared with fair-sharing preemption)."""
    if policy == "Any":
        return True
    if policy == "LowerPriority":
        return rec.priority < priority
    if policy == "LowerOrNewerEqualPriority":
        return rec.priority < priority or (rec.priority == priority and timestamp < rec.queue_ts)
    return False


PolicyArgs = tuple[float, ...]


def policy_args(policy: str, priority: int, timestamp: float) -> PolicyArgs:
    """What :func:`policy_allows` reads of the preemptor under ``policy`` (a memo key)."""
    if policy == "LowerPriority":
        return (priority,)
    if policy == "LowerOrNewerEqualPriority":
        return (priority, timestamp)
    return ()


VictimOrder = tuple[bool, bool, int, float, int, str]


def victim_order(cluster_queue: str, rec: WorkloadRecord, own: str) -> VictimOrder:
    """Kueue's candidate order: already evicted (still stopping) first, then other
    ClusterQueues, lower priority, most recent reservation, uid (shared with fair-sharing
    preemption)."""
    return (rec.stopping is None, cluster_queue == own, rec.priority, -(rec.reserved_at or 0.0),
            -rec.reserved_seq, rec.wl.uid)


def _policy(cq: ClusterQueueDef, name: str) -> str:
    return str(cq.preemption.get(name) or "Never")


class _Memo:
    """What the searches against one snapshot share (computed at most once each)."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self._borrowing: dict[tuple[int, frozenset[FR]], list[QuotaNode]] = {}
        self._holding: dict[tuple[str, frozenset[FR]], list[tuple[str, WorkloadRecord]]] = {}
        # ClassicalPreemption.search's answers (do not mutate).
        self.found: dict[tuple[str, tuple[tuple[FR, int], ...], frozenset[FR], PolicyArgs, PolicyArgs],
                         list[Candidate]] = {}

    def borrowing_children(self, cohort: QuotaNode, frs: frozenset[FR]) -> list[QuotaNode]:
        """Children of ``cohort`` that use more than their subtree quota on one of ``frs``."""
        key = (id(cohort), frs)
        got = self._borrowing.get(key)
        if got is None:
            usage = self.snap.usage
            got = self._borrowing[key] = [c for c in cohort.children if _borrowing_on(c, usage, frs)]
        return got

    def holding(self, cq_name: str, frs: frozenset[FR]) -> list[tuple[str, WorkloadRecord]]:
        """Workloads of a queue that use one of ``frs``."""
        key = (cq_name, frs)
        got = self._holding.get(key)
        if got is None:
            got = self._holding[key] = [(k, rec) for k, rec in self.snap.holding.get(cq_name, {}).items()
                                        if frs.intersection(rec.usage)]
        return got


class ClassicalPreemption:
    """Kueue's classical preemptor as a :class:`~manager.core.hooks.PreemptionHook`."""

    def __init__(self) -> None:
        self.reasons: dict[str, str] = {}  # target key -> preemption reason (latest search)
        self.no_other_queues = True  # facts about the latest candidate list (attempt order)
        self.no_hierarchy = True
        self._memo: _Memo | None = None  # the last snapshot's, replaced when another comes

    def _memo_for(self, snap: Snapshot) -> _Memo:
        if self._memo is None or self._memo.snap is not snap:
            self._memo = _Memo(snap)
        return self._memo

    # -- hook ----------------------------------------------------------------------------

    def oracle(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int, priority: int) -> str:
        found = self.search(snapshot, cq.name, priority, float("-inf"), {fr: amount}, frozenset({fr}))
        if not found:
            return NO_CANDIDATES
        return PREEMPT if any(c.cluster_queue == cq.name for c in found) else RECLAIM

    def targets(self, snapshot: Snapshot, entry: Entry) -> Sequence[str]:
        a = entry.assignment
        if a is None or not a.preempt_frs:
            return ()
        if entry.fits_topology is not None:
            # The answer depends on the preemptor's topology too: not shared through the memo.
            found = self._search(snapshot, snapshot.cluster_queues[entry.cluster_queue], entry.priority,
                                 entry.timestamp, a.usage, a.preempt_frs, entry.fits_topology)
        else:
            found = self.search(snapshot, entry.cluster_queue, entry.priority, entry.timestamp,
                                a.usage, a.preempt_frs)
        for c in found:
            self.reasons[c.key] = _REASON[c.variant]
        return tuple(c.key for c in found)

    # -- search --------------------------------------------------------------------------

    def candidates(self, snap: Snapshot, cq_name: str, priority: int, timestamp: float,
                   request: Mapping[FR, int], frs: frozenset[FR], skip_priority: bool = False
                   ) -> list[Candidate]:
        """Hierarchy candidates, then priority candidates, then the preemptor's own queue's.

        With ``skip_priority``, priority candidates are left out: :meth:`_search` asks so
        when no attempt could take one (the preemptor already at its nominal quota, and
        ``borrowWithinCohort`` off), as most heads of a full cohort do, and the cohort's
        borrowers are many."""
        memo = self._memo_for(snap)
        cq = snap.cluster_queues[cq_name]
        node = snap.nodes[cq_name]
        usage = snap.usage
        own: list[Candidate] = []
        within = _policy(cq, "withinClusterQueue")
        if within != "Never":
            for key, rec in memo.holding(cq_name, frs):
                if policy_allows(within, rec, priority, timestamp):
                    own.append(Candidate(key, cq_name, rec, _WITHIN_CQ))
        hierarchy: list[Candidate] = []
        by_priority: list[Candidate] = []
        reclaim = _policy(cq, "reclaimWithinCohort")
        if node.parent is not None and reclaim != "Never":
            bwc = cq.preemption.get("borrowWithinCohort") or {}
            bwc_allowed = str(bwc.get("policy") or "Never") != "Never"
            threshold = bwc.get("maxPriorityThreshold")

            def variant(rec: WorkloadRecord, advantage: bool) -> int:
                if advantage:
                    return _RECLAIM
                if not bwc_allowed or rec.priority >= priority or (
                        threshold is not None and rec.priority > int(threshold)):
                    return _WITHOUT_BORROWING
                return _WHILE_BORROWING

            def collect(current: QuotaNode, lca: QuotaNode, skip: QuotaNode | None, advantage: bool,
                        out: list[Candidate]) -> None:
                for child in memo.borrowing_children(current, frs):
                    if child is skip or child is node:
                        continue
                    if not child.is_cq:
                        collect(child, lca, skip, advantage, out)
                        continue
                    for key, rec in memo.holding(child.name, frs):
                        if policy_allows(reclaim, rec, priority, timestamp):
                            out.append(Candidate(key, child.name, rec, variant(rec, advantage), lca.name))

            # Walking up, the preemptor gains an "advantage" over everything outside the
            # lowest subtree whose quota can hold its request: those workloads use quota
            # that subtree lends, so they are reclaimed regardless of borrowWithinCohort.
            advantage, remaining = _fits_in_quota(node, usage, request)
            previous: QuotaNode | None = None
            ancestor: QuotaNode | None = node.parent
            while ancestor is not None:
                if advantage or not skip_priority:
                    collect(ancestor, ancestor, previous, advantage, hierarchy if advantage else by_priority)
                fits, remaining = _fits_in_quota(ancestor, usage, remaining)
                advantage = advantage or fits
                previous, ancestor = ancestor, ancestor.parent
        for group in (hierarchy, by_priority, own):
            group.sort(key=lambda c: self._order(c, cq_name))
        self.no_other_queues = not hierarchy and not by_priority
        self.no_hierarchy = not hierarchy
        return [*hierarchy, *by_priority, *own]

    @staticmethod
    def _order(c: Candidate, cq_name: str) -> VictimOrder:
        return victim_order(c.cluster_queue, c.record, cq_name)

    def search(self, snap: Snapshot, cq_name: str, priority: int, timestamp: float,
               request: Mapping[FR, int], frs: frozenset[FR]) -> list[Candidate]:
        """The minimal set of candidates whose eviction lets ``request`` fit (empty: none).

        Answers are shared between equal searches of one snapshot: do not mutate."""
        cq = snap.cluster_queues[cq_name]
        memo = self._memo_for(snap)
        key = (cq_name, tuple(sorted(request.items())), frs,
               policy_args(_policy(cq, "withinClusterQueue"), priority, timestamp),
               policy_args(_policy(cq, "reclaimWithinCohort"), priority, timestamp))
        got = memo.found.get(key)
        if got is None:
            got = memo.found[key] = self._search(snap, cq, priority, timestamp, request, frs)
        return got

    def _search(self, snap: Snapshot, cq: ClusterQueueDef, priority: int, timestamp: float,
                request: Mapping[FR, int], frs: frozenset[FR], topology: TopologyFit | None = None
                ) -> list[Candidate]:
        cq_name = cq.name
        node = snap.nodes[cq_name]
        bwc_forbidden = _bwc_forbidden(cq)
        # Only borrowing attempts, which cannot take priority candidates: leave them out.
        borrowing_only = bwc_forbidden and _at_nominal(node, snap.usage, frs)
        cands = self.candidates(snap, cq_name, priority, timestamp, request, frs,
                                skip_priority=borrowing_only)
        if not cands:
            return []
        if self.no_other_queues or borrowing_only:
            attempts = [True]
        elif bwc_forbidden and self.no_hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow_borrowing in attempts:
            found = self._minimal(snap, node, request, frs, cands, allow_borrowing, topology)
            if found:
                return found
        return []

    @staticmethod
    def _fits(node: QuotaNode, usage: Usage, request: Mapping[FR, int], allow_borrowing: bool) -> bool:
        for fr, v in request.items():
            if not v:
                continue
            if available(node, usage, fr) < v:
                return False
            if not allow_borrowing and usage.get(node, fr) + v > node.subtree.get(fr, 0):
                return False
        return True

    @staticmethod
    def _still_valid(other: QuotaNode, lca: str, usage: Usage, frs: frozenset[FR]) -> bool:
        """A victim elsewhere stays one while its queue, and each cohort up to the LCA, borrows."""
        n: QuotaNode | None = other
        while n is not None and not (not n.is_cq and n.name == lca):
            if _within_nominal(n, usage, frs):
                return False
            n = n.parent
        return True

    def _minimal(self, snap: Snapshot, node: QuotaNode, request: Mapping[FR, int], frs: frozenset[FR],
                 cands: list[Candidate], allow_borrowing: bool, topology: TopologyFit | None = None
                 ) -> list[Candidate]:
        """Remove candidates in order until the request fits (its quota, and with ``topology``
        its placement on the nodes the removed ones free), then give back the unneeded."""
        def fits_all(usage: Usage, gone: list[Candidate]) -> bool:
            return self._fits(node, usage, request, allow_borrowing) and (
                topology is None or topology(frozenset(c.key for c in gone)))

        usage = snap.usage.overlay()
        # Freeing x of usage anywhere raises what the node can take by at most x, so the
        # request cannot fit before the removed victims add up to what it lacks now.
        lacking = {fr: v - available(node, usage, fr) for fr, v in request.items() if v}
        # Without borrowing it must also fit the node's own quota, which only its own victims free.
        over = {} if allow_borrowing else {
            fr: usage.get(node, fr) + v - node.subtree.get(fr, 0) for fr, v in request.items() if v}
        removed: list[Candidate] = []
        fits = False
        for c in cands:
            if c.variant == _WITHOUT_BORROWING and allow_borrowing:
                continue
            other = snap.nodes[c.cluster_queue]
            if other is not node and not self._still_valid(other, c.lca, usage, frs):
                continue
            usage.add_all(other, c.record.usage, sign=-1)
            removed.append(c)
            for fr in lacking:
                lacking[fr] -= c.record.usage.get(fr, 0)
            if other is node:
                for fr in over:
                    over[fr] -= c.record.usage.get(fr, 0)
            if all(v <= 0 for v in lacking.values()) and all(v <= 0 for v in over.values()) \
                    and fits_all(usage, removed):
                fits = True
                break
        if not fits:
            return []
        kept = [removed[-1]]
        for i in range(len(removed) - 2, -1, -1):
            c = removed[i]
            other = snap.nodes[c.cluster_queue]
            usage.add_all(other, c.record.usage)
            if not fits_all(usage, [*removed[:i], *kept]):
                usage.add_all(other, c.record.usage, sign=-1)
                kept.append(c)
        kept.reverse()
        return kept
