"""Flavor assignment: pick, per podset and resource group, the flavor a workload uses.

For each podset, each resource group it requests from gets *one* flavor for all the
group's resources. Flavors are scanned in the ClusterQueue's order; each is judged by
the worst mode of its resources (fit, needs preemption, no fit) and flavorFungibility
decides whether to stop at it or keep looking for a better one, as in Kueue v0.19.2:
``whenCanBorrow: MayStopSearch`` (v1beta1 ``Borrow``) stops at a flavor that fits by
borrowing, ``whenCanPreempt: MayStopSearch`` (``Preempt``) at one that fits by preempting
without borrowing; otherwise the best flavor seen wins, earlier flavors winning ties.

"Best" is Kueue's ranking of (preemption mode, borrowing level) pairs: a flavor that needs
preemption but has no candidates ranks below every other usable one; then, by default
(``preference: BorrowingOverPreemption``), the better preemption mode (fit > reclaim >
preempt) wins and the shallower borrowing breaks ties; with ``preference:
PreemptionOverBorrowing`` the shallower borrowing wins and the mode breaks ties. A flavor's
own pair is the worst of its resources' pairs under the same ranking (its output mode stays
the worst mode of its resources, its borrowing the deepest level).

Usage assigned to earlier podsets of the same workload counts against later ones.

An elastic job's scaled-up slice keeps the flavors of the slice it replaces (``pinned``):
its running pods stay where they are, and the new ones join them.

A resource no resource group of the ClusterQueue covers keeps the pod set out (NoFit, "resource
X unavailable in ClusterQueue"), unless it is requested at 0 or the Configuration's
quotaCheckStrategy is IgnoreUndeclared: then, as in Kueue v0.19.2, it is skipped, getting no
flavor and counting for no quota.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .assignment import Assignment, Mode, PodSetAssignment
from .hooks import NO_CANDIDATES, PREEMPT, PreemptionHook
from .matching import selector_matches, untolerated_taint
from .objects import FR, ClusterQueueDef, PodSet, WorkloadDef
from .quota import QuotaNode, available, borrowing_level, potential_available
from .reasons import FlavorVerdict, Miss, PodSetMiss
from .snapshot import Snapshot
from .tas_hook import tas_only

PODS = "pods"
Oracle = Callable[[Snapshot, ClusterQueueDef, FR, int, int], str]  # PreemptionHook.oracle
TRY_NEXT = "TryNextFlavor"
PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"
Rank = tuple[Mode, int]  # (mode, borrowing level), Kueue's granularMode
_WORST: Rank = (Mode.NO_FIT, 1 << 62)


def is_preferred(a: Rank, b: Rank, preference: str = "") -> bool:
    """Whether ``a`` ranks better than ``b`` under the ClusterQueue's fungibility
    ``preference`` (Kueue's isPreferred): NoFit is worst, a pair without preemption
    candidates comes below every usable one, then mode before level by default, level
    before mode with PreemptionOverBorrowing (a shallower level is better)."""
    (a_mode, a_level), (b_mode, b_level) = a, b
    if a_mode == Mode.NO_FIT:
        return False
    if b_mode == Mode.NO_FIT:
        return True
    a_none, b_none = a_mode == Mode.NO_CANDIDATES, b_mode == Mode.NO_CANDIDATES
    if a_none != b_none:
        return b_none
    if preference == PREEMPTION_OVER_BORROWING:
        if a_level != b_level:
            return a_level < b_level
        return a_mode > b_mode
    if a_mode != b_mode:
        return a_mode > b_mode
    return a_level < b_level


def should_try_next_flavor(rank: Rank, cq: ClusterQueueDef) -> bool:
    """Whether flavorFungibility sends the search on past a flavor ranked ``rank``."""
    mode, level = rank
    if mode in (Mode.NO_FIT, Mode.NO_CANDIDATES):
        return True
    if mode in (Mode.PREEMPT, Mode.RECLAIM) and cq.when_can_preempt == TRY_NEXT:
        return True
    return level > 0 and cq.when_can_borrow == TRY_NEXT


def _podset_requests(ps: PodSet, count: int, cq: ClusterQueueDef) -> dict[str, int]:
    total = {r: v * count for r, v in ps.requests.items()}
    if any(PODS in g.covered for g in cq.groups):
        total[PODS] = count
    return total


def _has_quota(node: QuotaNode, fr: FR) -> bool:
    """The queue, or its subtree, has quota for ``fr`` at all."""
    return fr in node.quotas or bool(node.subtree.get(fr))


def _has_level(snap: Snapshot, topology: str | None, request: Mapping[str, Any]) -> bool:
    """The flavor's topology has the required/preferred level (unknown topologies pass)."""
    levels = snap.topology_levels.get(topology or "")
    key = request.get("required") or request.get("preferred")
    return levels is None or not key or key in levels


class FlavorAssigner:
    def __init__(self, snap: Snapshot, preemption: PreemptionHook, ignore_undeclared: bool = False) -> None:
        """``ignore_undeclared``: Kueue's quotaCheckStrategy IgnoreUndeclared. A resource no
        resource group of the ClusterQueue covers is then skipped, as one requested at 0
        always is: it gets no flavor and counts for no quota (``status.admission`` shows
        neither). Otherwise (BlockUndeclared) a non-zero request of it is a NoFit."""
        self.snap = snap
        self.preemption = preemption
        self.ignore_undeclared = ignore_undeclared
        self._tas_only: dict[str, bool] = {}  # per ClusterQueue, over this snapshot's flavors

    def _implies_topology(self, cq: ClusterQueueDef) -> bool:
        got = self._tas_only.get(cq.name)
        if got is None:
            got = self._tas_only[cq.name] = tas_only(cq, self.snap.flavors)
        return got

    def _preempts_while_borrowing(self, cq: ClusterQueueDef) -> bool:
        """borrowWithinCohort allows it; a hook may say otherwise (fair sharing: reclaim policy)."""
        hook = getattr(self.preemption, "can_preempt_while_borrowing", None)
        if hook is not None:
            return bool(hook(cq))
        return (cq.preemption.get("borrowWithinCohort") or {}).get("policy", "Never") not in ("", "Never")

    def _resource_mode(self, cq: ClusterQueueDef, node: QuotaNode, fr: FR, val: int, priority: int,
                       oracle: Oracle | None = None) -> tuple[Mode, int, FlavorVerdict | None]:
        """How ``val`` of ``fr`` fits the queue; ``oracle`` (default the hook's) says whether
        preemption could make room."""
        usage = self.snap.usage
        cap = potential_available(node, fr)
        if val > cap:
            return Mode.NO_FIT, 0, FlavorVerdict(Miss.OVER_CAPACITY, fr[0], fr[1], val, cap)
        level, may_reclaim = borrowing_level(node, usage, fr, val)
        avail = available(node, usage, fr)
        if val <= avail:
            return Mode.FIT, level, None
        msg = FlavorVerdict(Miss.INSUFFICIENT_QUOTA, fr[0], fr[1], val, max(avail, 0))
        if val <= node.quota(fr).nominal or may_reclaim or self._preempts_while_borrowing(cq):
            with_level = getattr(self.preemption, "oracle_level", None)
            if oracle is None and with_level is not None:
                # As Kueue, the level is the one left once the victims are gone.
                verdict, level = with_level(self.snap, cq, fr, val, priority)
            else:
                verdict = (oracle or self.preemption.oracle)(self.snap, cq, fr, val, priority)
            if verdict == NO_CANDIDATES:
                return Mode.NO_CANDIDATES, level, msg
            return (Mode.PREEMPT if verdict == PREEMPT else Mode.RECLAIM), level, msg
        return Mode.NO_FIT, level, msg

    def cannot_fit(self, wl: WorkloadDef, cq: ClusterQueueDef, priority: int) -> bool:
        """True only if :meth:`assign` certainly finds no usable assignment for ``wl`` (one of
        its pod sets has a resource group none of whose flavors has the quota, even by
        preemption), judged on quota alone with the hook's cheap bound (``may_find``) in
        place of its oracle. False when unsure: a hook without the bound, partial admission
        (fewer pods may fit), or a resource no group covers."""
        may_find = getattr(self.preemption, "may_find", None)
        if may_find is None or any(ps.min_count is not None for ps in wl.podsets):
            return False

        def bound(snap: Snapshot, cq: ClusterQueueDef, fr: FR, val: int, priority: int) -> str:
            return PREEMPT if may_find(snap, cq, fr, val, priority) else NO_CANDIDATES

        node = self.snap.nodes[cq.name]
        for ps in wl.podsets:
            # Alone, a pod set asks for no more than it does after the ones before it.
            requests = _podset_requests(ps, ps.count, cq)
            for group in cq.groups:
                wanted = [r for r in group.covered if r in requests]
                if wanted and all(self._flavor_cannot_fit(cq, node, f, wanted, requests, priority, bound)
                                  for f in group.flavors):
                    return True
        return False

    def _flavor_cannot_fit(self, cq: ClusterQueueDef, node: QuotaNode, fname: str, wanted: list[str],
                           requests: dict[str, int], priority: int, oracle: Oracle) -> bool:
        if fname not in self.snap.flavors:
            return True
        for r in wanted:
            fr = (fname, r)
            if not _has_quota(node, fr):
                return True
            if self._resource_mode(cq, node, fr, requests[r], priority, oracle)[0] <= Mode.NO_CANDIDATES:
                return True
        return False

    def assign(self, wl: WorkloadDef, cq: ClusterQueueDef, priority: int,
               counts: list[int] | None = None,
               pinned: Mapping[str, Mapping[str, str]] | None = None,
               resume: Sequence[Mapping[str, int]] | None = None) -> Assignment:
        """``pinned``: podset -> resource -> the only flavor it may get. ``resume``: an
        earlier scan's progress (``Assignment.tried``): each group's scan starts after the
        flavor it stopped at, as Kueue's does (NextFlavorToTryForPodSetResource)."""
        node = self.snap.nodes[cq.name]
        podsets: list[PodSetAssignment] = []
        total: dict[FR, int] = {}
        borrowing = 0
        worst = Mode.FIT
        preempt_frs: set[FR] = set()
        misses: list[PodSetMiss] = []
        tried: list[dict[str, int]] = []
        failed = False
        for i, ps in enumerate(wl.podsets):
            count = ps.count if counts is None else counts[i]
            requests = _podset_requests(ps, count, cq)
            psa = PodSetAssignment(ps.name, count, {}, requests)
            ps_tried: dict[str, int] = {}
            ps_resume = resume[i] if resume is not None and i < len(resume) else {}
            for res, value in requests.items():
                if any(res in g.covered for g in cq.groups):
                    continue
                if value == 0 or self.ignore_undeclared:
                    continue  # an undeclared resource Kueue skips: no flavor, no quota
                psa.mode = Mode.NO_FIT
                psa.reasons.append(FlavorVerdict(Miss.RESOURCE_UNAVAILABLE, resource=res))
            if psa.mode != Mode.NO_FIT:
                for gi, group in enumerate(cq.groups):
                    wanted = [r for r in group.covered if r in requests]
                    if not wanted:
                        continue
                    start = ps_resume.get(wanted[0], -1) + 1
                    chosen, last = self._choose(cq, node, group.flavors, ps, wanted, requests, total,
                                                priority, psa, gi, (pinned or {}).get(ps.name), start)
                    if chosen is None:
                        psa.mode = Mode.NO_FIT
                        break
                    for r in wanted:
                        ps_tried[r] = -1 if last == len(group.flavors) - 1 else last
                    fname, mode, level, frs = chosen
                    for r in wanted:
                        psa.flavors[r] = fname
                        total[(fname, r)] = total.get((fname, r), 0) + requests[r]
                    psa.mode = min(psa.mode, mode)
                    borrowing = max(borrowing, level)
                    if mode.needs_preemption:
                        preempt_frs.update(frs)
            if psa.mode != Mode.NO_FIT:
                self._one_tas_flavor(psa)
            if not failed:  # Kueue stops at the first pod set without flavors
                failed = psa.mode == Mode.NO_FIT
                tried.append({} if failed else ps_tried)
            worst = min(worst, psa.mode)
            if psa.mode != Mode.FIT and psa.reasons:
                misses.append(PodSetMiss(ps.name, tuple(psa.reasons), no_fit=psa.mode == Mode.NO_FIT))
            podsets.append(psa)
        return Assignment(podsets, worst, borrowing, total, tuple(misses), frozenset(preempt_frs),
                          tried=tuple(tried))

    def _one_tas_flavor(self, psa: PodSetAssignment) -> None:
        """A pod set is placed on one topology: resource groups that gave it two TAS flavors
        leave it without a fit (Kueue v0.19's MultipleTASFlavorsAssignedError)."""
        tas = sorted({name for name in psa.flavors.values()
                      if (f := self.snap.flavors.get(name)) is not None and f.topology_name})
        if len(tas) > 1:
            psa.mode = Mode.NO_FIT
            psa.reasons.append(FlavorVerdict(Miss.TOPOLOGY, tas[0],
                                             detail="more than one TAS flavor assigned: " + ", ".join(tas)))

    def _choose(self, cq: ClusterQueueDef, node: QuotaNode, flavors: tuple[str, ...], ps: PodSet,
                wanted: list[str], requests: dict[str, int], assigned: dict[FR, int], priority: int,
                psa: PodSetAssignment, group: int = 0,
                pin: Mapping[str, str] | None = None,
                start: int = 0) -> tuple[tuple[str, Mode, int, list[FR]] | None, int]:
        """The flavor for the group (None: none usable) and the index of the last flavor looked
        at; the scan starts at ``start``."""
        best: tuple[str, Mode, int, list[FR]] | None = None
        best_rank = _WORST
        reasons: list[FlavorVerdict] = []
        last = -1
        for idx in range(start, len(flavors)):
            fname = flavors[idx]
            last = idx
            flavor = self.snap.flavors.get(fname)
            if flavor is None:
                reasons.append(FlavorVerdict(Miss.FLAVOR_NOT_FOUND, fname))
                continue
            held = next((pin[r] for r in wanted if pin and pin.get(r, fname) != fname), None)
            if held is not None:
                reasons.append(FlavorVerdict(Miss.SLICE_FLAVOR, fname, detail=held))
                continue
            # Kueue v0.19: a plain flavor may still give a TAS pod set quota-only resources
            # (ones its pod spec does not request, made by resource transformations); the
            # pod set's TAS flavor places the pods.
            quota_only = (bool(ps.topology_request) and not flavor.topology_name
                          and not set(cq.groups[group].covered) & ps.spec_resources())
            if ps.topology_request and not flavor.topology_name and not quota_only:
                reasons.append(FlavorVerdict(Miss.NO_TOPOLOGY_SUPPORT, fname))
                continue
            if ps.topology_request and not quota_only \
                    and not _has_level(self.snap, flavor.topology_name, ps.topology_request):
                # Kueue moves on to a flavor whose topology has the requested level.
                reasons.append(FlavorVerdict(Miss.NO_TOPOLOGY_LEVEL, fname))
                continue
            if flavor.topology_name and not ps.topology_request and not self._implies_topology(cq):
                # Outside a TAS-only queue a PodSet without a topology request may not take a
                # TAS flavor, so the search moves on to the next (plain) flavor, as Kueue does.
                reasons.append(FlavorVerdict(Miss.TOPOLOGY_ONLY, fname))
                continue
            taint = untolerated_taint(ps, flavor)
            if taint is not None:
                reasons.append(FlavorVerdict(Miss.UNTOLERATED_TAINT, fname, detail=(
                    f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}")))
                continue
            # Kueue v0.19 matches the pod's selector and affinity against this flavor's own
            # label keys only (v0.12 used the keys of every flavor in the group).
            if not selector_matches(ps, flavor, frozenset(flavor.node_labels)):
                reasons.append(FlavorVerdict(Miss.NODE_AFFINITY, fname))
                continue
            mode, level = Mode.FIT, 0
            rank: Rank = (Mode.FIT, 0)
            frs: list[FR] = []
            first = len(reasons)
            for r in wanted:
                fr = (fname, r)
                if not _has_quota(node, fr):
                    mode, rank = Mode.NO_FIT, _WORST
                    reasons.append(FlavorVerdict(Miss.NO_QUOTA, fname, r))
                    break
                val = requests[r] + assigned.get(fr, 0)
                rmode, rlevel, verdict = self._resource_mode(cq, node, fr, val, priority)
                if verdict is not None:
                    reasons.append(verdict)
                if rmode.needs_preemption:
                    frs.append(fr)
                mode, level = min(mode, rmode), max(level, rlevel)
                if is_preferred(rank, (rmode, rlevel), cq.fungibility_preference):
                    rank = (rmode, rlevel)
                if rank[0] == Mode.NO_FIT:
                    break
            if mode != Mode.NO_FIT:  # its quota verdicts do not rule it out (tiers)
                reasons[first:] = [replace(v, blocking=False) for v in reasons[first:]]
            candidate = (fname, mode, level, frs)
            if not should_try_next_flavor(rank, cq):
                return candidate, last
            if is_preferred(rank, best_rank, cq.fungibility_preference):
                best, best_rank = candidate, rank
        psa.reasons.extend(replace(v, group=group) for v in reasons)
        return best, last
