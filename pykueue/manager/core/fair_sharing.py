"""Fair sharing: dominant resource shares, the admission tournament and fair preemption.

With the Configuration's ``fairSharing`` set, ClusterQueues of a cohort tree compete by
their *dominant resource share* (DRS). For a node with a parent: per resource, what it
uses above its subtree quota, in thousandths of what its parent could lend (summed over
flavors), the largest such ratio, divided by the node's ``spec.fairSharing.weight``
(default 1). A node with weight 0 that borrows ranks above every other node, and among
such nodes the unweighted ratio decides: :class:`Share` encodes that as a sortable pair.

* Admission (:func:`tournament`): heads are not sorted once; after every admission the
  next head is picked again, because admitting changes the shares. In each cohort the
  winners of the child cohorts and the heads of the child ClusterQueues meet, and the
  one whose share *after admission* at that level (the share of the cohort's child on
  its path) is lowest wins; before the share, a child that with its candidate admitted
  does not borrow on any flavor-resource the candidate requests goes first (Kueue's
  FairSharingPrioritizeNonBorrowing, on by default); after it, higher priority, then
  earlier queue order.
* Preemption (:class:`FairSharingPreemption`): candidates are the preemptor's own queue
  (``withinClusterQueue``) and every borrowing queue of the tree (``reclaimWithinCohort``);
  the preemptor's request is counted in the shares while searching. The target queue is
  found by descending from the root into the child with the highest share; a victim in
  another queue is taken only when the strategy holds between the children of the lowest
  common ancestor (``LessThanOrEqualToFinalShare``: preemptor's share with its request <=
  the target's share without the victim; ``LessThanInitialShare``: < the target's share
  now); a second strategy revisits the queues whose candidates failed the first. A
  preemptor that stays within its nominal quota reclaims from borrowers without a share
  check. The victims found are filled back as in classical preemption;
  ``borrowWithinCohort`` is ignored.

Quota is read from the snapshot; all simulated changes live in usage overlays.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykueue.api.quantity import QuantityError, parse_quantity

from .assignment import Entry
from .hooks import NO_CANDIDATES, PREEMPT, RECLAIM
from .objects import FR, ClusterQueueDef
from .preemption.classical import PolicyArgs, VictimOrder, policy_allows, policy_args, victim_order
from .quota import QuotaNode, Usage, available, potential_available
from .snapshot import Snapshot, level_after_removal
from .workload_state import WorkloadRecord

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAMATION = "InCohortReclamation"

Share = tuple[int, float]
"""(1, unweighted ratio) for a weight-0 borrower, else (0, weighted ratio): compares as Kueue's DRS."""
NEGATIVE: Share = (0, -1.0)


def weight_key(node: QuotaNode) -> str:
    """How a node's weight is keyed in :attr:`Snapshot.weights`."""
    return f"{'ClusterQueue' if node.is_cq else 'Cohort'}/{node.name}"


class WeightError(ValueError):
    pass


def parse_weight(value: object) -> float:
    """``spec.fairSharing.weight``: a quantity such as ``2``, ``0.5`` or ``500m`` (default 1)."""
    if value is None:
        return 1.0
    try:
        weight = parse_quantity(value).nano / 1e9
    except (QuantityError, ValueError, TypeError) as exc:
        raise WeightError(f"invalid fairSharing weight {value!r}") from exc
    if weight < 0:
        raise WeightError(f"invalid fairSharing weight {value!r}: negative")
    return weight


class Shares:
    """DRS arithmetic over one snapshot's tree; remembers what each parent can lend."""

    def __init__(self, weights: Mapping[str, float]) -> None:
        self.weights = weights
        self._lendable: dict[int, dict[str, int]] = {}

    def lendable(self, parent: QuotaNode) -> dict[str, int]:
        got = self._lendable.get(id(parent))
        if got is None:
            got = {}
            for fr in parent.root().subtree:
                got[fr[1]] = got.get(fr[1], 0) + potential_available(parent, fr)
            self._lendable[id(parent)] = got
        return got

    def drs(self, node: QuotaNode, usage: Usage, extra: Mapping[FR, int] | None = None) -> tuple[Share, bool]:
        """The node's share and whether it borrows at all (a borrower may still have share 0)."""
        parent = node.parent
        if parent is None:
            return (0, 0.0), False
        used = usage.of(node)
        borrowed: dict[str, int] = {}
        for fr, quota in node.subtree.items():
            over = used.get(fr, 0) + (extra.get(fr, 0) if extra else 0) - quota
            if over > 0:
                borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
        if not borrowed:
            return (0, 0.0), False
        lendable = self.lendable(parent)
        ratio = 0.0
        for res, b in borrowed.items():
            lr = lendable.get(res, 0)
            if lr > 0:
                ratio = max(ratio, b * 1000 / lr)
        weight = self.weights.get(weight_key(node), 1.0)
        if weight == 0 and ratio > 0:
            return (1, ratio), True
        return (0, ratio / weight if weight else 0.0), True

    def share(self, node: QuotaNode, usage: Usage, extra: Mapping[FR, int] | None = None) -> Share:
        return self.drs(node, usage, extra)[0]


def dominant_share(node: QuotaNode, usage: Usage, weights: Mapping[str, float],
                   extra: Mapping[FR, int] | None = None) -> float:
    """The weighted dominant resource share of ``node`` as a number (inf: weight 0 and borrowing)."""
    kind, value = Shares(weights).share(node, usage, extra)
    return float("inf") if kind else value


def _ancestors(node: QuotaNode) -> list[QuotaNode]:
    out: list[QuotaNode] = []
    n = node.parent
    while n is not None:
        out.append(n)
        n = n.parent
    return out


# -- admission order -----------------------------------------------------------------------


def tournament(entries: Sequence[Entry], snap: Snapshot, usage: Usage) -> Iterator[Entry]:
    """Yield ``entries`` in fair-sharing order, re-deciding after each one on ``usage``.

    ``usage`` is the cycle's live view: the caller adds an admitted entry's usage to it
    before asking for the next entry, so shares reflect this cycle's admissions. The
    caller may change ``usage`` only on the ClusterQueue of the entry last yielded (which
    :meth:`Usage.add` propagates to its ancestors): the order is maintained incrementally
    on that assumption.

    The entry first in ``entries`` order that is still left decides which tree plays
    next; an entry outside any cohort, or without an assignment, is yielded as is when
    it comes first.
    """
    shares = Shares(snap.weights)
    nodes = [snap.nodes.get(e.cluster_queue) for e in entries]
    members: dict[int, list[int]] = {}  # id(root) -> indices of the entries competing in it
    for i, (e, n) in enumerate(zip(entries, nodes, strict=True)):
        if n is not None and n.parent is not None and e.assignment is not None:
            members.setdefault(id(n.root()), []).append(i)
    trees: dict[int, _Tree] = {}
    done = [False] * len(entries)
    pos = 0
    while pos < len(entries):
        if done[pos]:
            pos += 1
            continue
        first, node = entries[pos], nodes[pos]
        if node is None or node.parent is None or first.assignment is None:
            done[pos] = True
            yield first
            continue
        root_id = id(node.root())
        tree = trees.get(root_id)
        if tree is None:
            # Built when the tree first plays, on the usage of that moment.
            tree = trees[root_id] = _Tree(entries, nodes, members[root_id], shares, usage)
        winner = tree.pop_winner()
        done[winner] = True
        yield entries[winner]


_Key = tuple[bool, bool, Share, int, float, str]
_Slot = tuple[_Key, int, int, int]  # key, version, id(child), entry index


class _Tree:
    """The tournament of one cohort tree, kept up to date between admissions.

    Every cohort keeps a heap of its children's candidates (a child ClusterQueue's
    first entry, a child cohort's winner) keyed as :func:`_key` orders them at that
    cohort. A candidate's key at a cohort depends only on the usage of the nodes from
    its ClusterQueue up to that cohort's child, so an admission, which changes the
    usage on the admitted queue's path only, leaves every key off that path valid:
    only the path's cohorts are refreshed, one child each. Replaced heap slots are
    dropped lazily by their version.
    """

    def __init__(self, entries: Sequence[Entry], nodes: Sequence[QuotaNode | None], indices: Sequence[int],
                 shares: Shares, usage: Usage) -> None:
        self.entries, self.shares, self.usage = entries, shares, usage
        self.queues: dict[int, list[int]] = {}  # id(ClusterQueue) -> its entries, reversed (pop from the end)
        self.cq_of: dict[int, QuotaNode] = {}  # entry index -> its ClusterQueue node
        self.heaps: dict[int, list[_Slot]] = {}  # id(cohort) -> children's candidates
        self.versions: dict[int, int] = {}  # id(child) -> version of its current slot in its parent's heap
        self.dirty: QuotaNode | None = None  # ClusterQueue of the last winner, refreshed on the next pick
        order: list[QuotaNode] = []  # nodes, children before parents
        seen: set[int] = set()
        for i in indices:
            cq = nodes[i]
            assert cq is not None
            self.cq_of[i] = cq
            self.queues.setdefault(id(cq), []).append(i)
            n: QuotaNode | None = cq
            chain: list[QuotaNode] = []
            while n is not None and id(n) not in seen:
                seen.add(id(n))
                chain.append(n)
                n = n.parent
            order.extend(reversed(chain))
        for q in self.queues.values():
            q.reverse()
        # Parents were appended before their children; build bottom-up.
        for n in reversed(order):
            if n.parent is not None:
                self.heaps.setdefault(id(n.parent), [])
                self._offer(n)
        self.root = order[0].root()

    def _candidate(self, n: QuotaNode) -> int | None:
        """The entry ``n`` sends up: its first entry (a queue) or its winner (a cohort)."""
        if n.is_cq:
            q = self.queues.get(id(n))
            return q[-1] if q else None
        heap = self.heaps.get(id(n))
        while heap:
            _, version, child, index = heap[0]
            if self.versions[child] == version:
                return index
            heapq.heappop(heap)
        return None

    def _offer(self, child: QuotaNode) -> None:
        """(Re)place ``child``'s candidate in its parent's heap, keyed on the current usage."""
        parent = child.parent
        assert parent is not None
        version = self.versions.get(id(child), -1) + 1
        self.versions[id(child)] = version
        index = self._candidate(child)
        if index is not None:
            borrows, share = self._value(index, parent)
            key = _key(self.entries[index], borrows, share)
            heapq.heappush(self.heaps[id(parent)], (key, version, id(child), index))

    def _value(self, index: int, cohort: QuotaNode) -> tuple[bool, Share]:
        """For the child of ``cohort`` on the entry's path, with the entry admitted: whether
        it borrows on a flavor-resource the entry requests, and its share."""
        cq = self.cq_of[index]
        a = self.entries[index].assignment
        assert a is not None
        view = self.usage.overlay()
        view.add_all(cq, a.usage)
        n = cq
        while n.parent is not cohort:
            assert n.parent is not None
            n = n.parent
        return borrows_on(n, view, a.usage), self.shares.share(n, view)

    def pop_winner(self) -> int:
        if self.dirty is not None:
            n = self.dirty
            while n.parent is not None:
                self._offer(n)
                n = n.parent
            self.dirty = None
        winner = self._candidate(self.root)
        assert winner is not None, "the entry that called the tree plays in it"
        cq = self.cq_of[winner]
        self.queues[id(cq)].pop()
        self.dirty = cq
        return winner


def borrows_on(node: QuotaNode, usage: Usage, requested: Mapping[FR, int]) -> bool:
    """Whether ``node`` uses more than its subtree quota of a flavor-resource in ``requested``.

    Borrowing on a flavor the entry does not ask for does not count: a subtree that borrows
    spot should not lose its turn for an on-demand request it covers itself."""
    return any(amount > 0 and fr in node.subtree and usage.get(node, fr) > node.subtree[fr]
               for fr, amount in requested.items())


def _key(e: Entry, borrows: bool, share: Share) -> _Key:
    """Order at one cohort: a preemptor waiting for its victims (only under Kueue's
    PrioritizePreemptorWorkloads, see ``Entry.preempting``), not borrowing on what it
    requests, lower share, higher priority, queue order; the workload key only breaks exact
    ties (Kueue leaves those to map order)."""
    return (not e.preempting, borrows, share, -e.priority, e.timestamp, e.workload.key)


# -- preemption ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    key: str
    cluster_queue: str
    record: WorkloadRecord


def _order(c: _Candidate, own: str) -> VictimOrder:
    return victim_order(c.cluster_queue, c.record, own)


def _almost_lcas(own: QuotaNode, target: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
    """The children of the lowest common ancestor on the paths to ``own`` and ``target``."""
    own_anc = {id(a) for a in _ancestors(own)}
    lca: QuotaNode | None = None
    for anc in _ancestors(target):
        if id(anc) in own_anc:
            lca = anc
            break
    assert lca is not None, "nodes of one tree share a root"

    def below(n: QuotaNode) -> QuotaNode:
        while n.parent is not lca:
            assert n.parent is not None
            n = n.parent
        return n

    return below(own), below(target)


class _Memo:
    """What the searches of one snapshot share, computed at most once per snapshot.

    A snapshot does not change while its cycle runs, and every ClusterQueue's head is
    searched for (often twice: the flavor assigner's oracle, then the targets) against
    it, so the shares of the nodes a search does not touch, the borrowing queues of a
    tree and their ordered victims are the same for all of them.
    """

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.shares = Shares(snap.weights)
        self._drs: dict[int, tuple[Share, bool]] = {}
        self._cqs: dict[int, list[QuotaNode]] = {}
        self._victims: dict[tuple[str, frozenset[FR], str, PolicyArgs], list[_Candidate]] = {}
        self._reclaimable: dict[tuple[int, frozenset[FR], str, PolicyArgs], dict[str, list[_Candidate]]] = {}
        # FairSharingPreemption.search's answers (do not mutate).
        self.found: dict[tuple[str, frozenset[FR], tuple[tuple[FR, int], ...], PolicyArgs, PolicyArgs],
                         list[tuple[_Candidate, str]]] = {}

    def drs(self, node: QuotaNode) -> tuple[Share, bool]:
        """:meth:`Shares.drs` on the snapshot's usage."""
        got = self._drs.get(id(node))
        if got is None:
            got = self._drs[id(node)] = self.shares.drs(node, self.snap.usage)
        return got

    def victims(self, cq_name: str, frs: frozenset[FR], policy: str, priority: int,
                timestamp: float) -> list[_Candidate]:
        """The workloads of a queue that ``policy`` lets the preemptor take, in :func:`_order`.

        Shared between searches: copy before consuming."""
        key = (cq_name, frs, policy, policy_args(policy, priority, timestamp))
        got = self._victims.get(key)
        if got is None:
            got = [_Candidate(k, cq_name, rec) for k, rec in self.snap.holding.get(cq_name, {}).items()
                   if frs.intersection(rec.usage) and policy_allows(policy, rec, priority, timestamp)]
            # All of one queue: _order's first element is the same for every candidate.
            got.sort(key=lambda c: _order(c, cq_name))
            self._victims[key] = got
        return got

    def reclaimable(self, root: QuotaNode, frs: frozenset[FR], policy: str, priority: int,
                    timestamp: float) -> dict[str, list[_Candidate]]:
        """Per queue of the tree borrowing on a contested resource, its victims (non-empty lists only).

        Shared between searches: copy before consuming."""
        key = (id(root), frs, policy, policy_args(policy, priority, timestamp))
        got = self._reclaimable.get(key)
        if got is None:
            got = {}
            usage = self.snap.usage
            for n in self._tree_cqs(root):
                if any(usage.get(n, fr) > n.subtree.get(fr, 0) for fr in frs):
                    lst = self.victims(n.name, frs, policy, priority, timestamp)
                    if lst:
                        got[n.name] = lst
            self._reclaimable[key] = got
        return got

    def _tree_cqs(self, root: QuotaNode) -> list[QuotaNode]:
        got = self._cqs.get(id(root))
        if got is None:
            got = self._cqs[id(root)] = root.cluster_queues()
        return got


class _Search:
    """One fair-preemption search: the simulated usage and the target queue ordering."""

    def __init__(self, memo: _Memo, own: QuotaNode, request: Mapping[FR, int]) -> None:
        self.memo, self.snap, self.own, self.request, self.shares = memo, memo.snap, own, request, memo.shares
        self.usage = self.snap.usage.overlay()
        self.usage.add_all(own, request)  # shares are computed with the incoming workload
        # Shares on self.usage, per node. A node off every path the search changed usage
        # on (the preemptor's, the removed victims') has the snapshot's share.
        self._drs: dict[int, tuple[Share, bool]] = {}
        self._touched: set[int] = set()
        self._touch(own)

    def _touch(self, node: QuotaNode) -> None:
        n: QuotaNode | None = node
        while n is not None:
            self._touched.add(id(n))
            self._drs.pop(id(n), None)
            n = n.parent

    def drs(self, node: QuotaNode) -> tuple[Share, bool]:
        got = self._drs.get(id(node))
        if got is None:
            got = self.shares.drs(node, self.usage) if id(node) in self._touched else self.memo.drs(node)
            self._drs[id(node)] = got
        return got

    def share(self, node: QuotaNode) -> Share:
        return self.drs(node)[0]

    def fits(self) -> bool:
        view = self.usage.overlay()
        view.add_all(self.own, self.request, sign=-1)
        return all(available(self.own, view, fr) >= v for fr, v in self.request.items() if v)

    def remove(self, c: _Candidate) -> None:
        node = self.snap.nodes[c.cluster_queue]
        self.usage.add_all(node, c.record.usage, sign=-1)
        self._touch(node)

    def targets(self, lists: dict[str, list[_Candidate]]) -> Iterator[QuotaNode]:
        """Target queues, highest share first, re-decided every time one is asked for.

        In each cohort the child queue with the highest share wins (ties: the better
        first candidate, then the name), and the child cohort with the highest share
        (ties: the last name) is descended into when its share is at least the queue's.
        A queue takes part while it has candidates and borrows (the preemptor's own
        queue need not borrow); a cohort while it has a queue taking part below it and
        borrows or is above the preemptor. Between two targets the caller changes only
        the last target's list and the usage on its path, so only the keys along that
        path are refreshed (heaps with stale slots dropped by version).
        """
        own = self.own
        if own.parent is None:
            while lists.get(own.name):
                yield own
            return
        path = {id(a) for a in _ancestors(own)}
        root = own.root()
        # Only queues with candidates, and the cohorts above them, can ever be chosen.
        kids: dict[int, list[QuotaNode]] = {}
        seen: set[int] = set()
        for name, lst in lists.items():
            if not lst:
                continue
            n: QuotaNode | None = self.snap.nodes[name]
            while n is not None and n.parent is not None and id(n) not in seen:
                seen.add(id(n))
                kids.setdefault(id(n.parent), []).append(n)
                n = n.parent
        rank: dict[int, int] = {}  # id(cohort) -> its place among its siblings by name
        for siblings in kids.values():
            siblings.sort(key=lambda c: c.name)
            for i, c in enumerate(siblings):
                rank[id(c)] = i
        cq_heaps: dict[int, list[tuple[tuple[Share, VictimOrder, str], int, QuotaNode]]] = {}
        co_heaps: dict[int, list[tuple[tuple[Share, int], int, QuotaNode]]] = {}
        versions: dict[int, int] = {}

        def top(heap: list[tuple[Any, int, QuotaNode]] | None) -> QuotaNode | None:
            """The heap's best current node; items of older versions are dropped."""
            while heap:
                _, version, n = heap[0]
                if versions[id(n)] == version:
                    return n
                heapq.heappop(heap)
            return None

        def best(cohort: QuotaNode) -> QuotaNode | None:
            cq = top(cq_heaps.get(id(cohort)))
            co = top(co_heaps.get(id(cohort)))
            if co is not None and (cq is None or self.share(co) >= self.share(cq)):
                return best(co)
            return cq

        def place(n: QuotaNode) -> None:
            """(Re)place ``n`` in its parent's heap by its current state."""
            parent = n.parent
            assert parent is not None
            version = versions.get(id(n), -1) + 1
            versions[id(n)] = version
            share, borrowing = self.drs(n)
            neg: Share = (-share[0], -share[1])  # highest share first
            if n.is_cq:
                lst = lists.get(n.name)
                if lst and (borrowing or n is own):
                    heapq.heappush(cq_heaps.setdefault(id(parent), []),
                                   ((neg, _order(lst[0], own.name), n.name), version, n))
            elif (borrowing or id(n) in path) and best(n) is not None:
                heapq.heappush(co_heaps.setdefault(id(parent), []), ((neg, -rank[id(n)]), version, n))

        def build(cohort: QuotaNode) -> None:
            for child in kids.get(id(cohort), ()):
                if not child.is_cq:
                    build(child)
                place(child)

        build(root)
        while True:
            target = best(root)
            if target is None:
                return
            yield target
            n = target
            while n.parent is not None:
                place(n)
                n = n.parent

    def drop(self, lists: dict[str, list[_Candidate]], name: str) -> None:
        lists[name] = []


class FairSharingPreemption:
    """Preemption under fair sharing, as a :class:`~manager.core.hooks.PreemptionHook`."""

    def __init__(self, strategies: Sequence[str] = DEFAULT_STRATEGIES) -> None:
        for s in strategies:
            if s not in (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE):
                raise ValueError(f"unknown fair sharing preemption strategy {s!r}")
        self.strategies = tuple(strategies) or DEFAULT_STRATEGIES
        self.reasons: dict[str, str] = {}
        self._memo: _Memo | None = None  # the last snapshot's, replaced when another comes

    @staticmethod
    def can_preempt_while_borrowing(cq: ClusterQueueDef) -> bool:
        """With fair sharing, reclaiming is allowed while borrowing (borrowWithinCohort is ignored)."""
        return cq.policy("reclaimWithinCohort") != "Never"

    def oracle(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int, priority: int) -> str:
        return self.oracle_level(snapshot, cq, fr, amount, priority)[0]

    def oracle_level(self, snapshot: Snapshot, cq: ClusterQueueDef, fr: FR, amount: int,
                     priority: int) -> tuple[str, int]:
        """:meth:`oracle`'s verdict and the borrowing level ``amount`` needs once the found
        victims are gone."""
        found = self.search(snapshot, cq.name, priority, float("-inf"), {fr: amount}, frozenset({fr}))
        level = level_after_removal(snapshot, cq.name, fr, amount, (c.record for c, _ in found))
        if not found:
            return NO_CANDIDATES, level
        return (PREEMPT if any(c.cluster_queue == cq.name for c, _ in found) else RECLAIM), level

    def targets(self, snapshot: Snapshot, entry: Entry) -> Sequence[str]:
        a = entry.assignment
        if a is None or not a.preempt_frs:
            return ()
        if entry.fits_topology is not None:
            # The answer depends on the preemptor's topology too: not shared through the memo.
            found = self._search(snapshot, entry.cluster_queue, entry.priority, entry.timestamp,
                                 a.usage, a.preempt_frs, entry.fits_topology)
        else:
            found = self.search(snapshot, entry.cluster_queue, entry.priority, entry.timestamp,
                                a.usage, a.preempt_frs)
        for c, reason in found:
            self.reasons[c.key] = reason
        return tuple(c.key for c, _ in found)

    def _memo_for(self, snap: Snapshot) -> _Memo:
        if self._memo is None or self._memo.snap is not snap:
            self._memo = _Memo(snap)
        return self._memo

    def _lists(self, snap: Snapshot, cq_name: str, priority: int, timestamp: float,
               frs: frozenset[FR]) -> dict[str, list[_Candidate]]:
        """Candidates per queue, each list in :func:`_order`: the preemptor's own queue
        (``withinClusterQueue``) and the tree's queues borrowing on a contested resource
        (``reclaimWithinCohort``). Fresh lists: the search consumes them."""
        memo = self._memo_for(snap)
        cq = snap.cluster_queues[cq_name]
        node = snap.nodes[cq_name]
        within = cq.policy("withinClusterQueue")
        reclaim = cq.policy("reclaimWithinCohort")
        lists: dict[str, list[_Candidate]] = {}
        if node.parent is not None and reclaim != "Never":
            for name, lst in memo.reclaimable(node.root(), frs, reclaim, priority, timestamp).items():
                if name != cq_name:  # only other queues lose workloads by reclaim
                    lists[name] = list(lst)
        own = memo.victims(cq_name, frs, within, priority, timestamp)
        if own:
            lists[cq_name] = list(own)
        return lists

    def candidates(self, snap: Snapshot, cq_name: str, priority: int, timestamp: float,
                   frs: frozenset[FR]) -> list[_Candidate]:
        """All candidates in :func:`_order`: other queues' first, then the preemptor's own."""
        out = [c for lst in self._lists(snap, cq_name, priority, timestamp, frs).values() for c in lst]
        out.sort(key=lambda c: _order(c, cq_name))
        return out

    def search(self, snap: Snapshot, cq_name: str, priority: int, timestamp: float,
               request: Mapping[FR, int], frs: frozenset[FR]) -> list[tuple[_Candidate, str]]:
        """Victims (with their Preempted reason) that let ``request`` fit; empty when none do."""
        # The flavor assigner's oracle and then the targets ask the same question of one
        # snapshot; the answer depends on the preemptor only through these.
        cq = snap.cluster_queues[cq_name]
        key = (cq_name, frs, tuple(sorted(request.items())),
               policy_args(cq.policy("withinClusterQueue"), priority, timestamp),
               policy_args(cq.policy("reclaimWithinCohort"), priority, timestamp))
        memo = self._memo_for(snap)
        found = memo.found.get(key)
        if found is None:
            found = memo.found[key] = self._search(snap, cq_name, priority, timestamp, request, frs)
        return list(found)

    def _search(self, snap: Snapshot, cq_name: str, priority: int, timestamp: float,
                request: Mapping[FR, int], frs: frozenset[FR],
                topology: Callable[[frozenset[str]], bool] | None = None) -> list[tuple[_Candidate, str]]:
        lists = self._lists(snap, cq_name, priority, timestamp, frs)
        if not lists:
            return []
        own = snap.nodes[cq_name]
        s = _Search(self._memo_for(snap), own, request)

        def placed(chosen: list[tuple[_Candidate, str]]) -> bool:
            """With ``topology``, the TAS pod sets also fit the nodes the chosen free."""
            return topology is None or topology(frozenset(c.key for c, _ in chosen))
        within_nominal = all(s.usage.get(own, fr) <= own.quota(fr).nominal for fr in frs)
        chosen: list[tuple[_Candidate, str]] = []
        retry: dict[str, list[_Candidate]] = {}
        fits = False
        for target in s.targets(lists):
            lst = lists[target.name]
            if target is own or within_nominal:
                c = lst.pop(0)
                s.remove(c)
                chosen.append((c, IN_CLUSTER_QUEUE if target is own else IN_COHORT_RECLAMATION))
                if s.fits() and placed(chosen):
                    fits = True
                    break
                continue
            pre_child, tgt_child = _almost_lcas(own, target)
            preemptor_new = s.share(pre_child)
            target_old = s.share(tgt_child)
            while lst:
                c = lst.pop(0)
                if self.strategies[0] == LESS_THAN_INITIAL_SHARE:
                    passed = preemptor_new < target_old
                else:
                    view = s.usage.overlay()
                    view.add_all(target, c.record.usage, sign=-1)
                    passed = preemptor_new <= s.shares.share(tgt_child, view)
                if passed:
                    s.remove(c)
                    chosen.append((c, IN_COHORT_FAIR_SHARING))
                    fits = s.fits() and placed(chosen)
                    break  # shares changed: pick the target queue again
                retry.setdefault(target.name, []).append(c)
            if fits:
                break
        if not fits and len(self.strategies) > 1 and retry:
            for target in s.targets(retry):
                pre_child, tgt_child = _almost_lcas(own, target)
                c = retry[target.name][0]
                if s.share(pre_child) < s.share(tgt_child):
                    s.remove(c)
                    chosen.append((c, IN_COHORT_FAIR_SHARING))
                    if s.fits() and placed(chosen):
                        fits = True
                        break
                s.drop(retry, target.name)  # rule S2-b applies at most once per queue
        if not fits:
            return []
        # Fill back, on usage without the incoming workload, every victim not needed.
        usage = s.usage.overlay()
        usage.add_all(own, request, sign=-1)
        for item in reversed(chosen[:-1]):
            node = snap.nodes[item[0].cluster_queue]
            usage.add_all(node, item[0].record.usage)
            if all(available(own, usage, fr) >= v for fr, v in request.items() if v) \
                    and placed([x for x in chosen if x is not item]):
                chosen.remove(item)
            else:
                usage.add_all(node, item[0].record.usage, sign=-1)
        return chosen
