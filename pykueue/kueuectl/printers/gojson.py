"""JSON written byte for byte as Go's ``json.MarshalIndent(v, "", "    ")`` writes it.

The differences from Python's json module that show in kubectl output: HTML-safe escapes
(``<`` is ``\\u003c``), U+2028/U+2029 escaped, non-ASCII kept as UTF-8, and Go's float
formatting. Key order is the caller's (typed objects come ordered by ``gotypes``,
unstructured ones are sorted by :func:`sort_keys`, as Go sorts map keys).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
            "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_string(text: str) -> str:
    out = ['"']
    for ch in text:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\ufffd")  # a lone surrogate is invalid UTF-8 to Go
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest round-tripping digits of ``abs(value)`` and its decimal exponent
    (``value == 0.d1d2... * 10**(exp+1)``), as strconv's shortest formatting uses."""
    _, digits, exponent = Decimal(repr(abs(value))).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    return text, exponent + len(digits) - 1


def _exponent_form(value: float, digits: str, exp: int, *, min_negative_digits: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    sign = "-" if value < 0 else ""
    if exp < 0:
        return f"{sign}{mantissa}e-{str(-exp).zfill(min_negative_digits)}"
    return f"{sign}{mantissa}e+{str(exp).zfill(2)}"


def _positional(value: float, digits: str, exp: int) -> str:
    sign = "-" if value < 0 else ""
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    whole = digits[: exp + 1].ljust(exp + 1, "0")
    frac = digits[exp + 1:]
    return f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"


def go_float(value: float) -> str:
    """encoding/json's float64: positional in [1e-6, 1e21), else exponent (``1e-7``, ``1e+21``)."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"unsupported value: {value}")
    if value == 0:
        return "0" if math.copysign(1, value) > 0 else "-0"
    digits, exp = _shortest_digits(value)
    if 1e-6 <= abs(value) < 1e21:
        return _positional(value, digits, exp)
    return _exponent_form(value, digits, exp, min_negative_digits=1)


def go_float_g(value: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64), which go-yaml writes floats with."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0" if math.copysign(1, value) > 0 else "-0"
    digits, exp = _shortest_digits(value)
    if exp < -4 or exp >= 6:  # strconv decides with precision 6 when shortest
        return _exponent_form(value, digits, exp, min_negative_digits=2)
    return _positional(value, digits, exp)


def marshal_indent(value: Any, indent: str = "    ") -> str:
    parts: list[str] = []
    _write(value, parts, indent, 0)
    return "".join(parts)


def _write(value: Any, out: list[str], indent: str, depth: int) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(go_float(value))
    elif isinstance(value, str):
        out.append(go_string(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append("," if i else "")
            out.append("\n" + indent * (depth + 1) + go_string(str(key)) + ": ")
            _write(item, out, indent, depth + 1)
        out.append("\n" + indent * depth + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        out.append("[")
        for i, item in enumerate(value):
            out.append("," if i else "")
            out.append("\n" + indent * (depth + 1))
            _write(item, out, indent, depth + 1)
        out.append("\n" + indent * depth + "]")
    else:
        raise TypeError(f"cannot encode {type(value).__name__}")


def sort_keys(value: Any) -> Any:
    """A JSON tree with every object's keys in Go's map order (bytewise)."""
    if isinstance(value, dict):
        return {k: sort_keys(value[k]) for k in sorted(value, key=lambda k: str(k).encode())}
    if isinstance(value, list):
        return [sort_keys(item) for item in value]
    return value
