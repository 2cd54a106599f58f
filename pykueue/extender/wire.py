"""The kube-scheduler extender v1 wire types: parsing requests, building replies.

The Go structs (k8s.io/kube-scheduler/extender/v1) carry no json tags, so kube-scheduler
sends PascalCase keys (``Pod``, ``Nodes``, ``NodeNames``, ``PodName`` ...) while the embedded
Pod and NodeList use the API's camelCase. Go decodes case-insensitively, so requests are
read case-insensitively too; replies always use the exact PascalCase spelling.

Anything that does not have the documented shape raises ``BadRequest`` with a reason the
server turns into HTTP 400: the handlers then work on validated values only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.api.wire import JSON
from pykueue.kube.endpoints import BadRequest


def _fields(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest(f"{what} must be a JSON object")
    # Go's encoding/json matches field names case-insensitively; mirror it.
    return {str(k).lower(): v for k, v in body.items()}


def decode_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except RecursionError:
        raise BadRequest("body is JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body is not JSON: {str(exc)[:200]}") from None


def _object_name(obj: Any, what: str) -> str:
    if not isinstance(obj, dict):
        raise BadRequest(f"{what} must be an object")
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise BadRequest(f"{what}.metadata must be an object")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{what}.metadata.name must be a non-empty string")
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            raise BadRequest(f"{what}.metadata.{key} must map strings to strings")
    # The parts the extender reads further down must have their API types.
    for part in ("spec", "status"):
        if obj.get(part) is not None and not isinstance(obj[part], dict):
            raise BadRequest(f"{what}.{part} must be an object")
    for part, key in (("spec", "tolerations"), ("spec", "taints"), ("status", "conditions")):
        items = (obj.get(part) or {}).get(key)
        if items is not None and not (isinstance(items, list) and all(isinstance(i, dict) for i in items)):
            raise BadRequest(f"{what}.{part}.{key} must be a list of objects")
    return name


@dataclass(frozen=True)
class ExtenderArgs:
    """Filter / prioritize input; exactly one of ``node_names`` / ``nodes`` is used."""

    pod: JSON
    node_cache_capable: bool
    node_names: list[str] = field(default_factory=list)
    nodes: list[JSON] = field(default_factory=list)

    def candidate_names(self) -> list[str]:
        if self.node_cache_capable:
            return self.node_names
        return [n["metadata"]["name"] for n in self.nodes]


def parse_extender_args(body: Any) -> ExtenderArgs:
    f = _fields(body, "ExtenderArgs")
    pod = f.get("pod")
    if pod is None:
        raise BadRequest("ExtenderArgs.Pod is required")
    _object_name(pod, "Pod")
    if pod["metadata"].get("namespace") is not None and not isinstance(pod["metadata"]["namespace"], str):
        raise BadRequest("Pod.metadata.namespace must be a string")
    nodes = f.get("nodes")
    names = f.get("nodenames")
    if nodes is not None:
        if not isinstance(nodes, dict):
            raise BadRequest("ExtenderArgs.Nodes must be a NodeList object")
        items = nodes.get("items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise BadRequest("ExtenderArgs.Nodes.items must be a list")
        for i, node in enumerate(items):
            _object_name(node, f"Nodes.items[{i}]")
        return ExtenderArgs(pod=pod, node_cache_capable=False, nodes=items)
    if names is None:
        # Both null: the scheduler sends this when no node survived; zero candidates.
        return ExtenderArgs(pod=pod, node_cache_capable=True)
    if not isinstance(names, list) or not set(map(type, names)) <= {str}:
        raise BadRequest("ExtenderArgs.NodeNames must be a list of strings")
    return ExtenderArgs(pod=pod, node_cache_capable=True, node_names=names)


@dataclass(frozen=True)
class BindingArgs:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def parse_binding_args(body: Any) -> BindingArgs:
    f = _fields(body, "ExtenderBindingArgs")
    values: dict[str, str] = {}
    for key, wire in (("podname", "PodName"), ("podnamespace", "PodNamespace"), ("poduid", "PodUID"),
                      ("node", "Node")):
        value = f.get(key)
        if not isinstance(value, str):
            raise BadRequest(f"ExtenderBindingArgs.{wire} must be a string")
        values[key] = value
    if not values["podname"] or not values["node"]:
        raise BadRequest("ExtenderBindingArgs.PodName and Node must be non-empty")
    return BindingArgs(values["podname"], values["podnamespace"], values["poduid"], values["node"])


@dataclass
class FilterVerdict:
    """Which candidates pass; reasons for the others. Unresolvable wins over failed."""

    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)
    error: str = ""


def filter_result(args: ExtenderArgs, verdict: FilterVerdict) -> JSON:
    """ExtenderFilterResult in the form matching the request (names or full Nodes)."""
    if args.node_cache_capable:
        names: list[str] | None = verdict.passed
        nodes: JSON | None = None
    else:
        keep = set(verdict.passed)
        names = None
        nodes = {"items": [n for n in args.nodes if n["metadata"]["name"] in keep]}
    return {
        "NodeNames": names,
        "Nodes": nodes,
        "FailedNodes": verdict.failed,
        "FailedAndUnresolvableNodes": verdict.unresolvable,
        "Error": verdict.error,
    }


def host_priority_list(scores: Mapping[str, int]) -> list[JSON]:
    return [{"Host": host, "Score": score} for host, score in scores.items()]


def binding_result(error: str = "") -> JSON:
    return {"Error": error}
