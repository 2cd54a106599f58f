"""What /bind re-checks of a node against the pod's own constraints."""

from __future__ import annotations

from typing import Any

from pykueue.extender.feasibility import rejection


def _node(name: str = "n1", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": spec}


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": list(terms)}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def test_node_selector() -> None:
    pod = _pod(nodeSelector={"zone": "a"})
    assert rejection(pod, _node(labels={"zone": "a", "x": "y"})) is None
    assert rejection(pod, _node(labels={"zone": "b"})) == \
        "node n1 does not match the pod's nodeSelector zone=a"
    assert rejection(pod, _node()) is not None


def test_required_node_affinity_terms_are_ored_and_expressions_anded() -> None:
    pod = _pod(affinity=_affinity(
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                              {"key": "gpu", "operator": "DoesNotExist"}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["special"]}]}))
    assert rejection(pod, _node(labels={"zone": "b"})) is None
    assert rejection(pod, _node(labels={"zone": "b", "gpu": "1"})) is not None
    assert rejection(pod, _node(labels={"zone": "c"})) is not None
    assert rejection(pod, _node("special", labels={"zone": "c"})) is None
    more_than_8 = {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}
    numeric = _pod(affinity=_affinity(more_than_8))
    assert rejection(numeric, _node(labels={"cores": "16"})) is None
    assert rejection(numeric, _node(labels={"cores": "4"})) is not None
    assert rejection(numeric, _node(labels={"cores": "many"})) is not None
    assert rejection(_pod(affinity=_affinity({})), _node()) is not None  # an empty term matches nothing


def test_taints_and_cordons() -> None:
    tainted = _node(taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"},
                            {"key": "soft", "effect": "PreferNoSchedule"}])
    assert rejection(_pod(), tainted) == \
        "node n1 has the taint gpu:NoSchedule that the pod does not tolerate"
    equal = {"key": "gpu", "operator": "Equal", "value": "true"}
    assert rejection(_pod(tolerations=[equal]), tainted) is None
    assert rejection(_pod(tolerations=[{**equal, "value": "no"}]), tainted) is not None
    assert rejection(_pod(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}]),
                     tainted) is not None
    assert rejection(_pod(tolerations=[{"operator": "Exists"}]), tainted) is None
    cordoned = _node(unschedulable=True)
    assert rejection(_pod(), cordoned) == "node n1 is cordoned"
    assert rejection(_pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
                     cordoned) is None
