"""YAML written as kubectl writes it: sigs.k8s.io/yaml over go-yaml v2.

kubectl turns an object into JSON and re-reads that JSON as YAML, so every mapping is
re-ordered by go-yaml's key order (letters after other characters, digit runs compared as
numbers), then emits block style with 2-space indents, sequences not indented under their
key, and strings folded at 80 columns. Which strings need quotes and which quotes follow
go-yaml's rules: a string that would read back as another type (``"true"``, ``"1.5"``,
timestamps) is double-quoted, one that plain style cannot carry (``": "``, a leading ``*``)
single-quoted, and one with unprintable characters double-quoted with escapes. Strings with
line breaks become ``|`` literal blocks when they can.

Only what JSON can hold is supported: mappings with string keys, lists, strings, numbers,
booleans and null.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Iterator
from functools import cmp_to_key
from typing import Any

from pykueue.kueuectl.printers.gojson import go_float, go_float_g

BEST_INDENT = 2
BEST_WIDTH = 80

PLAIN, SINGLE, DOUBLE, LITERAL = "plain", "single", "double", "literal"


def dump(value: Any) -> str:
    """One document, as ``yaml.Marshal`` returns it (ends with a newline)."""
    emitter = _Emitter()
    emitter.node(_as_yaml_value(value), root=True, sequence=False, mapping=False, simple_key=False)
    emitter.write_indent()  # the implicit document end
    return "".join(emitter.out)


# -- JSON -> the values go-yaml reads back ----------------------------------------------------

def _as_yaml_value(value: Any) -> Any:
    """What yaml.Unmarshal of the Go JSON text gives: numbers re-typed from their JSON text
    (a float written ``1`` reads back as an int), mappings re-ordered."""
    if isinstance(value, dict):
        keys = sorted(value, key=cmp_to_key(_compare_keys))
        return [(key, _as_yaml_value(value[key])) for key in keys]
    if isinstance(value, list | tuple):
        return _Sequence(_as_yaml_value(item) for item in value)
    if isinstance(value, float) and not isinstance(value, bool):
        text = go_float(value)
        return int(text) if re.fullmatch(r"-?\d+", text) else value
    return value


class _Sequence(list[Any]):
    """A YAML sequence (mappings are lists of pairs, so sequences need their own type)."""


def _compare_keys(a: str, b: str) -> int:
    """go-yaml's key order for string keys."""
    for i in range(min(len(a), len(b))):
        ca, cb = a[i], b[i]
        if ca == cb:
            continue
        a_letter, b_letter = ca.isalpha(), cb.isalpha()
        if a_letter and b_letter:
            return -1 if ca < cb else 1
        if a_letter or b_letter:
            return 1 if a_letter else -1
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and a[ai].isdecimal():
            an = an * 10 + ord(a[ai]) - ord("0")
            ai += 1
        bi = i
        while bi < len(b) and b[bi].isdecimal():
            bn = bn * 10 + ord(b[bi]) - ord("0")
            bi += 1
        if an != bn:
            return -1 if an < bn else 1
        if ai != bi:
            return -1 if ai < bi else 1
        return -1 if ca < cb else 1
    return (len(a) > len(b)) - (len(a) < len(b))


# -- which strings read back as something else (go-yaml's resolve) -----------------------------

_RESOLVE_WORDS = frozenset({
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
    "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
    "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
    "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<",
})
_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_TIMESTAMPS = (
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})([.,]\d+)?(Z|[+-]\d\d:\d\d)"),
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})([.,]\d+)?()"),
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})()()()()()"),
)


def is_timestamp(text: str) -> bool:
    for pattern in _TIMESTAMPS:
        match = pattern.fullmatch(text)
        if match is None:
            continue
        year, month, day = (int(g) for g in match.groups()[:3])
        clock = [int(g) for g in match.groups()[3:6] if g]
        if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
            continue
        if clock and (clock[0] > 23 or clock[1] > 59 or clock[2] > 59):
            continue
        return True
    return False


def _resolves_to_string(text: str) -> bool:
    hint = _hint(text)
    if not hint:
        return True
    if text in _RESOLVE_WORDS:
        return False
    if hint == "M":
        return True
    if hint == ".":
        return _DOT_FLOAT.fullmatch(text) is None
    if is_timestamp(text):
        return False
    plain = text.replace("_", "")
    if _INT.fullmatch(plain) and _int_in_range(plain):
        return False
    if _YAML_FLOAT.fullmatch(plain) and not math.isinf(float(plain)):
        return False
    return not re.fullmatch(r"-?0b[01]+", plain)


def _hint(text: str) -> str:
    if not text:
        return "N"
    first = text[0]
    if first in "+-":
        return "S"
    if "0" <= first <= "9":
        return "D"
    if first in "yYnNtTfFoO~":
        return "M"
    return "." if first == "." else ""


def _int_in_range(text: str) -> bool:
    """ParseInt(s, 0, 64) or, for positive numbers, ParseUint(s, 0, 64) would succeed."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-").lower()
    if body.startswith(("0x", "0o", "0b")):
        value = int(body[2:], {"x": 16, "o": 8, "b": 2}[body[1]])
    elif len(body) > 1 and body.startswith("0"):
        value = int(body, 8)
    else:
        value = int(body)
    value *= sign
    return -(2**63) <= value < 2**64 and not (text.startswith("-") and value >= 2**63)


def _string_style(text: str) -> str:
    if "\n" in text:
        return LITERAL
    plain_ok = _resolves_to_string(text) and not (text[:1] in "+-0123456789" and _BASE60.fullmatch(text))
    return PLAIN if plain_ok else DOUBLE


def _scalar(value: Any) -> tuple[str, str]:
    """The text of a scalar and the style go-yaml's encoder asks for."""
    if value is None:
        return "null", PLAIN
    if value is True:
        return "true", PLAIN
    if value is False:
        return "false", PLAIN
    if isinstance(value, int):
        return str(value), PLAIN
    if isinstance(value, float):
        text = go_float_g(value)
        return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text), PLAIN
    text = str(value)
    return text, _string_style(text)


# -- character classes (on code points; go-yaml's work on UTF-8 bytes) -------------------------

_BREAKS = "\r\n\x85\u2028\u2029"


def _printable(ch: str) -> bool:
    c = ord(ch)
    return (c == 0x0A or 0x20 <= c <= 0x7E or 0xA0 <= c <= 0xD7FF
            or (0xE000 <= c <= 0xFFFD and c != 0xFEFF))


class _Analysis:
    """What a scalar's characters allow (go-yaml's analyze_scalar)."""

    def __init__(self, value: str) -> None:
        self.multiline = False
        if not value:
            self.flow_plain = False
            self.block_plain = True
            self.single_quoted = True
            self.block = False
            return
        block_ind = flow_ind = line_breaks = special = False
        leading_space = leading_break = trailing_space = trailing_break = False
        break_space = space_break = previous_space = previous_break = False
        if value.startswith(("---", "...")):
            block_ind = flow_ind = True
        preceded_by_ws = True
        last = len(value) - 1
        for i, ch in enumerate(value):
            followed_by_ws = i == last or value[i + 1] in " \t"
            if i == 0:
                if ch in "#,[]{}&*!|>'\"%@`":
                    flow_ind = block_ind = True
                elif ch in "?:":
                    flow_ind = True
                    block_ind = block_ind or followed_by_ws
                elif ch == "-" and followed_by_ws:
                    flow_ind = block_ind = True
            elif ch in ",?[]{}":
                flow_ind = True
            elif ch == ":":
                flow_ind = True
                block_ind = block_ind or followed_by_ws
            elif ch == "#" and preceded_by_ws:
                flow_ind = block_ind = True
            if not _printable(ch):
                special = True
            if ch == " ":
                leading_space = leading_space or i == 0
                trailing_space = trailing_space or i == last
                break_space = break_space or previous_break
                previous_space, previous_break = True, False
            elif ch in _BREAKS:
                line_breaks = True
                leading_break = leading_break or i == 0
                trailing_break = trailing_break or i == last
                space_break = space_break or previous_space
                previous_space, previous_break = False, True
            else:
                previous_space = previous_break = False
            preceded_by_ws = ch in " \t" or ch in _BREAKS
        self.multiline = line_breaks
        self.flow_plain = self.block_plain = self.single_quoted = self.block = True
        if leading_space or leading_break or trailing_space or trailing_break:
            self.flow_plain = self.block_plain = False
        if trailing_space:
            self.block = False
        if break_space:
            self.flow_plain = self.block_plain = self.single_quoted = False
        if space_break or special:
            self.flow_plain = self.block_plain = self.single_quoted = self.block = False
        if line_breaks:
            self.flow_plain = self.block_plain = False
        if flow_ind:
            self.flow_plain = False
        if block_ind:
            self.block_plain = False


_DOUBLE_ESCAPES = {"\x00": "0", "\x07": "a", "\x08": "b", "\t": "t", "\n": "n", "\x0b": "v", "\x0c": "f",
                   "\r": "r", "\x1b": "e", '"': '"', "\\": "\\", "\x85": "N", "\xa0": "_",
                   "\u2028": "L", "\u2029": "P"}


class _Emitter:
    """The block-style subset of go-yaml's emitter state machine."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.column = 0
        self.indent = -1
        self.indents: list[int] = []
        self.whitespace = True
        self.indention = True
        self.flow_level = 0
        self.mapping_context = False
        self.simple_key_context = False

    # -- output primitives
    def put(self, text: str) -> None:
        self.out.append(text)
        self.column += len(text)

    def put_break(self) -> None:
        self.out.append("\n")
        self.column = 0

    def write_break(self, ch: str) -> None:
        if ch == "\n":
            self.put_break()
        else:
            self.out.append(ch)
            self.column = 0

    def write_indent(self) -> None:
        indent = max(self.indent, 0)
        if not self.indention or self.column > indent or (self.column == indent and not self.whitespace):
            self.put_break()
        if self.column < indent:
            self.put(" " * (indent - self.column))
        self.whitespace = True
        self.indention = True

    def write_indicator(self, indicator: str, need_whitespace: bool, is_whitespace: bool,
                        is_indention: bool) -> None:
        if need_whitespace and not self.whitespace:
            self.put(" ")
        self.put(indicator)
        self.whitespace = is_whitespace
        self.indention = self.indention and is_indention

    def increase_indent(self, flow: bool, indentless: bool) -> None:
        self.indents.append(self.indent)
        if self.indent < 0:
            self.indent = BEST_INDENT if flow else 0
        elif not indentless:
            self.indent += BEST_INDENT

    def pop_indent(self) -> None:
        self.indent = self.indents.pop()

    # -- nodes
    def node(self, value: Any, *, root: bool, sequence: bool, mapping: bool, simple_key: bool) -> None:
        del root, sequence  # only matter to go-yaml for document markers we never write
        self.mapping_context = mapping
        self.simple_key_context = simple_key
        if isinstance(value, _Sequence):
            self.sequence(value)
        elif isinstance(value, list):
            self.mapping(value)
        else:
            text, style = _scalar(value)
            self.scalar(text, style)

    def sequence(self, items: _Sequence) -> None:
        if self.flow_level or not items:
            self.write_indicator("[", True, True, False)
            self.write_indicator("]", False, False, False)  # only ever empty
            return
        self.increase_indent(False, self.mapping_context and not self.indention)
        for item in items:
            self.write_indent()
            self.write_indicator("-", True, False, True)
            self.node(item, root=False, sequence=True, mapping=False, simple_key=False)
        self.pop_indent()

    def mapping(self, pairs: list[tuple[str, Any]]) -> None:
        if self.flow_level or not pairs:
            self.write_indicator("{", True, True, False)
            self.write_indicator("}", False, False, False)
            return
        self.increase_indent(False, False)
        for key, value in pairs:
            self.write_indent()
            key_text, _ = _scalar(key)
            analysis = _Analysis(key_text)
            if not analysis.multiline and len(key_text.encode()) <= 128:
                self.node(key, root=False, sequence=False, mapping=True, simple_key=True)
                self.write_indicator(":", False, False, False)
            else:
                self.write_indicator("?", True, False, True)
                self.node(key, root=False, sequence=False, mapping=True, simple_key=False)
                self.write_indent()
                self.write_indicator(":", True, False, True)
            self.node(value, root=False, sequence=False, mapping=True, simple_key=False)
        self.pop_indent()

    def scalar(self, text: str, requested: str) -> None:
        analysis = _Analysis(text)
        style = requested
        if self.simple_key_context and analysis.multiline:
            style = DOUBLE
        if style == PLAIN:
            plain_ok = analysis.flow_plain if self.flow_level else analysis.block_plain
            if not plain_ok:
                style = SINGLE
            if not text and (self.flow_level or self.simple_key_context):
                style = SINGLE
        if style == SINGLE and not analysis.single_quoted:
            style = DOUBLE
        if style == LITERAL and (not analysis.block or self.flow_level or self.simple_key_context):
            style = DOUBLE
        self.increase_indent(True, False)
        allow_breaks = not self.simple_key_context
        if style == PLAIN:
            self.write_plain(text, allow_breaks)
        elif style == SINGLE:
            self.write_single(text, allow_breaks)
        elif style == DOUBLE:
            self.write_double(text, allow_breaks)
        else:
            self.write_literal(text)
        self.pop_indent()

    # -- scalar writers
    def write_plain(self, value: str, allow_breaks: bool) -> None:
        if not self.whitespace:
            self.put(" ")
        spaces = breaks = False
        for i, ch in enumerate(value):
            if ch == " ":
                nxt = value[i + 1] if i + 1 < len(value) else ""
                if allow_breaks and not spaces and self.column > BEST_WIDTH and nxt != " ":
                    self.write_indent()
                else:
                    self.put(ch)
                spaces = True
            elif ch in _BREAKS:
                if not breaks and ch == "\n":
                    self.put_break()
                self.write_break(ch)
                self.indention = True
                breaks = True
            else:
                if breaks:
                    self.write_indent()
                self.put(ch)
                self.indention = False
                spaces = breaks = False
        self.whitespace = False
        self.indention = False

    def write_single(self, value: str, allow_breaks: bool) -> None:
        self.write_indicator("'", True, False, False)
        spaces = breaks = False
        last = len(value) - 1
        for i, ch in enumerate(value):
            if ch == " ":
                nxt = value[i + 1] if i < last else ""
                if allow_breaks and not spaces and self.column > BEST_WIDTH and 0 < i < last and nxt != " ":
                    self.write_indent()
                else:
                    self.put(ch)
                spaces = True
            elif ch in _BREAKS:
                if not breaks and ch == "\n":
                    self.put_break()
                self.write_break(ch)
                self.indention = True
                breaks = True
            else:
                if breaks:
                    self.write_indent()
                self.put("''" if ch == "'" else ch)
                self.indention = False
                spaces = breaks = False
        self.write_indicator("'", False, False, False)
        self.whitespace = False
        self.indention = False

    def write_double(self, value: str, allow_breaks: bool) -> None:
        self.write_indicator('"', True, False, False)
        spaces = False
        bom = value.startswith("\ufeff")
        last = len(value) - 1
        for i, ch in enumerate(value):
            if not _printable(ch) or bom or ch in _BREAKS or ch in '"\\':
                self.put("\\" + _double_escape(ch))
                spaces = False
            elif ch == " ":
                if allow_breaks and not spaces and self.column > BEST_WIDTH and 0 < i < last:
                    self.write_indent()
                    if value[i + 1] == " ":
                        self.put("\\")
                else:
                    self.put(ch)
                spaces = True
            else:
                self.put(ch)
                spaces = False
        self.write_indicator('"', False, False, False)
        self.whitespace = False
        self.indention = False

    def write_literal(self, value: str) -> None:
        self.write_indicator("|", True, False, False)
        hints = ""
        if value and (value[0] == " " or value[0] in _BREAKS):
            hints += str(BEST_INDENT)
        if not value or value[-1] not in _BREAKS:
            hints += "-"
        elif len(value) == 1 or value[-2] in _BREAKS:
            hints += "+"
        if hints:
            self.write_indicator(hints, False, False, False)
        self.put_break()
        self.indention = True
        self.whitespace = True
        breaks = True
        for ch in value:
            if ch in _BREAKS:
                self.write_break(ch)
                self.indention = True
                breaks = True
            else:
                if breaks:
                    self.write_indent()
                    breaks = False
                self.put(ch)
                self.indention = False


def _double_escape(ch: str) -> str:
    named = _DOUBLE_ESCAPES.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code <= 0xFF:
        return f"x{code:02X}"
    if code <= 0xFFFF:
        return f"u{code:04X}"
    return f"U{code:08X}"


def dump_all(values: Iterator[Any]) -> str:
    """Documents separated by ``---``, as kubectl's YAML printer writes several objects."""
    return "---\n".join(dump(value) for value in values)
