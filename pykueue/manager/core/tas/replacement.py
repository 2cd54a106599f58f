"""Node failure: when a node counts as failed, and moving its pods to a healthy node.

:func:`replace_failed_node` is the single rule used both by the queue manager's second
pass and by the kube-scheduler extender at bind time. Given a PodSet's assignment and the
failed node it removes that node's domain, checks that every remaining domain still
exists, restricts the search to the domain the PodSet must stay in (the required-level
ancestor, or for slices the slice domain the moved pods belong to), places the moved
pods with the ordinary algorithm and merges the result back in level-value order. No fit
means the workload is evicted with reason ``NodeFailures`` (Kueue's fail-fast default).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pykueue.api import keys

from . import nodes as nodepred
from .assignment import DomainAssignment, TopologyAssignment
from .placement import SearchInput
from .request import PodSetRequest
from .snapshot import TopologySnapshot

# Kueue's NodeFailureDelay: how long a node may be NotReady before it is replaced.
NODE_FAILURE_DELAY = timedelta(seconds=30)


@dataclass(frozen=True)
class Replacement:
    """The rewritten assignment; ``added`` lists the domains that took the moved pods."""

    failed_node: str
    assignment: TopologyAssignment
    added: tuple[DomainAssignment, ...]

    @property
    def replacement_nodes(self) -> list[str]:
        return [d.values[-1] for d in self.added]


@dataclass(frozen=True)
class NoReplacement:
    """No healthy node can take the pods: evict with ``reason`` and ``message``."""

    failed_node: str
    detail: str
    reason: str = keys.Reason.NODE_FAILURES

    @property
    def message(self) -> str:
        return f"Workload was evicted as there was no replacement for unhealthy node(s): {self.failed_node}"


def is_node_failed(
    node: Mapping[str, Any] | None, now: datetime, grace: timedelta = NODE_FAILURE_DELAY
) -> bool:
    """Deleted, without a Ready condition, or NotReady for at least ``grace``: the
    fixed-time rule alone (Kueue's before v0.19; see ``node_health`` for the gated rules)."""
    if node is None:
        return True
    cond = nodepred.ready_condition(node)
    if cond is None:
        return True
    if cond.get("status") == "True":
        return False
    since = nodepred.not_ready_since(node)
    return since is None or now - since >= grace


def _required_domain(
    snapshot: TopologySnapshot,
    request: PodSetRequest,
    kept: list[DomainAssignment],
    moved: int,
) -> tuple[tuple[str, ...] | None, tuple[int, str] | None]:
    """(domain the moved pods must stay in, (slice size, level) to search with)."""
    if not kept:
        return None, None
    keys_ = snapshot.level_keys
    leaves = [snapshot.tree.leaf_for_values(d.values) for d in kept]
    full = [leaf.values for leaf in leaves if leaf is not None]
    layers = request.topology.slice_layers
    broken = [layer for layer in layers if moved % layer.size]
    if broken:
        innermost = broken[-1]
        level = keys_.index(innermost.level) if innermost.level in keys_ else len(keys_) - 1
        totals: dict[tuple[str, ...], int] = {}
        for values, dom in zip(full, kept, strict=True):
            prefix = values[: level + 1]
            totals[prefix] = totals.get(prefix, 0) + dom.count
        chosen = next((p for p, c in totals.items() if (c + moved) % innermost.size == 0), None)
        fitting = [layer for layer in layers if moved % layer.size == 0]
        inner = (fitting[-1].size, fitting[-1].level) if fitting else (1, keys_[-1])
        return chosen, inner
    required = request.topology.required
    if required and required in keys_:
        return full[0][: keys_.index(required) + 1], None
    return None, None


def replace_failed_node(
    assignment: TopologyAssignment,
    failed_node: str,
    snapshot: TopologySnapshot,
    podset_request: PodSetRequest,
) -> Replacement | NoReplacement:
    """Move the pods assigned to ``failed_node`` within the PodSet's required domain.

    The snapshot must already hold this workload's usage (it stays admitted) and should
    not offer ``failed_node`` (it is excluded regardless). A node that is not part of the
    assignment needs no replacement: the assignment comes back unchanged.
    """
    moved = sum(d.count for d in assignment.domains if d.values and d.values[-1] == failed_node)
    if moved == 0:
        return Replacement(failed_node, assignment, ())
    kept = [d for d in assignment.domains if not (d.values and d.values[-1] == failed_node)]
    for dom in kept:
        if not snapshot.has_leaf(dom.values):
            return NoReplacement(
                failed_node,
                "Cannot replace the node, because the existing topologyAssignment is invalid, "
                f"as it contains the stale domain {','.join(dom.values)}",
            )
    required_domain, slice_override = _required_domain(snapshot, podset_request, kept, moved)
    found = snapshot.search(
        SearchInput(
            podset_request,
            count=moved,
            required_domain=required_domain,
            excluded_leaves=frozenset({failed_node}),
            slice_override=slice_override,
        )
    )
    if isinstance(found, str):
        return NoReplacement(failed_node, found)
    added = found[podset_request.name]
    return Replacement(failed_node, _merge(snapshot, kept, added), added.domains)


def _merge(
    snapshot: TopologySnapshot, kept: list[DomainAssignment], added: TopologyAssignment
) -> TopologyAssignment:
    counts: dict[tuple[str, ...], int] = {}
    for dom in [*kept, *added.domains]:
        counts[dom.values] = counts.get(dom.values, 0) + dom.count

    def order(values: tuple[str, ...]) -> tuple[str, ...]:
        leaf = snapshot.tree.leaf_for_values(values)
        return leaf.values if leaf is not None else values

    merged = tuple(DomainAssignment(v, c) for v, c in sorted(counts.items(), key=lambda kv: order(kv[0])))
    return TopologyAssignment(added.levels, merged)
