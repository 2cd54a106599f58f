"""Does a podset fit a ResourceFlavor's node labels and taints? And a namespace selector?

Only label keys that some flavor of the resource group defines are compared (Kueue
v0.12): a podset's selector on other keys is left for kube-scheduler to honour.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .objects import Flavor, PodSet


def expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One NodeSelectorRequirement / LabelSelectorRequirement against labels."""
    key, op = expr.get("key", ""), expr.get("operator", "In")
    values = [str(v) for v in expr.get("values") or ()]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            a, b = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def selector_matches(podset: PodSet, flavor: Flavor, keys: frozenset[str]) -> bool:
    for k, v in podset.node_selector.items():
        if k in keys and flavor.node_labels.get(k) != v:
            return False
    if not podset.affinity_terms:
        return True
    for term in podset.affinity_terms:
        exprs = [e for e in term if e.get("key") in keys]
        # A term that loses all its expressions matches anything.
        if all(expression_matches(e, flavor.node_labels) for e in exprs):
            return True
    return False


def tolerates(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Does one toleration tolerate the taint (kube-scheduler's rule)?"""
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    op = tol.get("operator", "Equal")
    if not tol.get("key"):
        return bool(op == "Exists")
    if tol.get("key") != taint.get("key"):
        return False
    return op == "Exists" or str(tol.get("value", "")) == str(taint.get("value", ""))


def untolerated_taint(podset: PodSet, flavor: Flavor) -> Mapping[str, Any] | None:
    tolerations: Iterable[Mapping[str, Any]] = (*podset.tolerations, *flavor.tolerations)
    for taint in flavor.node_taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector; None selects nothing, {} selects everything."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != str(v):
            return False
    return all(expression_matches(e, labels) for e in selector.get("matchExpressions") or ())
