"""Pure accounting of a PodSet's assignment against the pods the API shows bound.

``remaining(leaf) = assigned(leaf) - live(leaf)`` where live pods are pods of the PodSet
bound (``spec.nodeName``) to a node of that leaf and not Succeeded/Failed. Counting is
always derived from a pod list, never kept as counters, so a restart or a second replica
sees the same numbers.

A leaf is identified by the node's label values for the assignment's levels, which works
for hostname leaves (one node) and for pooled leaves (several nodes share the values).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pykueue.manager.core.tas.assignment import TopologyAssignment

Leaf = tuple[str, ...]
TERMINAL_PHASES = ("Succeeded", "Failed")


def leaf_of(labels: Mapping[str, str], levels: Iterable[str]) -> Leaf | None:
    values = []
    for level in levels:
        value = labels.get(level)
        if value is None:
            return None
        values.append(value)
    return tuple(values)


def node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = (node.get("metadata") or {}).get("labels") or {}
    return labels


def is_terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_uid(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def bound_node(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def assigned_counts(assignment: TopologyAssignment) -> dict[Leaf, int]:
    counts: dict[Leaf, int] = {}
    for domain in assignment.domains:
        counts[domain.values] = counts.get(domain.values, 0) + domain.count
    return counts


def live_counts(
    pods: Iterable[Mapping[str, Any]],
    leaf_of_node: Mapping[str, Leaf | None],
    *,
    exclude_uid: str = "",
    released_nodes: Iterable[str] = (),
) -> Counter[Leaf]:
    """Live pods per leaf. Terminating pods still hold their slot, except on a node being
    replaced: there the slot is the one the replacement pod will take."""
    released = set(released_nodes)
    live: Counter[Leaf] = Counter()
    for pod in pods:
        node = bound_node(pod)
        if not node or is_terminated(pod) or (exclude_uid and pod_uid(pod) == exclude_uid):
            continue
        if node in released and is_terminating(pod):
            continue
        leaf = leaf_of_node.get(node)
        if leaf is not None:
            live[leaf] += 1
    return live


def remaining_counts(assigned: Mapping[Leaf, int], live: Mapping[Leaf, int]) -> dict[Leaf, int]:
    return {leaf: count - live.get(leaf, 0) for leaf, count in assigned.items()}


def priority_scores(remaining: Mapping[Leaf, int], leaf_by_node: Mapping[str, Leaf | None],
                    max_score: int = 10) -> dict[str, int]:
    """0..max_score per node: nodes of the leaf with most remaining slots score highest."""
    best = max((r for r in remaining.values() if r > 0), default=0)
    scores: dict[str, int] = {}
    for node, leaf in leaf_by_node.items():
        r = remaining.get(leaf, 0) if leaf is not None else 0
        # ceil keeps every open domain above the closed ones (score 0).
        scores[node] = -(-max_score * r // best) if r > 0 and best > 0 else 0
    return scores
