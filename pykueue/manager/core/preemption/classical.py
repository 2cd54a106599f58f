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
for against it (twice: the flavor assigner's oracle, then the targets), so whole answers
are kept per snapshot (:class:`_Memo`). Each queue's holders in victim order, and each
cohort's holders of its borrowing queues merged in that order, are kept longer, until the
core says one of those queues' holders changed (:class:`_Kept`); a search reads the
merged sequence of the cohorts it may take from, and makes candidates only as far as it
reads them, which in a cohort of hundreds of admitted workloads is mostly a few. A search
skips its own queue outright when the queue's lowest priority rules out every holder.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..assignment import Entry
from ..hooks import NO_CANDIDATES, PREEMPT, RECLAIM
from ..objects import FR, ClusterQueueDef
from ..quota import QuotaNode, Usage, available, local_available
from ..snapshot import Snapshot, level_after_removal
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


# A workload holding quota, as a victim: (victim order, key, record, its ClusterQueue).
_Held = tuple["VictimOrder", str, WorkloadRecord, str]
# A cohort to take candidates from: (the cohort, its child to leave out, the preemptor's advantage).
_Level = tuple[QuotaNode, "QuotaNode | None", bool]
_T = TypeVar("_T")


# A cohort's workloads of its borrowing queues in victim order, and each such queue's name ->
# the child of the cohort it is under.
_Lent = tuple["_Lazy[_Held]", dict[str, QuotaNode]]


@dataclass(frozen=True)
class _Ordered:
    """A queue's workloads in victim order, and the lowest priority among them."""
    held: list[_Held]
    lowest: int | None


def _held_order(h: _Held) -> VictimOrder:
    return h[0]


def _pair_order(p: tuple[VictimOrder, Candidate]) -> VictimOrder:
    return p[0]


class _Lazy(Generic[_T]):
    """A sequence made as far as it is read, and read again from what was made."""

    def __init__(self, source: Iterator[_T]) -> None:
        self._source: Iterator[_T] | None = source
        self._made: list[_T] = []

    def _more(self) -> bool:
        if self._source is not None:
            for item in self._source:
                self._made.append(item)
                return True
            self._source = None
        return False

    def __iter__(self) -> Iterator[_T]:
        i = 0
        while i < len(self._made) or self._more():
            yield self._made[i]
            i += 1

    def __bool__(self) -> bool:
        return bool(self._made) or self._more()


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


def _may_allow(policy: str, lowest: int | None, priority: int) -> bool:
    """Whether :func:`policy_allows` may allow any workload whose priority is at least ``lowest``."""
    if lowest is None:
        return False
    if policy == "Any":
        return True
    if policy == "LowerPriority":
        return lowest < priority
    if policy == "LowerOrNewerEqualPriority":
        return lowest <= priority
    return False


PolicyArgs = tuple[float, ...]


def policy_args(policy: str, priority: int, timestamp: float) -> PolicyArgs:
    """What :func:`policy_allows` reads of the preemptor under ``policy`` (a memo key)."""
    if policy == "LowerPriority":
        return (priority,)
    if policy == "LowerOrNewerEqualPriority":
        return (priority, timestamp)
    return ()


VictimOrder = tuple[bool, bool, bool, int, float, int, str]


def victim_order(cluster_queue: str, rec: WorkloadRecord, own: str) -> VictimOrder:
    """Kueue's candidate order: already evicted (still stopping) first, then other
    ClusterQueues, lower priority, most recent reservation, uid (shared with fair-sharing
    preemption). Within that, reservations no write has carried out yet (``unpublished``)
    come right after the stopping ones: taking one back evicts nothing the API or a job has
    seen, so it goes before any that would be evicted. The groups of candidates (hierarchy,
    priority, own queue) keep Kueue's order. Kueue has no such state; where the core does
    not track it (simulate, explain) the order is Kueue's."""
    return (rec.stopping is None, not rec.unpublished, cluster_queue == own, rec.priority,
            -(rec.reserved_at or 0.0), -rec.reserved_seq, rec.wl.uid)


class _Kept:
    """What searches keep across snapshots while the core's versions of the queues' holders
    (:attr:`Snapshot.holding_versions`) stay the same. Usage and victim order change only
    with the holders, so each queue's workloads in victim order, and each cohort's merged
    workloads of its borrowing queues, stay valid until one of its queues changes; a rebuilt
    quota tree (new nodes) starts over."""

    def __init__(self) -> None:
        self.nodes: object = None  # the quota tree the entries below belong to
        self.ordered: dict[tuple[str, frozenset[FR]], tuple[int, _Ordered]] = {}
        self.lent: dict[tuple[QuotaNode, frozenset[FR]], tuple[tuple[int, ...], _Lent]] = {}
        self.queues: dict[QuotaNode, tuple[str, ...]] = {}  # ClusterQueues below a cohort

    def follow(self, nodes: object) -> None:
        if nodes is not self.nodes:
            self.nodes = nodes
            self.lent.clear()
            self.queues.clear()

    def queues_under(self, cohort: QuotaNode) -> tuple[str, ...]:
        got = self.queues.get(cohort)
        if got is None:
            got = self.queues[cohort] = tuple(n.name for n in cohort.cluster_queues())
        return got


class _Memo:
    """What the searches against one snapshot share (computed at most once each), over
    what is kept across snapshots (:class:`_Kept`): a cycle mostly has several heads per
    cohort, and a cohort's hundreds of admitted workloads need not be sorted and merged
    again for each of them, nor for the next cycle while they stay the same."""

    def __init__(self, snap: Snapshot, kept: _Kept) -> None:
        self.snap = snap
        self._kept = kept
        kept.follow(snap.nodes)
        self._untracked: dict[tuple[str, frozenset[FR]], _Ordered] = {}
        self._lent: dict[tuple[QuotaNode, frozenset[FR]], _Lent] = {}
        # ClassicalPreemption.search's answers (do not mutate).
        self.found: dict[tuple[str, tuple[tuple[FR, int], ...], frozenset[FR], PolicyArgs, PolicyArgs],
                         list[Candidate]] = {}

    def borrowing_queues(self, cohort: QuotaNode, frs: frozenset[FR]) -> list[tuple[QuotaNode, str]]:
        """(the child of ``cohort`` it is under, name) of each ClusterQueue below ``cohort``
        that uses more than its quota on one of ``frs``, through cohorts that do too."""
        usage = self.snap.usage
        got: list[tuple[QuotaNode, str]] = []

        def walk(current: QuotaNode, top: QuotaNode | None) -> None:
            for child in current.children:
                if not _borrowing_on(child, usage, frs):
                    continue
                if child.is_cq:
                    got.append((top or child, child.name))
                else:
                    walk(child, top or child)

        walk(cohort, None)
        return got

    def ordered(self, cq_name: str, frs: frozenset[FR]) -> list[_Held]:
        """Workloads of a queue that use one of ``frs``, in victim order (do not mutate)."""
        return self._ordered_with_lowest(cq_name, frs).held

    def lowest_priority(self, cq_name: str, frs: frozenset[FR]) -> int | None:
        """The lowest priority among :meth:`ordered` (None: there are none)."""
        return self._ordered_with_lowest(cq_name, frs).lowest

    def _ordered_with_lowest(self, cq_name: str, frs: frozenset[FR]) -> _Ordered:
        key = (cq_name, frs)
        version = self.snap.holding_versions.get(cq_name)
        if version is None:  # not tracked by the core: kept for this snapshot only
            got = self._untracked.get(key)
            if got is None:
                got = self._untracked[key] = self._sorted(cq_name, frs)
            return got
        kept = self._kept.ordered.get(key)
        if kept is not None and kept[0] == version:
            return kept[1]
        got = self._sorted(cq_name, frs)
        self._kept.ordered[key] = (version, got)
        return got

    def _sorted(self, cq_name: str, frs: frozenset[FR]) -> _Ordered:
        held = [(victim_order(cq_name, rec, ""), k, rec, cq_name)
                for k, rec in self.snap.holding.get(cq_name, {}).items() if frs.intersection(rec.usage)]
        held.sort(key=_held_order)
        return _Ordered(held, min((h[2].priority for h in held), default=None))

    def lent(self, cohort: QuotaNode, frs: frozenset[FR]) -> _Lent:
        """The workloads of every queue :meth:`borrowing_queues` names, merged in victim
        order, and the child of ``cohort`` each of those queues is under. Every head below
        the cohort that may reclaim reads this one sequence, made as far as the farthest read."""
        key = (cohort, frs)
        got = self._lent.get(key)
        if got is not None:
            return got
        versions = self.snap.holding_versions
        stamp = tuple(versions.get(name, -1) for name in self._kept.queues_under(cohort))
        tracked = -1 not in stamp
        kept = self._kept.lent.get(key) if tracked else None
        if kept is not None and kept[0] == stamp:
            got = kept[1]
        else:
            queues = self.borrowing_queues(cohort, frs)
            tops = {name: top for top, name in queues}
            streams = [self.ordered(name, frs) for _, name in queues]
            merged: Iterable[_Held] = (streams[0] if len(streams) == 1
                                       else heapq.merge(*streams, key=_held_order))
            got = (_Lazy(iter(merged)), tops)
            if tracked:
                self._kept.lent[key] = (stamp, got)
        self._lent[key] = got
        return got


def _levels(cq: ClusterQueueDef, node: QuotaNode, usage: Usage, request: Mapping[FR, int],
            skip_priority: bool) -> tuple[list[_Level], list[_Level]]:
    """The cohorts to take other queues' candidates from: (with the preemptor's advantage,
    by priority); the latter left out with ``skip_priority`` (see ``candidates``)."""
    levels: tuple[list[_Level], list[_Level]] = ([], [])
    if node.parent is None or cq.policy("reclaimWithinCohort") == "Never":
        return levels
    # Walking up, the preemptor gains an "advantage" over everything outside the lowest
    # subtree whose quota can hold its request: those workloads use quota that subtree
    # lends, so they are reclaimed regardless of borrowWithinCohort.
    advantage, remaining = _fits_in_quota(node, usage, request)
    previous: QuotaNode | None = None
    ancestor: QuotaNode | None = node.parent
    while ancestor is not None:
        if advantage or not skip_priority:
            levels[0 if advantage else 1].append((ancestor, previous, advantage))
        fits, remaining = _fits_in_quota(ancestor, usage, remaining)
        advantage = advantage or fits
        previous, ancestor = ancestor, ancestor.parent
    return levels


class ClassicalPreemption:
    """Kueue's classical preemptor as a :class:`~manager.core.hooks.PreemptionHook`."""

    def __init__(self) -> None:
        self.reasons: dict[str, str] = {}  # target key -> preemption reason (latest search)
        self.no_other_queues = True  # facts about the latest candidate list (attempt order)
        self.no_hierarchy = True
        self._memo: _Memo | None = None  # the last snapshot's, replaced when another comes
        self._kept = _Kept()

    def _memo_for(self, snap: Snapshot) -> _Memo:
        if self._memo is None or self._memo.snap is not snap:
            self._memo = _Memo(snap, self._kept)
        return self._memo

    # -- hook ----------------------------------------------------------------------------

    def oracle(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int, priority: int) -> str:
        return self.oracle_level(snapshot, cq, fr, amount, priority)[0]

    def oracle_level(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int,
                     priority: int) -> tuple[str, int]:
        """:meth:`oracle`'s verdict and the borrowing level ``amount`` needs once the found
        victims are gone (Kueue ranks flavors by it)."""
        found = self.search(snapshot, cq.name, priority, float("-inf"), {fr: amount}, frozenset({fr}))
        level = level_after_removal(snapshot, cq.name, fr, amount, (c.record for c in found))
        if not found:
            return NO_CANDIDATES, level
        return (PREEMPT if any(c.cluster_queue == cq.name for c in found) else RECLAIM), level

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
                   ) -> _Lazy[Candidate]:
        """Hierarchy candidates, then priority candidates, then the preemptor's own queue's.

        With ``skip_priority``, priority candidates are left out: :meth:`_search` asks so
        when no attempt could take one (the preemptor already at its nominal quota, and
        ``borrowWithinCohort`` off), as most heads of a full cohort do, and the cohort's
        borrowers are many. The list is made as far as it is read: a search mostly stops
        after a few victims of a cohort holding hundreds."""
        memo = self._memo_for(snap)
        cq = snap.cluster_queues[cq_name]
        node = snap.nodes[cq_name]
        usage = snap.usage
        within = cq.policy("withinClusterQueue")
        own: Iterator[Candidate] = iter(())
        if within != "Never" and _may_allow(within, memo.lowest_priority(cq_name, frs), priority):
            own = (Candidate(key, cq_name, rec, _WITHIN_CQ) for _, key, rec, _ in memo.ordered(cq_name, frs)
                   if policy_allows(within, rec, priority, timestamp))
        levels = _levels(cq, node, usage, request, skip_priority)
        hierarchy, by_priority = (_Lazy(self._others(memo, cq, node, group, priority, timestamp, frs))
                                  for group in levels)
        self.no_hierarchy = not hierarchy
        self.no_other_queues = self.no_hierarchy and not by_priority
        return _Lazy(itertools.chain(hierarchy, by_priority, own))

    def may_find(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int, priority: int) -> bool:
        """False only if :meth:`oracle` certainly answers NO_CANDIDATES, by a bound cheaper
        than the search: no other queue's workload can be a candidate (no cohort level to
        take one from), and the preemptor's own candidates together hold less of ``fr``
        than it lacks. (Freeing x anywhere raises what the queue can take by at most x.)"""
        node = snapshot.nodes[cq.name]
        usage = snapshot.usage
        frs = frozenset((fr,))
        skip_priority = _bwc_forbidden(cq) and _at_nominal(node, usage, frs)
        if any(_levels(cq, node, usage, {fr: amount}, skip_priority)):
            return True
        within = cq.policy("withinClusterQueue")
        own = 0 if within == "Never" else sum(
            rec.usage.get(fr, 0) for rec in snapshot.holding.get(cq.name, {}).values()
            if policy_allows(within, rec, priority, float("-inf")))
        return amount - available(node, usage, fr) <= own

    @staticmethod
    def _others(memo: _Memo, cq: ClusterQueueDef, node: QuotaNode, levels: list[_Level], priority: int,
                timestamp: float, frs: frozenset[FR]) -> Iterator[Candidate]:
        """Candidates of other queues found from ``levels``, merged in victim order."""
        reclaim = cq.policy("reclaimWithinCohort")
        bwc_allowed = not _bwc_forbidden(cq)
        threshold = (cq.preemption.get("borrowWithinCohort") or {}).get("maxPriorityThreshold")

        def variant(rec: WorkloadRecord, advantage: bool) -> int:
            if advantage:
                return _RECLAIM
            if not bwc_allowed or rec.priority >= priority or (
                    threshold is not None and rec.priority > int(threshold)):
                return _WITHOUT_BORROWING
            return _WHILE_BORROWING

        def level(lca: QuotaNode, skip: QuotaNode | None, advantage: bool
                  ) -> Iterator[tuple[VictimOrder, Candidate]]:
            held, tops = memo.lent(lca, frs)
            for order, key, rec, cq_name in held:
                top = tops[cq_name]
                if top is not skip and top is not node and policy_allows(reclaim, rec, priority, timestamp):
                    yield order, Candidate(key, cq_name, rec, variant(rec, advantage), lca.name)

        streams = [level(*lv) for lv in levels]
        merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=_pair_order)
        return (c for _, c in merged)

    def search(self, snap: Snapshot, cq_name: str, priority: int, timestamp: float,
               request: Mapping[FR, int], frs: frozenset[FR]) -> list[Candidate]:
        """The minimal set of candidates whose eviction lets ``request`` fit (empty: none).

        Answers are shared between equal searches of one snapshot: do not mutate."""
        cq = snap.cluster_queues[cq_name]
        memo = self._memo_for(snap)
        key = (cq_name, tuple(sorted(request.items())), frs,
               policy_args(cq.policy("withinClusterQueue"), priority, timestamp),
               policy_args(cq.policy("reclaimWithinCohort"), priority, timestamp))
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
                 cands: Iterable[Candidate], allow_borrowing: bool, topology: TopologyFit | None = None
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
