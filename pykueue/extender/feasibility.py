"""Whether a node may take a pod at all, as kube-scheduler's own filters decide it.

``/bind`` is the one verb that changes the cluster, so it does not trust that the node it
is asked for passed the scheduler's filters: it re-checks what the pod itself demands of
a node (node selector, required node affinity, taints it must tolerate, cordoned nodes).
Resource fit is left to the scheduler and the kubelet, as a plain Binding leaves it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykueue.manager.core.matching import expression_matches, tolerates

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _tolerated(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def _term_holds(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False  # an empty term matches no node
    name = {"metadata.name": str((node.get("metadata") or {}).get("name") or "")}
    return all(expression_matches(e, _labels(node)) for e in expressions) and all(
        expression_matches(f, name) for f in fields)


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
    if node_spec.get("unschedulable") and not _tolerated(tolerations, UNSCHEDULABLE_TAINT):
        return f"node {node_name} is cordoned"
    for taint in node_spec.get("taints") or ():
        if taint.get("effect") in _BLOCKING_EFFECTS and not _tolerated(tolerations, taint):
            return (f"node {node_name} has the taint {taint.get('key')}:{taint.get('effect')}"
                    " that the pod does not tolerate")
    return None
