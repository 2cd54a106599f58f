"""JSON read the way Go's ``encoding/json`` reads it, for the annotations Kueue decodes
with ``json.Unmarshal`` and whose decoding errors it puts into its denials word for word.

Two things differ from Python's ``json``: what counts as JSON (no ``NaN``, no
``Infinity``, nesting up to 10000 levels) and how a failure is worded. Go checks the whole
text's syntax first and names the first offending byte; only then does it decode into the
Go type, reporting the first value of the wrong kind but reading on to the end.

Only what pykueue needs is here: the syntax check, and decoding into a slice of a flat
struct of string and int32 fields (:func:`unmarshal_struct_slice`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

MAX_DEPTH = 10000
_SPACE = frozenset(b" \t\r\n")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_DIGITS = frozenset(b"0123456789")
_ESCAPES = frozenset(b'btnfr\\/"')
_C_ESCAPES = {0x07: r"\a", 0x08: r"\b", 0x0C: r"\f", 0x0A: r"\n", 0x0D: r"\r", 0x09: r"\t", 0x0B: r"\v"}
END_OF_INPUT = "unexpected end of JSON input"

GoKind = Literal["string", "int32"]


class GoJSONError(ValueError):
    """The text of Go's error, as ``err.Error()`` prints it."""


def _quote_byte(c: int) -> str:
    """A byte as Go quotes it in a syntax error (a byte read as a Latin-1 rune)."""
    if c == ord("'"):
        return r"'\''"
    if c == ord('"'):
        return "'\"'"
    if c == ord("\\"):
        return r"'\\'"
    if c in _C_ESCAPES:
        return f"'{_C_ESCAPES[c]}'"
    char = chr(c)
    if c < 0x20 or c == 0x7F:
        return f"'\\x{c:02x}'"
    if char.isprintable():
        return f"'{char}'"
    return f"'\\u{c:04x}'"


class _Syntax:
    """One pass over the bytes; the first problem raises :class:`GoJSONError`."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.i = 0

    def _peek(self) -> int | None:
        return self.data[self.i] if self.i < len(self.data) else None

    def _fail(self, c: int | None, context: str) -> GoJSONError:
        # At the end of the text Go feeds one space: where a space is wrong it names it.
        return GoJSONError(f"invalid character {_quote_byte(ord(' ') if c is None else c)} {context}")

    def _skip_space(self) -> int | None:
        while (c := self._peek()) is not None and c in _SPACE:
            self.i += 1
        return c

    def check(self) -> None:
        stack: list[int] = []  # ord("[") or ord("{") per open container
        expect_value = True
        while True:
            if expect_value:
                c = self._skip_space()
                if c is None:
                    raise GoJSONError(END_OF_INPUT)
                if c in b"[{":
                    stack.append(c)
                    if len(stack) > MAX_DEPTH:
                        raise self._fail(c, "exceeded max depth")
                    self.i += 1
                    close = ord("]") if c == ord("[") else ord("}")
                    after = self._skip_space()
                    if after == close:
                        self.i += 1
                        stack.pop()
                        expect_value = False
                    elif c == ord("{"):
                        self._key()
                    continue
                self._scalar(c)
                expect_value = False
                continue
            if not stack:
                c = self._skip_space()
                if c is not None:
                    raise self._fail(c, "after top-level value")
                return
            c = self._skip_space()
            if c is None:
                raise GoJSONError(END_OF_INPUT)
            in_array = stack[-1] == ord("[")
            self.i += 1
            if c == ord(","):
                if in_array:
                    expect_value = True
                else:
                    self._skip_space()
                    self._key()
                    expect_value = True
            elif c == (ord("]") if in_array else ord("}")):
                stack.pop()
            else:
                raise self._fail(c, "after array element" if in_array else "after object key:value pair")

    def _key(self) -> None:
        """An object key and its colon; leaves the scan before the value."""
        c = self._skip_space()
        if c is None:
            raise GoJSONError(END_OF_INPUT)
        if c != ord('"'):
            raise self._fail(c, "looking for beginning of object key string")
        self._string()
        c = self._skip_space()
        if c is None:
            raise GoJSONError(END_OF_INPUT)
        if c != ord(":"):
            raise self._fail(c, "after object key")
        self.i += 1

    def _scalar(self, c: int) -> None:
        if c == ord('"'):
            self._string()
        elif c == ord("-") or c in _DIGITS:
            self._number()
        elif c in b"tfn":
            word = {ord("t"): "true", ord("f"): "false", ord("n"): "null"}[c]
            self.i += 1
            for want in word[1:]:
                got = self._peek()
                if got != ord(want):
                    raise self._fail(got, f"in literal {word} (expecting '{want}')")
                self.i += 1
        else:
            raise self._fail(c, "looking for beginning of value")

    def _string(self) -> None:
        self.i += 1  # the opening quote
        while True:
            c = self._peek()
            if c is None:
                raise GoJSONError(END_OF_INPUT)
            self.i += 1
            if c == ord('"'):
                return
            if c == ord("\\"):
                e = self._peek()
                if e is None or (e not in _ESCAPES and e != ord("u")):
                    raise self._fail(e, "in string escape code")
                self.i += 1
                if e == ord("u"):
                    for _ in range(4):
                        h = self._peek()
                        if h is None or h not in _HEX:
                            raise self._fail(h, "in \\u hexadecimal character escape")
                        self.i += 1
            elif c < 0x20:
                raise self._fail(c, "in string literal")

    def _digits(self) -> int:
        start = self.i
        while (c := self._peek()) is not None and c in _DIGITS:
            self.i += 1
        return self.i - start

    def _number(self) -> None:
        if self._peek() == ord("-"):
            self.i += 1
            c = self._peek()
            if c is None or c not in _DIGITS:
                raise self._fail(c, "in numeric literal")
        if self._peek() == ord("0"):
            self.i += 1
        else:
            self._digits()
        if self._peek() == ord("."):
            self.i += 1
            if not self._digits():
                raise self._fail(self._peek(), "after decimal point in numeric literal")
        if self._peek() in (ord("e"), ord("E")):
            self.i += 1
            if self._peek() in (ord("+"), ord("-")):
                self.i += 1
            if not self._digits():
                raise self._fail(self._peek(), "in exponent of numeric literal")


def syntax_error(text: str) -> str | None:
    """Go's syntax error for ``text`` (as the UTF-8 bytes Go would read), or None."""
    try:
        _Syntax(text.encode()).check()
    except GoJSONError as exc:
        return str(exc)
    return None


# -- decoding into Go types ---------------------------------------------------------------
# The text is valid (checked first), so a shallow reader suffices: values nested deeper
# than a struct's fields only matter by their kind, and are stepped over.

_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WS = re.compile(r"[ \t\r\n]*")


def _ws(text: str, i: int) -> int:
    match = _WS.match(text, i)
    assert match is not None
    return match.end()


def _kind(c: str) -> str:
    kinds = {"{": "object", "[": "array", '"': "string", "t": "bool", "f": "bool", "n": "null"}
    return kinds.get(c, "number")


def _end_of_string(text: str, i: int) -> int:
    i += 1
    while text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _end_of_value(text: str, i: int) -> int:
    c = text[i]
    if c == '"':
        return _end_of_string(text, i)
    if c in "[{":
        depth = 0
        while True:
            c = text[i]
            if c == '"':
                i = _end_of_string(text, i)
                continue
            if c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    if c in "tfn":
        return i + {"t": 4, "f": 5, "n": 4}[c]
    match = _NUMBER.match(text, i)
    assert match is not None
    return match.end()


def _members(text: str, i: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each element of the array, or each key and value of the object, at i."""
    i = _ws(text, i + 1)
    if text[i] in "]}":
        return
    while True:
        end = _end_of_value(text, i)
        yield i, end
        i = _ws(text, end)
        if text[i] in ",:":
            i = _ws(text, i + 1)
            continue
        return


def _fold(name: str) -> str:
    """Go's case folding of a JSON key against a field name (the long s folds to ``S``)."""
    out = []
    for ch in name:
        folded = ch.lower().upper()
        out.append(folded if len(folded) == 1 else ch)
    return "".join(out)


def _type_error(value: str, go_type: str, struct: str = "", field: str = "") -> str:
    where = f"Go struct field {struct}.{field}" if field else "Go value"
    return f"json: cannot unmarshal {value} into {where} of type {go_type}"


def unmarshal_struct_slice(
    text: str, struct: str, package: str, fields: Mapping[str, GoKind]
) -> list[dict[str, Any]]:
    """``json.Unmarshal`` of ``text`` into ``[]package.struct`` whose JSON fields are
    ``fields`` (name -> Go kind): each element a dict holding every field, unset ones at
    Go's zero value. Raises :class:`GoJSONError` with Go's message."""
    problem = syntax_error(text)
    if problem is not None:
        raise GoJSONError(problem)
    first: list[str] = []

    def note(message: str) -> None:
        if not first:
            first.append(message)

    zero = {"string": "", "int32": 0}
    folded = {_fold(f): f for f in fields}
    start = _ws(text, 0)
    top = _kind(text[start])
    if top == "null":
        return []
    if top != "array":
        raise GoJSONError(_type_error(top, f"[]{package}.{struct}"))
    out: list[dict[str, Any]] = []
    for s, _ in _members(text, start):
        item: dict[str, Any] = {f: zero[k] for f, k in fields.items()}
        out.append(item)
        kind = _kind(text[s])
        if kind == "null":
            continue
        if kind != "object":
            note(_type_error(kind, f"{package}.{struct}"))
            continue
        pairs = list(_members(text, s))
        for (ks, ke), (vs, ve) in zip(pairs[::2], pairs[1::2], strict=True):
            key = json.loads(text[ks:ke])
            name = key if key in fields else folded.get(_fold(key))
            if name is None:
                continue
            vkind = _kind(text[vs])
            if vkind == "null":
                continue
            go_kind = fields[name]
            if go_kind == "string":
                if vkind == "string":
                    item[name] = json.loads(text[vs:ve])
                else:
                    note(_type_error(vkind, "string", struct, name))
            elif vkind != "number":
                note(_type_error(vkind, go_kind, struct, name))
            else:
                literal = text[vs:ve]
                if re.fullmatch(r"-?[0-9]+", literal) and -(2**31) <= int(literal) < 2**31:
                    item[name] = int(literal)
                else:
                    note(_type_error(f"number {literal}", go_kind, struct, name))
    if first:
        raise GoJSONError(first[0])
    return out
