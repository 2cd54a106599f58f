"""Quota arithmetic over the tree of ClusterQueues and Cohorts (Kueue's resource nodes).

Each ClusterQueue and Cohort is a :class:`QuotaNode`. Per (flavor, resource) a node has
its quota (nominal, borrowingLimit, lendingLimit), a *subtree quota* (a cohort pools its
own nominal and what its children may lend) and a *local quota* (the part kept private
by a lendingLimit). Usage lives apart from the structure, in a :class:`Usage` ledger, so
a scheduling cycle can take a cheap copy-on-write view of it (:meth:`Usage.overlay`)
instead of copying the world: only the nodes an entry touches are copied.

Adding usage to a ClusterQueue pushes the part above its local quota up to the parent,
recursively, so every cohort's usage is the sum of what its children borrow from it;
``available`` walks the other way, from the node to the root, taking the borrowing
limits into account. Both are O(depth).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .objects import FR, Quota

_NO_QUOTA = Quota(0, None, None)


class QuotaNodeView(Protocol):
    """A node of the quota tree as readers outside the core see it: read only."""

    @property
    def name(self) -> str: ...

    @property
    def is_cq(self) -> bool: ...

    @property
    def parent(self) -> QuotaNodeView | None: ...

    @property
    def children(self) -> Sequence[QuotaNodeView]: ...

    @property
    def quotas(self) -> Mapping[FR, Quota]: ...

    @property
    def subtree(self) -> Mapping[FR, int]: ...

    def quota(self, fr: FR) -> Quota: ...

    def cluster_queues(self) -> Sequence[QuotaNodeView]: ...


@dataclass(frozen=True)
class QuotaTree:
    """The quota tree as last built: rebuilt, never changed, when queues or cohorts change."""

    cluster_queues: Mapping[str, QuotaNodeView]  # ClusterQueue name -> its node
    cohorts: Mapping[str, QuotaNodeView]  # Cohort name -> its node (implicit cohorts too)


class QuotaNode:
    """A ClusterQueue (``is_cq``) or a Cohort in the quota tree."""

    __slots__ = ("children", "is_cq", "local", "name", "parent", "quotas", "subtree")

    def __init__(self, name: str, is_cq: bool, quotas: Mapping[FR, Quota]) -> None:
        self.name = name
        self.is_cq = is_cq
        self.quotas: dict[FR, Quota] = dict(quotas)
        self.parent: QuotaNode | None = None
        self.children: list[QuotaNode] = []
        self.subtree: dict[FR, int] = {}
        self.local: dict[FR, int] = {}

    def __repr__(self) -> str:
        return f"QuotaNode({'cq' if self.is_cq else 'cohort'} {self.name})"

    def quota(self, fr: FR) -> Quota:
        return self.quotas.get(fr, _NO_QUOTA)

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def cluster_queues(self) -> list[QuotaNode]:
        """The ClusterQueues of this node's subtree (itself, if it is one)."""
        out: list[QuotaNode] = []
        stack = [self]
        while stack:
            n = stack.pop()
            if n.is_cq:
                out.append(n)
            else:
                stack.extend(n.children)
        return out

    def height(self) -> int:
        """Cohort with only ClusterQueue children = 1, +1 per cohort level below it."""
        if self.is_cq:
            return 0
        return 1 + max((c.height() for c in self.children if not c.is_cq), default=0)


def compute_subtree(node: QuotaNode) -> None:
    """Recompute subtree and local quotas bottom-up (after any structural change)."""
    for child in node.children:
        compute_subtree(child)
    subtree: dict[FR, int] = {fr: q.nominal for fr, q in node.quotas.items()}
    if not node.is_cq:
        for child in node.children:
            for fr, sq in child.subtree.items():
                subtree[fr] = subtree.get(fr, 0) + sq - child.local.get(fr, 0)
    node.subtree = subtree
    local: dict[FR, int] = {}
    for fr, sq in subtree.items():
        ll = node.quota(fr).lending_limit
        if ll is not None and node.parent is not None:
            local[fr] = max(0, sq - ll)
    node.local = local


class Usage:
    """Usage per node and (flavor, resource); a view may overlay a base ledger."""

    __slots__ = ("_base", "_own")

    def __init__(self, base: Usage | None = None) -> None:
        self._base = base
        self._own: dict[QuotaNode, dict[FR, int]] = {}

    def overlay(self) -> Usage:
        """A copy-on-write view: writes stay in the view, the base is never touched."""
        return Usage(self)

    def of(self, node: QuotaNode) -> Mapping[FR, int]:
        own = self._own.get(node)
        if own is not None:
            return own
        if self._base is not None:
            return self._base.of(node)
        return {}

    def get(self, node: QuotaNode, fr: FR) -> int:
        return self.of(node).get(fr, 0)

    def _writable(self, node: QuotaNode) -> dict[FR, int]:
        own = self._own.get(node)
        if own is None:
            own = dict(self._base.of(node)) if self._base is not None else {}
            self._own[node] = own
        return own

    def add(self, node: QuotaNode, fr: FR, value: int) -> None:
        """Add (or, negative, remove) usage on a node and push the excess to its parents."""
        n: QuotaNode | None = node
        while n is not None and value:
            row = self._writable(n)
            old = row.get(fr, 0)
            new = old + value
            row[fr] = new
            local = n.local.get(fr, 0)
            value = max(0, new - local) - max(0, old - local)
            n = n.parent

    def add_all(self, node: QuotaNode, amounts: Mapping[FR, int], sign: int = 1) -> None:
        for fr, v in amounts.items():
            self.add(node, fr, sign * v)

    def forget(self, node: QuotaNode) -> None:
        self._own.pop(node, None)


def local_available(node: QuotaNode, usage: Usage, fr: FR) -> int:
    return max(0, node.local.get(fr, 0) - usage.get(node, fr))


def available(node: QuotaNode, usage: Usage, fr: FR) -> int:
    """What the node could still take on ``fr`` (may be negative after a quota shrink)."""
    parent = node.parent
    if parent is None:
        return node.subtree.get(fr, 0) - usage.get(node, fr)
    local = node.local.get(fr, 0)
    used = usage.get(node, fr)
    from_parent = available(parent, usage, fr)
    bl = node.quota(fr).borrowing_limit
    if bl is not None:
        lendable_part = node.subtree.get(fr, 0) - local
        from_parent = min(from_parent, lendable_part - max(0, used - local) + bl)
    return max(0, local - used) + from_parent


def potential_available(node: QuotaNode, fr: FR) -> int:
    """What the node could take if the whole tree were idle."""
    parent = node.parent
    if parent is None:
        return node.subtree.get(fr, 0)
    value = node.local.get(fr, 0) + potential_available(parent, fr)
    bl = node.quota(fr).borrowing_limit
    if bl is not None:
        value = min(value, node.subtree.get(fr, 0) + bl)
    return value


def borrowing_level(node: QuotaNode, usage: Usage, fr: FR, value: int) -> tuple[int, bool]:
    """Height of the lowest subtree holding the request, and whether reclaiming may help.

    0 means no borrowing is needed. The second value is Kueue's ``mayReclaimInHierarchy``.
    """
    if usage.get(node, fr) + value <= node.quota(fr).nominal:
        return 0, node.parent is not None
    remaining = value - local_available(node, usage, fr)
    n = node.parent
    while n is not None:
        if usage.get(n, fr) + remaining <= n.subtree.get(fr, 0):
            return n.height(), n.parent is not None
        remaining -= local_available(n, usage, fr)
        if n.parent is None:
            return n.height(), False
        n = n.parent
    return 1, False
