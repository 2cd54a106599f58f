"""kubectl's JSONPath templates (``-o jsonpath='{.items[*].metadata.name}'``).

The dialect is client-go's: text outside ``{...}`` is printed as is; inside, ``.field``,
``['key']``, ``[n]``, ``[start:end:step]``, ``[*]``, unions ``[a,b]``, ``..`` recursive
descent, filters ``[?(@.x == "y")]`` and ``{range ...}{end}`` loops. Several results of one
expression are joined by spaces; objects and lists print as compact JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pykueue.kueuectl.printers.gojson import go_float, go_float_g, go_string, marshal_indent, sort_keys


class JSONPathError(Exception):
    pass


@dataclass
class _List:
    nodes: list[Any] = field(default_factory=list)


@dataclass
class _Text:
    text: str


@dataclass
class _Field:
    name: str


@dataclass
class _Identifier:
    name: str


@dataclass
class _Literal:
    value: Any


@dataclass
class _Array:
    # (known, value, derived) for start, end and step.
    params: list[tuple[bool, int, bool]]


@dataclass
class _Filter:
    left: _List
    right: _List
    operator: str


@dataclass
class _Union:
    lists: list[_List]


class _Wildcard:
    pass


class _Recursive:
    pass


_EOF = ""
_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.DOTALL)


class _Parser:
    def __init__(self, text: str) -> None:
        self.input = text
        self.pos = 0
        self.start = 0
        self.width = 0
        self.root = _List()

    def parse(self) -> _List:
        self.parse_text(self.root)
        return self.root

    def next(self) -> str:
        if self.pos >= len(self.input):
            self.width = 0
            return _EOF
        ch = self.input[self.pos]
        self.width = 1
        self.pos += 1
        return ch

    def peek(self) -> str:
        ch = self.next()
        self.pos -= self.width
        return ch

    def consume(self) -> str:
        value = self.input[self.start:self.pos]
        self.start = self.pos
        return value

    def parse_text(self, cur: _List) -> None:
        while True:
            if self.input.startswith("{", self.pos):
                if self.pos > self.start:
                    cur.nodes.append(_Text(self.consume()))
                self.pos += 1
                self.consume()
                action = _List()
                cur.nodes.append(action)
                self.inside(action)
                return
            if self.next() == _EOF:
                break
        if self.pos > self.start:
            cur.nodes.append(_Text(self.consume()))

    def inside(self, cur: _List) -> None:
        while True:
            rest = self.input[self.pos:]
            if rest.startswith("}"):
                self.pos += 1
                self.consume()
                self.parse_text(self.root)
                return
            if rest.startswith("[?("):
                self.parse_filter(cur)
                continue
            if rest.startswith(".."):
                if cur.nodes and isinstance(cur.nodes[-1], _Recursive):
                    raise JSONPathError("invalid multiple recursive descent")
                self.pos += 2
                self.consume()
                cur.nodes.append(_Recursive())
                if _alnum(self.peek()):
                    self.parse_field(cur)
                continue
            ch = self.next()
            if ch == _EOF or ch in "\r\n":
                raise JSONPathError("unclosed action")
            if ch in " @$":
                self.consume()
            elif ch == "[":
                self.parse_array(cur)
            elif ch in "\"'":
                self.parse_quote(cur, ch)
            elif ch == ".":
                self.parse_field(cur)
            elif ch in "+-" or ch.isdecimal():
                self.pos -= 1
                self.parse_number(cur)
            elif _alnum(ch):
                self.pos -= 1
                self.parse_identifier(cur)
            else:
                raise JSONPathError(f"unrecognized character in action: U+{ord(ch):04X} '{ch}'")

    def parse_identifier(self, cur: _List) -> None:
        while not _terminator(self.next()):
            pass
        self.pos -= self.width
        value = self.consume()
        cur.nodes.append(_Literal(value == "true") if value in ("true", "false") else _Identifier(value))

    def parse_number(self, cur: _List) -> None:
        if self.peek() in "+-":
            self.next()
        while True:
            ch = self.next()
            if ch != "." and not ch.isdecimal():
                self.pos -= self.width
                break
        value = self.consume()
        if re.fullmatch(r"[+-]?\d+", value):
            cur.nodes.append(_Literal(int(value)))
            return
        try:
            cur.nodes.append(_Literal(float(value)))
        except ValueError:
            raise JSONPathError(f"cannot parse number {value}") from None

    def parse_array(self, cur: _List) -> None:
        while True:
            ch = self.next()
            if ch in (_EOF, "\n"):
                raise JSONPathError("unterminated array")
            if ch == "]":
                break
        text = self.consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.nodes.append(_Union([_action(f"[{p.strip(' ')}]") for p in parts]))
            return
        key = _DICT_KEY.match(text)
        if key is not None:
            cur.nodes.extend(_action(f".{key.group(1)}").nodes)
            return
        match = _SLICE.match(text)
        if match is None:
            raise JSONPathError(f"invalid array index {text}")
        params: list[tuple[bool, int, bool]] = []
        for i, group in enumerate(match.groups()):
            group = group or ""
            if group:
                number = group[1:] if i > 0 else group
                if i > 0 and not number:
                    params.append((False, 0, False))
                else:
                    try:
                        params.append((True, int(number), False))
                    except ValueError:
                        raise JSONPathError(f"array index {number} is not a number") from None
            elif i == 1:
                params.append((True, params[0][1] + 1, True))
            else:
                params.append((False, 0, False))
        cur.nodes.append(_Array(params))

    def parse_filter(self, cur: _List) -> None:
        self.pos += 3
        self.consume()
        begin = end = False
        pair = ""
        while True:
            ch = self.next()
            if ch in (_EOF, "\n"):
                raise JSONPathError("unterminated filter")
            if ch in "\"'":
                if not begin:
                    begin, pair = True, ch
                    continue
                if self.input[self.pos - 2] != "\\" and ch == pair:
                    end = True
            elif ch == ")" and begin == end:
                break
        if self.next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self.consume()[:-2]
        match = _FILTER.match(text)
        if match is None:
            cur.nodes.append(_Filter(_action(text), _List(), "exists"))
        else:
            cur.nodes.append(_Filter(_action(match.group(1)), _action(match.group(3)), match.group(2)))

    def parse_quote(self, cur: _List, quote: str) -> None:
        while True:
            ch = self.next()
            if ch in (_EOF, "\n"):
                raise JSONPathError("unterminated quoted string")
            if ch == quote and self.input[self.pos - 2] != "\\":
                break
        value = self.consume()
        try:
            body = value[1:-1]
            text = json.loads('"' + body.replace("\\'", "'") + '"') if "\\" in body else body
        except ValueError:
            raise JSONPathError(f"unquote string {value} error invalid syntax") from None
        cur.nodes.append(_Text(text))

    def parse_field(self, cur: _List) -> None:
        self.consume()
        while True:
            ch = self.next()
            if ch == "\\":
                self.next()
            elif _terminator(ch):
                self.pos -= self.width
                break
        value = self.consume()
        cur.nodes.append(_Wildcard() if value == "*" else _Field(value.replace("\\", "")))


def _terminator(ch: str) -> bool:
    return ch in (_EOF, " ", "\t", "\r", "\n", ".", ",", "[", "]", "$", "@", "{", "}")


def _alnum(ch: str) -> bool:
    return bool(ch) and (ch == "_" or ch.isalpha() or ch.isdecimal())


def _action(text: str) -> _List:
    root = _Parser("{" + text + "}").parse()
    first = root.nodes[0]
    assert isinstance(first, _List)
    return first


def parse(template: str) -> list[Any]:
    return _Parser(template).parse().nodes


_MISSING = object()


class _Evaluator:
    def __init__(self, nodes: list[Any], allow_missing: bool) -> None:
        self.nodes = nodes
        self.allow_missing = allow_missing
        self.begin_range = self.in_range = self.end_range = 0
        self.last_end = -1

    def find(self, data: Any, start: int = 0) -> list[list[Any]]:
        full: list[list[Any]] = []
        i = start
        while i < len(self.nodes):
            results = self.walk([data], self.nodes[i])
            if self.end_range > 0 and self.end_range <= self.in_range:
                self.end_range -= 1
                self.last_end = i
                break
            if self.begin_range > 0:
                self.begin_range -= 1
                self.in_range += 1
                for value in results or [None]:
                    nested = self.find(value, i + 1)
                    if results:
                        full.extend(nested)
                self.in_range -= 1
                if self.last_end > i:
                    i = self.last_end
                i += 1
                continue
            full.append(results)
            i += 1
        return full

    def walk(self, values: list[Any], node: Any) -> list[Any]:
        if isinstance(node, _List):
            for child in node.nodes:
                values = self.walk(values, child)
            return values
        if isinstance(node, _Text):
            return [node.text]
        if isinstance(node, _Literal):
            return [node.value for _ in values]
        if isinstance(node, _Field):
            return self.field(values, node.name)
        if isinstance(node, _Array):
            return self.array(values, node)
        if isinstance(node, _Filter):
            return self.filter(values, node)
        if isinstance(node, _Wildcard):
            return [item for value in values if value is not None for item in _children(value)]
        if isinstance(node, _Recursive):
            return self.recursive(values)
        if isinstance(node, _Union):
            return [item for lst in node.lists for item in self.walk(values, lst)]
        if isinstance(node, _Identifier):
            if node.name == "range":
                self.begin_range += 1
                return values
            if node.name == "end":
                if self.in_range > 0:
                    self.end_range += 1
                    return []
                raise JSONPathError("not in range, nothing to end")
            raise JSONPathError(f"unrecognized identifier {node.name}")
        raise JSONPathError(f"unexpected node {node!r}")

    def field(self, values: list[Any], name: str) -> list[Any]:
        results = [value[name] for value in values if isinstance(value, dict) and name in value]
        if not results and values and not self.allow_missing:
            raise JSONPathError(f"{name} is not found")
        return results

    def array(self, values: list[Any], node: _Array) -> list[Any]:
        results: list[Any] = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise JSONPathError(f"{_go_type(value)} is not array or slice")
            length = len(value)
            (known0, start, _), (known1, end, derived1), (known2, step, _) = node.params
            start = start if known0 else 0
            if start < 0:
                start += length
            end = end if known1 else length
            if end < 0 or (end == 0 and derived1):
                end += length
            if end == start:
                return results
            if start >= length or start < 0:
                raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
            if end > length or end < 0:
                raise JSONPathError(f"array index out of bounds: index {end - 1}, length {length}")
            if start > end:
                raise JSONPathError(f"starting index {start} is greater than ending index {end}")
            if known2 and step <= 0:
                raise JSONPathError("step must be > 0")
            results.extend(value[start:end:step if known2 else 1])
        return results

    def recursive(self, values: list[Any]) -> list[Any]:
        results: list[Any] = []
        for value in values:
            if value is None:
                continue
            children = _children(value)
            if children:
                results.append(value)
                results.extend(self.recursive(children))
        return results

    def filter(self, values: list[Any], node: _Filter) -> list[Any]:
        results: list[Any] = []
        for value in values:
            if not isinstance(value, list):
                raise JSONPathError(f"{value} is not array or slice and cannot be filtered")
            for item in value:
                try:
                    lefts = self.walk([item], node.left)
                except JSONPathError:
                    if node.operator == "exists":
                        continue
                    raise
                if node.operator == "exists":
                    if lefts:
                        results.append(item)
                    continue
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise JSONPathError("can only compare one element at a time")
                rights = self.walk([item], node.right)
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathError("can only compare one element at a time")
                if _compare(lefts[0], rights[0], node.operator):
                    results.append(item)
        return results


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return list(value.encode())  # indexing a Go string gives its bytes
    return []


def _go_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, float):
        return "float64"
    return "int64" if isinstance(value, int) else "interface {}"


def _category(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "other"


def _compare(left: Any, right: Any, operator: str) -> bool:
    """text/template's comparisons: operands must be of one basic kind."""
    if _category(left) != _category(right) or _category(left) == "other":
        if operator in ("==", "!=") and _category(left) == _category(right):
            return bool(left == right) == (operator == "==")
        raise JSONPathError("incompatible types for comparison")
    if operator == "==":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    if _category(left) == "bool":
        raise JSONPathError("invalid type for comparison")
    ops = {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}
    if operator not in ops:
        raise JSONPathError(f"unrecognized filter operator {operator}")
    return bool(ops[operator])


def _text(value: Any) -> str:
    """A result as Go's fmt.Fprint writes it; objects and lists as compact JSON."""
    if isinstance(value, dict | list):
        return _compact(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return go_float_g(value)
    return str(value)


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        value = sort_keys(value)
        return "{" + ",".join(go_string(str(k)) + ":" + _compact(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_compact(v) for v in value) + "]"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_string(value)
    return "null" if value is None else "true" if value is True else "false" if value is False else str(value)


def _go_json_data(data: Any) -> Any:
    """Typed objects reach the engine through a JSON round trip: numbers become float64."""
    if isinstance(data, dict):
        return {k: _go_json_data(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_go_json_data(v) for v in data]
    if isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    return data


def execute(nodes: list[Any], data: Any, allow_missing: bool, *, typed: bool = False) -> str:
    evaluator = _Evaluator(nodes, allow_missing)
    out: list[str] = []
    for results in evaluator.find(_go_json_data(data) if typed else data):
        out.append(" ".join(_text(r) for r in results))
    return "".join(out)


def execute_as_json(nodes: list[Any], data: Any, allow_missing: bool, *, typed: bool = False) -> str:
    evaluator = _Evaluator(nodes, allow_missing)
    out: list[str] = []
    for results in evaluator.find(_go_json_data(data) if typed else data):
        out.append(marshal_indent([sort_keys(r) for r in results]) + "\n")
    return "".join(out)
