"""OpenAPI v3 (structural) schemas derived from the model declarations.

The schema of a model is computed from the same field list the parser uses, so a field
the models accept is a field the CRD accepts, with the same bounds, enums and defaults.
"""

from __future__ import annotations

import copy
import types
from typing import Any, Union, get_args, get_origin

from pykueue.api.fields import NO_DEFAULT, FieldInfo, Items, Model, Rule
from pykueue.api.meta import QUANTITY_PATTERN
from pykueue.api.quantity import Quantity

Schema = dict[str, Any]

QUANTITY_SCHEMA: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": QUANTITY_PATTERN,
    "x-kubernetes-int-or-string": True,
}

FieldList = list[tuple[str, Any, FieldInfo]]


class VersionView:
    """How an API version differs from the models (which are v1beta2): the identity here."""

    def fields(self, cls: type[Model], fields: FieldList) -> FieldList:
        return fields

    def rules(self, cls: type[Model], rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
        return rules


FieldFilter = VersionView


def _scalar_constraints(out: Schema, c: FieldInfo | Items) -> None:
    if c.enum is not None:
        out["enum"] = list(c.enum)
    if c.max_length is not None:
        out["maxLength"] = c.max_length
    if c.min_length is not None:
        out["minLength"] = c.min_length
    if c.pattern is not None:
        out["pattern"] = c.pattern
    if c.minimum is not None:
        out["minimum"] = c.minimum
    if c.fmt is not None:
        out["format"] = c.fmt


def type_schema(tp: Any, with_fields: FieldFilter | None = None) -> Schema:
    """The schema of a bare type (no per-field constraints)."""
    origin = get_origin(tp)
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is Any:
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if isinstance(tp, type) and issubclass(tp, Quantity):
        return dict(QUANTITY_SCHEMA)
    if isinstance(tp, type) and issubclass(tp, Model):
        return model_schema(tp, with_fields)
    if origin is list:
        return {"type": "array", "items": type_schema(get_args(tp)[0], with_fields)}
    if origin is dict:
        return {"type": "object", "additionalProperties": type_schema(get_args(tp)[1], with_fields)}
    if origin in (Union, types.UnionType):
        return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    raise TypeError(f"no schema for {tp!r}")


def field_schema(tp: Any, info: FieldInfo, with_fields: FieldFilter | None = None) -> Schema:
    if info.schema is not None:
        out: Schema = dict(info.schema)
    else:
        out = type_schema(tp, with_fields)
    if info.description:
        out["description"] = info.description
    if info.default is not NO_DEFAULT:
        out["default"] = copy.deepcopy(info.default)
    kind = out.get("type")
    if kind in ("string", "integer", "number"):
        _scalar_constraints(out, info)
        if kind == "integer" and info.maximum is not None:
            out["maximum"] = info.maximum
    if kind == "array":
        if info.min_items is not None:
            out["minItems"] = info.min_items
        if info.max_items is not None:
            out["maxItems"] = info.max_items
        if info.list_type is not None:
            out["x-kubernetes-list-type"] = info.list_type
        if info.map_keys is not None:
            out["x-kubernetes-list-map-keys"] = list(info.map_keys)
        if info.items is not None:
            _scalar_constraints(out["items"], info.items)
    if kind == "object":
        if info.map_type is not None:
            out["x-kubernetes-map-type"] = info.map_type
        if info.items is not None and "additionalProperties" in out:
            _scalar_constraints(out["additionalProperties"], info.items)
    if info.rules:
        out["x-kubernetes-validations"] = [r.to_json() for r in info.rules]
    return out


def model_schema(cls: type[Model], with_fields: FieldFilter | None = None) -> Schema:
    fields = [(b.name, b.tp, b.info) for b in cls.api_fields()]
    if with_fields is not None:
        fields = with_fields.fields(cls, fields)
    props = {info.json: field_schema(tp, info, with_fields) for _, tp, info in fields}
    out: Schema = {"type": "object"}
    if cls.__description__:
        out["description"] = cls.__description__
    if props:
        out["properties"] = dict(sorted(props.items()))
    required = sorted(info.json for _, _, info in fields if info.required)
    if required:
        out["required"] = required
    if cls.__open__:
        out["x-kubernetes-preserve-unknown-fields"] = True
    rules = with_fields.rules(cls, cls.__rules__) if with_fields is not None else cls.__rules__
    if rules:
        out["x-kubernetes-validations"] = [r.to_json() for r in rules]
    return out
