"""Node-level predicates used by TAS: readiness, taints, node selectors and affinity.

These mirror the kube-scheduler rules that Kueue applies when the lowest topology level
is the hostname (a leaf is then exactly one node): a node is a candidate only if it is
Ready, schedulable, carries the flavor's labels and every topology level label, and
tolerates/matches the podset's tolerations, nodeSelector and required node affinity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


def node_name(node: Mapping[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


def node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = (node.get("metadata") or {}).get("labels") or {}
    return labels


def ready_condition(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            found: Mapping[str, Any] = cond
            return found
    return None


def is_ready(node: Mapping[str, Any]) -> bool:
    cond = ready_condition(node)
    return cond is not None and cond.get("status") == "True"


def is_unschedulable(node: Mapping[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable", False))


def belongs_to_flavor(
    node: Mapping[str, Any], flavor_labels: Mapping[str, str], level_keys: Sequence[str]
) -> bool:
    """A node serves a TAS flavor iff it has every flavor nodeLabel and every level label."""
    labels = node_labels(node)
    if any(labels.get(k) != v for k, v in flavor_labels.items()):
        return False
    return all(k in labels for k in level_keys)


def toleration_matches(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = tol.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = tol.get("key") or ""
    operator = tol.get("operator") or "Equal"
    if not key:
        # An empty key with Exists tolerates every taint.
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (tol.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint no toleration covers, or None."""
    for taint in taints:
        if taint.get("effect") not in SCHEDULING_EFFECTS:
            continue
        if not any(toleration_matches(t, taint) for t in tolerations):
            return taint
    return None


def taint_string(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    base = f"{taint.get('key', '')}={value}" if value else str(taint.get("key", ""))
    return f"{base}:{taint.get('effect', '')}"


def matches_node_selector(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _int_or_none(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _requirement_matches(req: Mapping[str, Any], value: str | None) -> bool:
    op = req.get("operator")
    values = [str(v) for v in req.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        have, bound = _int_or_none(value), _int_or_none(values[0])
        if have is None or bound is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        # An empty term matches nothing, as in the scheduler.
        return False
    labels = node_labels(node)
    for req in exprs:
        if not _requirement_matches(req, labels.get(str(req.get("key", "")))):
            return False
    for req in fields:
        value = node_name(node) if req.get("key") == "metadata.name" else None
        if not _requirement_matches(req, value):
            return False
    return True


def matches_required_affinity(affinity: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """requiredDuringSchedulingIgnoredDuringExecution: terms are ORed, expressions ANDed."""
    if not affinity:
        return True
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(_term_matches(t, node) for t in terms)


def not_ready_since(node: Mapping[str, Any]) -> datetime | None:
    """When the node's Ready condition stopped being True (None if Ready or unknown)."""
    cond = ready_condition(node)
    if cond is None or cond.get("status") == "True":
        return None
    stamp = cond.get("lastTransitionTime")
    if not stamp:
        return None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
