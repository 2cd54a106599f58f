"""Whether a node may take a pod at all, as kube-scheduler's own filters decide it.

``/bind`` is the one verb that changes the cluster, so it does not trust that the node it
is asked for passed the scheduler's filters: it re-checks what the pod itself demands of
a node (node selector, required node affinity, taints it must tolerate, cordoned nodes).
Resource fit is left to the scheduler and the kubelet, as a plain Binding leaves it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = t.get("key") or ""
        if t.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _expression_holds(expr: Mapping[str, Any], values_of: Mapping[str, str]) -> bool:
    key, op = str(expr.get("key") or ""), expr.get("operator")
    values = [str(v) for v in expr.get("values") or ()]
    present = key in values_of
    if op == "In":
        return present and values_of[key] in values
    if op == "NotIn":
        return not present or values_of[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(values_of[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term_holds(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False  # an empty term matches no node
    name = {"metadata.name": str((node.get("metadata") or {}).get("name") or "")}
    return all(_expression_holds(e, _labels(node)) for e in expressions) and all(
        _expression_holds(f, name) for f in fields)


def rejection(pod: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    """Why the node cannot take the pod, or None when the pod's own constraints allow it."""
    spec = pod.get("spec") or {}
    node_name = (node.get("metadata") or {}).get("name")
    labels = _labels(node)
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return f"node {node_name} does not match the pod's nodeSelector {key}={value}"
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or ()
    if terms and not any(_term_holds(t, node) for t in terms):
        return f"node {node_name} does not match the pod's required node affinity"
    tolerations = spec.get("tolerations") or ()
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable") and not _tolerates(tolerations, UNSCHEDULABLE_TAINT):
        return f"node {node_name} is cordoned"
    for taint in node_spec.get("taints") or ():
        if taint.get("effect") in _BLOCKING_EFFECTS and not _tolerates(tolerations, taint):
            return (f"node {node_name} has the taint {taint.get('key')}:{taint.get('effect')}"
                    " that the pod does not tolerate")
    return None
