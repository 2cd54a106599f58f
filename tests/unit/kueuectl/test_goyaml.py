"""YAML as kubectl writes it. The expected texts were printed by kubectl itself
(``kubectl create --dry-run=client -o yaml``) for the same objects."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.kueuectl.printers import goyaml

ANNOTATIONS = {
    "plain": "hello world", "empty": "", "bool-word": "yes", "number": "1.5", "octal": "017",
    "time": "2024-01-01T10:00:00Z", "colon-space": "a: b", "leading-star": "*a", "dash": "-", "quote": "it's",
    "tab": "a\tb", "emoji": "smile \U0001f600", "literal": "line one\nline two\n", "literal-strip": "a\nb",
    "literal-keep": "a\n\n", "indented": " a\nb", "space-break": "a \nb", "long": ("word " * 25).strip(),
    "long-quoted": "x: " + "y " * 45, "sexagesimal": "12:30"}
OBJECT: dict[str, Any] = {
    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "x", "namespace": "default", "annotations": ANNOTATIONS,
        "extra": {"a10": 1, "a2": 2, "a_b": 3, "aB": 4, "a-b": 5, "A": 6,
                  "list": [{"k": "v", "n": [1, 2]}, [], {}], "float": 1.5, "big": 1e21, "none": None}}}

EXPECTED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  annotations:
    bool-word: "yes"
    colon-space: 'a: b'
    dash: '-'
    emoji: "smile \\U0001F600"
    empty: ""
    indented: |2-
       a
      b
    leading-star: '*a'
    literal: |
      line one
      line two
    literal-keep: |+
      a

    literal-strip: |-
      a
      b
    long: word word word word word word word word word word word word word word word
      word word word word word word word word word word
    long-quoted: 'x: y y y y y y y y y y y y y y y y y y y y y y y y y y y y y y y
      y y y y y y y y y y y y y y '
    number: "1.5"
    octal: "017"
    plain: hello world
    quote: it's
    sexagesimal: "12:30"
    space-break: "a \\nb"
    tab: "a\\tb"
    time: "2024-01-01T10:00:00Z"
  extra:
    A: 6
    a-b: 5
    a_b: 3
    a2: 2
    a10: 1
    aB: 4
    big: 1e+21
    float: 1.5
    list:
    - k: v
      "n":
      - 1
      - 2
    - []
    - {}
    none: null
  name: x
  namespace: default
"""


def test_an_object_prints_as_kubectl_prints_it() -> None:
    assert goyaml.dump(OBJECT) == EXPECTED


@pytest.mark.parametrize(("value", "expected"), [
    ("true", '"true"'), ("null", '"null"'), ("~", '"~"'), ("0x1F", '"0x1F"'), ("1e3", '"1e3"'),
    ("1e400", "1e400"), (".5", '".5"'), (".x", ".x"), ("2024-02-30", "2024-02-30"),
    ("2024-1-2", '"2024-1-2"'),
    ("<<", "<<"), ("a#b", "a#b"), ("a #b", "'a #b'"), ("x]", "x]"), ("[x]", "'[x]'"), ("?a", "?a"),
    ("---", "'---'"), ("caf\u00e9", "caf\u00e9"), ("x\u2028y", "'x\u2028  y'"), ("  lead", "'  lead'"),
])
def test_scalars_take_go_yamls_style(value: str, expected: str) -> None:
    assert goyaml.dump({"k": value}) == f"k: {expected}\n"


def test_keys_sort_with_digit_runs_as_numbers_and_symbols_before_letters() -> None:
    keys = ["b", "a10", "a9", "a_x", "ab", "a", "a09"]
    assert [line.split(":")[0] for line in goyaml.dump(dict.fromkeys(keys, 1)).splitlines()] == \
        ["a", "a_x", "a9", "a09", "a10", "ab", "b"]


def test_several_documents_are_separated() -> None:
    assert goyaml.dump_all(iter([{"a": 1}, {"b": 2}])) == "a: 1\n---\nb: 2\n"


def test_floats_that_json_writes_as_integers_read_back_as_integers() -> None:
    assert goyaml.dump({"a": 2.0, "b": 1e6 + 0.5}) == "a: 2\nb: 1.0000005e+06\n"
