"""KYAML (``-o kyaml``): kubectl's flow-style YAML that is also close to JSON.

Every document starts with ``---``; mappings and sequences are braced and bracketed one
entry a line with trailing commas; keys are bare unless they would read as another type;
string values are always double-quoted, multi-line ones folded at their line breaks;
numbers, booleans and null are written as the JSON had them. Sequences of only mappings or
sequences are "cuddled": ``[{`` ... ``}, {`` ... ``}]``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pykueue.kueuectl.printers.gojson import go_float
from pykueue.kueuectl.printers.goyaml import is_timestamp

_FOLD = "\\\n"
_NAMED = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
          "\x00": "\\0", "\x1b": "\\e", "\x85": "\\N", "\xa0": "\\_", "\u2028": "\\L", "\u2029": "\\P"}
_SEXAGESIMAL = re.compile(r"[+-]?[1-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")
_GO_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_GO_FLOAT = re.compile(
    r"[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf(inity)?|0[xX][0-9a-fA-F.]+[pP][+-]?\d+)|nan", re.IGNORECASE)


def dump(value: Any) -> str:
    """One document as kubectl's KYAML printer writes it."""
    out: list[str] = ["---\n"]
    _node(value, 0, out)
    out.append("\n")
    return "".join(out)


def _ambiguous(text: str) -> bool:
    """Whether a bare key would read back as something other than a string."""
    lowered = text.lower()
    if lowered in ("null", "~", "", "true", "y", "yes", "on", "false", "n", "no", "off", ".inf", "-.inf",
                   "+.inf", ".nan"):
        return True
    if text in ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"):
        return True
    plain = text.replace("_", "")
    if _GO_INT.fullmatch(plain) and _in_int64(plain):
        return True
    if _GO_FLOAT.fullmatch(plain):
        return True
    return bool(_SEXAGESIMAL.fullmatch(text)) or is_timestamp(text)


def _in_int64(text: str) -> bool:
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-").lower()
    if body.startswith(("0x", "0o", "0b")):
        value = int(body[2:], {"x": 16, "o": 8, "b": 2}[body[1]])
    elif len(body) > 1 and body.startswith("0"):
        value = int(body, 8)
    else:
        value = int(body)
    return -(2**63) <= sign * value < 2**63


def _needs_quotes(text: str) -> bool:
    if not text or _ambiguous(text):
        return True
    last = len(text) - 1
    for i, ch in enumerate(text):
        if ch.isalpha() or ch.isnumeric() or ch == "_":
            continue
        if 0 < i < last and ch in "-./":
            continue
        return True
    return False


def _escaped(ch: str, indent: int, compact: bool, buf: list[str]) -> None:
    if buf[-1].endswith("\n"):
        buf.append("  " * indent + ("\\" if ch.isspace() and ch != "\n" else " "))
    if ch == "\n":
        buf.append("\\n" if compact else "\\n" + _FOLD)
        return
    if ch == "\t":
        buf.append("\\t" if compact else "\t")
        return
    if ch in '"\\':
        buf.append("\\" + ch)
        return
    if ch.isprintable():
        buf.append(ch)
        return
    if ch in _NAMED:
        buf.append(_NAMED[ch])
        return
    code = ord(ch)
    if code < 0x20 or code == 0x7F:
        buf.append(f"\\x{code:02x}")
    elif code < 0x10000:
        buf.append(f"\\u{code:04x}")
    else:
        buf.append(f"\\U{code:08x}")


def _string(text: str, indent: int, out: list[str], *, key: bool = False) -> None:
    multi = "\n" in text
    if key and not multi and not _needs_quotes(text):
        out.append(text)
        return
    fold = multi and not key
    buf = ['"' + (_FOLD if fold else "")]
    for ch in text:
        _escaped(ch, indent, key, buf)
    if fold:
        if not buf[-1].endswith("\n"):
            buf.append(_FOLD)
        buf.append("  " * indent)
    buf.append('"')
    out.append("".join(buf))


def _node(value: Any, indent: int, out: list[str]) -> None:
    if isinstance(value, dict):
        _mapping(value, indent, out)
    elif isinstance(value, list | tuple):
        _sequence(list(value), indent, out)
    elif isinstance(value, str):
        _string(value, indent + 1, out)
    elif value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"unsupported value: {value}")
        out.append(go_float(value))
    else:
        out.append(str(value))


def _mapping(value: dict[str, Any], indent: int, out: list[str]) -> None:
    if not value:
        out.append("{}")
        return
    out.append("{\n")
    for key, item in value.items():
        out.append("  " * (indent + 1))
        _string(str(key), indent + 1, out, key=True)
        out.append(": ")
        _node(item, indent + 1, out)
        out.append(",\n")
    out.append("  " * indent + "}")


def _sequence(items: list[Any], indent: int, out: list[str]) -> None:
    if not items:
        out.append("[]")
        return
    if all(isinstance(item, dict | list | tuple) for item in items):
        out.append("[")
        for i, item in enumerate(items):
            out.append(", " if i else "")
            _node(item, indent, out)
        out.append("]")
        return
    out.append("[\n" + "  " * indent)
    for item in items:
        out.append("  ")
        _node(item, indent + 1, out)
        out.append(",\n" + "  " * indent)
    out.append("]")
