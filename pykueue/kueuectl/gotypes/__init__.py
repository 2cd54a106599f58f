"""What kueuectl's typed objects look like once Go's encoding/json has written them.

kueuectl decodes every Kueue object into its Go struct before printing it, so its JSON
and YAML show the struct's field order, drop fields Go does not know, write zero values
of fields without ``omitempty`` (``"pendingWorkloads": 0``) and canonicalise quantities
and durations. :func:`encode` does the same to an object as the API server sent it,
driven by ``gotypes.json`` (field order and options of the pinned Kueue release's
structs, written by ``schema_gen.go``).

The decoded Go value is modelled with plain Python values: ``None`` is a nil pointer,
slice, map or interface, a missing struct field is its zero value.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError

TypeRef = str | dict[str, Any]
Field = tuple[str, TypeRef, frozenset[str]]

# Custom-marshalled Go types that are structs: ``omitempty`` never drops them.
_STRUCT_LIKE = frozenset({"quantity", "time", "microtime", "duration", "intorstring", "rawext"})


class Schema:
    def __init__(self, data: dict[str, Any]) -> None:
        self.kinds: dict[str, TypeRef] = data["kinds"]
        self.structs: dict[str, list[Field]] = {
            name: [(f[0], f[1], frozenset(filter(None, f[2].split(",")))) for f in fields]
            for name, fields in data["structs"].items()
        }

    def encode(self, kind: str, obj: Any) -> Any:
        """``obj`` (JSON from the server, or built locally) as kueuectl prints a ``kind``."""
        ref = self.kinds[kind]
        return _marshal(self, ref, _decode(self, ref, obj))


@cache
def schema() -> Schema:
    text = resources.files(__package__).joinpath("gotypes.json").read_text()
    return Schema(json.loads(text))


def encode(kind: str, obj: Any) -> Any:
    return schema().encode(kind, obj)


def known_kind(kind: str) -> bool:
    return kind in schema().kinds


# -- decoding: server JSON -> Go value ------------------------------------------------------

def _decode(s: Schema, ref: TypeRef, raw: Any) -> Any:
    if isinstance(ref, dict):
        if "struct" in ref:
            return _decode_struct(s, ref["struct"], raw if isinstance(raw, dict) else {})
        if raw is None:
            return None
        if "ptr" in ref:
            return _decode(s, ref["ptr"], raw)
        if "list" in ref:
            return [_decode(s, ref["list"], item) for item in raw] if isinstance(raw, list) else None
        if "map" in ref:
            if not isinstance(raw, dict):
                return None
            return {str(k): _decode(s, ref["map"], v) for k, v in raw.items()}
        raise ValueError(f"unknown type reference {ref}")
    return _decode_scalar(ref, raw)


def _decode_struct(s: Schema, name: str, raw: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for field_name, ref, options in s.structs[name]:
        if "inline" in options:
            assert isinstance(ref, dict)
            value.update(_decode_struct(s, ref["struct"], raw))
        else:
            value[field_name] = _decode(s, ref, raw.get(field_name))
    return value


def _decode_scalar(ref: str, raw: Any) -> Any:
    if ref == "string":
        return raw if isinstance(raw, str) else ""
    if ref == "int":
        return int(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else 0
    if ref == "float":
        return float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else 0.0
    if ref == "bool":
        return raw is True
    if ref == "quantity":
        if raw is None:
            return "0"
        try:
            return str(Quantity.parse(raw))
        except QuantityError:
            return str(raw)
    if ref == "time":
        return _go_time(raw, micro=False)
    if ref == "microtime":
        return _go_time(raw, micro=True)
    if ref == "duration":
        return parse_go_duration(raw) if isinstance(raw, str) else 0
    if ref == "intorstring":
        return raw if isinstance(raw, int | str) and not isinstance(raw, bool) else 0
    if ref in ("rawext", "any", "bytes"):
        return raw
    raise ValueError(f"unknown scalar type {ref}")


def _go_time(raw: Any, *, micro: bool) -> str | None:
    """RFC 3339 in UTC, as metav1.Time (seconds) or MicroTime (microseconds) write it."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return raw
    parsed = parsed.astimezone(UTC)
    if micro:
        return parsed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return parsed.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- encoding: Go value -> JSON as encoding/json writes it -------------------------------------

def _marshal(s: Schema, ref: TypeRef, value: Any) -> Any:
    if isinstance(ref, dict):
        if "struct" in ref:
            return _marshal_struct(s, ref["struct"], value)
        if value is None:
            return None
        if "ptr" in ref:
            return _marshal(s, ref["ptr"], value)
        if "list" in ref:
            return [_marshal(s, ref["list"], item) for item in value]
        # Go writes map keys sorted.
        return {k: _marshal(s, ref["map"], value[k]) for k in sorted(value)}
    if ref == "duration":
        return format_go_duration(value)
    return value


def _marshal_struct(s: Schema, name: str, value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field_name, ref, options in s.structs[name]:
        if "inline" in options:
            assert isinstance(ref, dict)
            out.update(_marshal_struct(s, ref["struct"], value))
            continue
        field_value = value[field_name]
        if "omitempty" in options and _is_empty(ref, field_value):
            continue
        if "omitzero" in options and _is_zero(s, ref, field_value):
            continue
        out[field_name] = _marshal(s, ref, field_value)
    return out


def _is_empty(ref: TypeRef, value: Any) -> bool:
    """encoding/json's omitempty: false, 0, "", nil, and empty slices and maps; structs never."""
    if isinstance(ref, dict):
        if "struct" in ref:
            return False
        return value is None or ("ptr" not in ref and len(value) == 0)
    if ref in _STRUCT_LIKE:
        return False
    if ref in ("any", "bytes"):
        return value is None or value == ""
    return not value


def _is_zero(s: Schema, ref: TypeRef, value: Any) -> bool:
    """encoding/json's omitzero: the Go zero value, by IsZero() for Time and Quantity."""
    if isinstance(ref, dict):
        if "struct" not in ref:
            return value is None
        fields = s.structs[ref["struct"]]
        return all(_is_zero(s, r, value if "inline" in o else value[n]) for n, r, o in fields)
    if ref == "quantity":
        return bool(Quantity.parse(value).is_zero()) if value else True
    if ref in ("time", "microtime", "rawext", "any", "bytes"):
        return value is None
    return not value


# -- Go durations (metav1.Duration) ----------------------------------------------------------

_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
          "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> int:
    """Nanoseconds of a Go duration string ("1h30m", "90s"); 0 when unreadable."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body == "0":
        return 0
    total = 0
    pos = 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            return 0
        pos = match.end()
        number, unit = match.groups()
        whole, _, frac = number.partition(".")
        scale = _UNITS[unit]
        total += int(whole or "0") * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    return sign * total if pos == len(body) and body else 0


def format_go_duration(ns: int) -> str:
    """Go's time.Duration.String()."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 10**9:
        for unit, scale in (("ns", 1), ("µs", 1000), ("ms", 10**6)):
            if ns < scale * 1000:
                return sign + _fraction(ns, scale) + unit
    hours, rest = divmod(ns, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = _fraction(rest, 10**9) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _fraction(value: int, scale: int) -> str:
    whole, frac = divmod(value, scale)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(scale)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
