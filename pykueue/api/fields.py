"""The declarative field framework every API model is written in.

A model is a dataclass whose fields carry a :class:`FieldInfo` (JSON name, required,
default, enum, bounds, list/map semantics, CEL rules). The Python annotation gives the
type. That single declaration drives three things so they can never drift apart:

* parsing (:meth:`Model.from_dict`) with errors that name the field path,
* serialising (:meth:`Model.to_dict`) that gives back exactly what was read: unset
  fields are omitted, unknown fields are kept, quantities keep the token they were
  written with,
* the OpenAPI v3 schema of the generated CRDs (:mod:`api.schema`).

Defaulting is separate (:meth:`Model.with_defaults`) because a stored object and its
defaulted view are different things: the apiserver defaults, clients do not.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self, Union, get_args, get_origin

from pykueue.api.quantity import Quantity, QuantityError


class FieldError(ValueError):
    """A rejected field: its path and what is wrong with it, printed ``path: problem``.

    One type for the model decoder's errors and for validation denials (webhooks); the
    constructors in ``api.field_errors`` word the problem as Kubernetes' ``field.Error``
    prints each error type. Equal when path and problem are."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path or "<root>"
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldError) and (self.path, self.problem) == (other.path, other.problem)

    def __hash__(self) -> int:
        return hash((self.path, self.problem))


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry."""

    rule: str
    message: str | None = None
    field_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule}
        if self.message is not None:
            out["message"] = self.message
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        return out


@dataclass(frozen=True)
class Items:
    """Constraints on the scalar members of a list or map field."""

    max_length: int | None = None
    min_length: int | None = None
    pattern: str | None = None
    minimum: int | None = None
    fmt: str | None = None
    enum: tuple[str, ...] | None = None


@dataclass(frozen=True)
class FieldInfo:
    json: str
    required: bool = False
    default: Any = NO_DEFAULT
    enum: tuple[str, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    fmt: str | None = None
    list_type: str | None = None
    map_keys: tuple[str, ...] | None = None
    map_type: str | None = None
    items: Items | None = None
    rules: tuple[Rule, ...] = ()
    # A raw schema used verbatim instead of the one derived from the type.
    schema: Mapping[str, Any] | None = None
    description: str | None = None


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def f(
    json: str | None = None,
    *,
    required: bool = False,
    default: Any = NO_DEFAULT,
    enum: tuple[str, ...] | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
    min_items: int | None = None,
    max_items: int | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
    fmt: str | None = None,
    list_type: str | None = None,
    map_keys: tuple[str, ...] | None = None,
    map_type: str | None = None,
    items: Items | None = None,
    rules: tuple[Rule, ...] = (),
    schema: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> Any:
    """Declare a model field. The JSON name defaults to the camelCase of the Python name."""
    info = FieldInfo(
        json=json or "", required=required, default=default, enum=enum, minimum=minimum,
        maximum=maximum, min_items=min_items, max_items=max_items, min_length=min_length,
        max_length=max_length, pattern=pattern, fmt=fmt, list_type=list_type, map_keys=map_keys,
        map_type=map_type, items=items, rules=rules, schema=schema, description=description,
    )
    if required:
        return dataclasses.field(metadata={"api": info})
    return dataclasses.field(default=None, metadata={"api": info})


class Qty(Quantity):
    """A quantity that remembers the token it was read from, to write it back unchanged."""

    __slots__ = ("raw",)

    raw: str | int | float


def read_quantity(value: Any) -> Qty:
    q = Quantity.parse(value)
    out = Qty(q.nano, q.format)
    out.raw = value
    return out


def write_quantity(value: Quantity) -> str | int | float:
    # Quantities are immutable, so a Qty's token always still spells its value.
    if isinstance(value, Qty):
        return value.raw
    return str(value)


@dataclass(frozen=True)
class Bound:
    """A model field resolved: its Python name, type and declaration."""

    name: str
    tp: Any
    info: FieldInfo


_FIELDS: dict[type, tuple[Bound, ...]] = {}


def strip_optional(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        return Union[tuple(args)]  # noqa: UP007 - rebuilt from runtime args
    return tp


@typing.dataclass_transform(kw_only_default=True)
@dataclass(kw_only=True)
class Model:
    """Base of every API model. Unknown JSON members are kept in ``extra``."""

    extra: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    # Object-level CEL rules and whether the object keeps unknown members in the schema.
    __rules__: ClassVar[tuple[Rule, ...]] = ()
    __open__: ClassVar[bool] = False
    __description__: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Every subclass is a keyword-only dataclass; the decorator is applied here so
        # model modules only declare fields.
        dataclass(kw_only=True)(cls)

    @classmethod
    def api_fields(cls) -> tuple[Bound, ...]:
        found = _FIELDS.get(cls)
        if found is None:
            hints = typing.get_type_hints(cls)
            bound = []
            for fld in dataclasses.fields(cls):
                info = fld.metadata.get("api")
                if info is None:
                    continue
                if not info.json:
                    info = dataclasses.replace(info, json=_camel(fld.name))
                bound.append(Bound(fld.name, strip_optional(hints[fld.name]), info))
            found = _FIELDS[cls] = tuple(bound)
        return found

    # -- parsing ----------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, path: str = "") -> Self:
        if not isinstance(data, Mapping):
            raise FieldError(path, f"expected object, got {_kind(data)}")
        fields = cls.api_fields()
        known = {b.info.json for b in fields}
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for b in fields:
            sub = _join(path, b.info.json)
            if b.info.json not in data:
                if b.info.required:
                    raise FieldError(sub, "required field is missing")
                continue
            raw = data[b.info.json]
            if raw is None:
                if b.info.required:
                    raise FieldError(sub, "required field is null")
                # An explicit null is kept verbatim so it round-trips.
                extra[b.info.json] = None
                continue
            values[b.name] = decode(b.tp, raw, sub, b.info)
        for key, value in data.items():
            if key not in known:
                extra[key] = copy.deepcopy(value)
        obj = cls(**values)
        obj.extra = extra
        return obj

    # -- serialising ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for b in self.api_fields():
            value = getattr(self, b.name)
            if value is not None:
                out[b.info.json] = encode(value)
        for key, value in self.extra.items():
            if key not in out:
                out[key] = copy.deepcopy(value)
        return out

    # -- defaulting -------------------------------------------------------------------------
    def with_defaults(self) -> Self:
        """A deep copy with the defaults Kueue's schema (and API defaulting) would apply."""
        clone = copy.deepcopy(self)
        clone.apply_defaults()
        return clone

    def apply_defaults(self) -> None:
        for b in self.api_fields():
            value = getattr(self, b.name)
            if value is None and b.info.default is not NO_DEFAULT:
                value = decode(b.tp, copy.deepcopy(b.info.default), b.info.json, b.info)
                setattr(self, b.name, value)
                self.extra.pop(b.info.json, None)
            _default_nested(value)
        self.after_defaults()

    def after_defaults(self) -> None:
        """Hook for defaults that depend on other fields (Go-side defaulting)."""


def _default_nested(value: Any) -> None:
    if isinstance(value, Model):
        value.apply_defaults()
    elif isinstance(value, list):
        for item in value:
            _default_nested(item)
    elif isinstance(value, dict):
        for item in value.values():
            _default_nested(item)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _check_scalar(value: Any, path: str, enum: tuple[str, ...] | None) -> None:
    if enum is not None and value not in enum:
        raise FieldError(path, f"unsupported value {value!r}: must be one of {', '.join(enum)}")


def decode(tp: Any, raw: Any, path: str, info: FieldInfo | None = None) -> Any:
    """Turn JSON into the Python value of type ``tp``."""
    origin = get_origin(tp)
    if tp is Any:
        return copy.deepcopy(raw)
    if tp is str:
        if not isinstance(raw, str):
            raise FieldError(path, f"expected string, got {_kind(raw)}")
        _check_scalar(raw, path, info.enum if info else None)
        return raw
    if tp is bool:
        if not isinstance(raw, bool):
            raise FieldError(path, f"expected boolean, got {_kind(raw)}")
        return raw
    if tp is int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            if isinstance(raw, float) and raw.is_integer():
                return raw
            raise FieldError(path, f"expected integer, got {_kind(raw)}")
        return raw
    if tp is float:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise FieldError(path, f"expected number, got {_kind(raw)}")
        return raw
    if isinstance(tp, type) and issubclass(tp, Quantity):
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise FieldError(path, f"expected quantity, got {_kind(raw)}")
        try:
            return read_quantity(raw)
        except QuantityError as exc:
            raise FieldError(path, str(exc)) from None
    if isinstance(tp, type) and issubclass(tp, Model):
        return tp.from_dict(raw, path)
    if origin is list:
        if not isinstance(raw, list):
            raise FieldError(path, f"expected array, got {_kind(raw)}")
        (item_tp,) = get_args(tp)
        item_info = _item_info(info)
        return [decode(item_tp, item, f"{path}[{i}]", item_info) for i, item in enumerate(raw)]
    if origin is dict:
        if not isinstance(raw, Mapping):
            raise FieldError(path, f"expected object, got {_kind(raw)}")
        _, value_tp = get_args(tp)
        item_info = _item_info(info)
        return {str(k): decode(value_tp, v, f"{path}.{k}", item_info) for k, v in raw.items()}
    if origin in (Union, types.UnionType):
        # int-or-string
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise FieldError(path, f"expected integer or string, got {_kind(raw)}")
        return raw
    raise TypeError(f"unsupported model field type {tp!r} at {path}")


def _item_info(info: FieldInfo | None) -> FieldInfo | None:
    if info is None or info.items is None or info.items.enum is None:
        return None
    return FieldInfo(json="", enum=info.items.enum)


def encode(value: Any) -> Any:
    if isinstance(value, Model):
        return value.to_dict()
    if isinstance(value, Quantity):
        return write_quantity(value)
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return copy.deepcopy(value)
