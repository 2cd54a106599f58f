"""Small readers and writers of raw job objects' labels, annotations and nested fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api import keys
from pykueue.api.wire import JSON, meta


def str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return str_map(meta(obj).get("labels"))


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return str_map(meta(obj).get("annotations"))


def set_label(obj: JSON, key: str, value: str) -> None:
    obj.setdefault("metadata", {})
    if not isinstance(obj["metadata"].get("labels"), dict):
        obj["metadata"]["labels"] = {}
    obj["metadata"]["labels"][key] = value


def set_annotation(obj: JSON, key: str, value: str) -> None:
    obj.setdefault("metadata", {})
    if not isinstance(obj["metadata"].get("annotations"), dict):
        obj["metadata"]["annotations"] = {}
    obj["metadata"]["annotations"][key] = value


def priority_class_label(obj: Mapping[str, Any]) -> str:
    return labels(obj).get(keys.PRIORITY_CLASS, "")


def controller_owner(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in meta(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def get_path(obj: Mapping[str, Any], *path: str) -> Any:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node
