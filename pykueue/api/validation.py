"""Checks of the declared bounds (lengths, patterns, ranges, item counts, list keys) on a
parsed model, the OpenAPI part of what the apiserver enforces. Parsing already checks
types, required fields and enums; CEL rules are left to the apiserver.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pykueue.api.fields import FieldInfo, Items, Model

_GO_LEADING_FLAGS = re.compile(r"^\^(\(\?[a-zA-Z]+\))")


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    # The schemas carry Go (RE2) patterns, which allow flags after the anchor (Kueue's
    # `^(?i)[a-z]...`); Python wants global flags first.
    return re.compile(_GO_LEADING_FLAGS.sub(r"\1^", pattern))


def _scalar(value: Any, c: FieldInfo | Items, path: str, out: list[str]) -> None:
    if isinstance(value, str):
        if c.max_length is not None and len(value) > c.max_length:
            out.append(f"{path}: may not be longer than {c.max_length}")
        if c.min_length is not None and len(value) < c.min_length:
            out.append(f"{path}: should be at least {c.min_length} chars long")
        if c.pattern is not None and not _regex(c.pattern).search(value):
            out.append(f"{path}: {value!r} should match {c.pattern!r}")
        if c.enum is not None and value not in c.enum:
            out.append(f"{path}: unsupported value {value!r}")
    elif isinstance(value, int) and not isinstance(value, bool):
        if c.minimum is not None and value < c.minimum:
            out.append(f"{path}: should be greater than or equal to {c.minimum}")
        maximum = getattr(c, "maximum", None)
        if maximum is not None and value > maximum:
            out.append(f"{path}: should be less than or equal to {maximum}")


def _list(value: list[Any], info: FieldInfo, path: str, out: list[str]) -> None:
    if info.max_items is not None and len(value) > info.max_items:
        out.append(f"{path}: must have at most {info.max_items} items")
    if info.min_items is not None and len(value) < info.min_items:
        out.append(f"{path}: should have at least {info.min_items} items")
    if info.list_type == "map" and info.map_keys:
        seen: set[tuple[Any, ...]] = set()
        for i, item in enumerate(value):
            key = tuple(getattr(item, _py(item, k), None) for k in info.map_keys)
            if key in seen:
                out.append(f"{path}[{i}]: duplicate entry for key {key}")
            seen.add(key)
    elif info.list_type == "set":
        for i, item in enumerate(value):
            if item in value[:i]:
                out.append(f"{path}[{i}]: duplicate value {item!r}")


def _py(item: Any, json_name: str) -> str:
    if isinstance(item, Model):
        for b in item.api_fields():
            if b.info.json == json_name:
                return b.name
    return json_name


def _walk(value: Any, info: FieldInfo | None, path: str, out: list[str]) -> None:
    if isinstance(value, Model):
        for b in value.api_fields():
            child = getattr(value, b.name)
            if child is not None:
                _walk(child, b.info, f"{path}.{b.info.json}" if path else b.info.json, out)
        return
    if info is None:
        return
    if isinstance(value, list):
        _list(value, info, path, out)
        for i, item in enumerate(value):
            if info.items is not None:
                _scalar(item, info.items, f"{path}[{i}]", out)
            _walk(item, None, f"{path}[{i}]", out)
    elif isinstance(value, dict) and info.schema is None:
        for key, item in value.items():
            if info.items is not None:
                _scalar(item, info.items, f"{path}.{key}", out)
            _walk(item, None, f"{path}.{key}", out)
    else:
        _scalar(value, info, path, out)


def validate(obj: Model) -> list[str]:
    """Every bound the object breaks, as ``field.path: problem`` strings (empty when valid)."""
    out: list[str] = []
    _walk(obj, None, "", out)
    return out
