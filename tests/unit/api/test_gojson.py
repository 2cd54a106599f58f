"""JSON read as Go's encoding/json reads it (Go 1.26, the toolchain of Kueue v0.19.2): the
syntax errors Unmarshal reports word for word, and the first type error of decoding into a
slice of a flat struct. Each expected text is what Go printed for that input."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.gojson import GoJSONError, syntax_error, unmarshal_struct_slice

FIELDS: dict[str, Any] = {"topology": "string", "size": "int32"}
STRUCT = "PodsetSliceRequiredTopologyConstraint"


def _decode(text: str) -> list[dict[str, Any]]:
    return unmarshal_struct_slice(text, STRUCT, "v1beta2", FIELDS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("invalid-json", "invalid character 'i' looking for beginning of value"),
        ("", "unexpected end of JSON input"),
        ("  ", "unexpected end of JSON input"),
        ('[{"topology":"a","size":1}', "unexpected end of JSON input"),
        ("[-]", "invalid character ']' in numeric literal"),
        ("[1.]", "invalid character ']' after decimal point in numeric literal"),
        ("[1e]", "invalid character ']' in exponent of numeric literal"),
        ("[1e+", "invalid character ' ' in exponent of numeric literal"),
        ("[tr", "invalid character ' ' in literal true (expecting 'u')"),
        ("[nul", "invalid character ' ' in literal null (expecting 'l')"),
        ('["\\x"]', "invalid character 'x' in string escape code"),
        ('["\\u12"]', "invalid character '\"' in \\u hexadecimal character escape"),
        ('["a\nb"]', "invalid character '\\n' in string literal"),
        ("[1 2]", "invalid character '2' after array element"),
        ('{"a" 1}', "invalid character '1' after object key"),
        ('{"a":1 "b"}', "invalid character '\"' after object key:value pair"),
        ("{1:2}", "invalid character '1' looking for beginning of object key string"),
        ("[1,]", "invalid character ']' looking for beginning of value"),
        ("01", "invalid character '1' after top-level value"),
        ("[1,2]]", "invalid character ']' after top-level value"),
        ("é", "invalid character 'Ã' looking for beginning of value"),
        ("['a']", "invalid character '\\'' looking for beginning of value"),
        ("\x7f", "invalid character '\\x7f' looking for beginning of value"),
        ("[NaN]", "invalid character 'N' looking for beginning of value"),
        ("[" * 10001 + "]" * 10001, "invalid character '[' exceeded max depth"),
    ],
)
def test_syntax_errors_read_as_go_words_them(text: str, message: str) -> None:
    assert syntax_error(text) == message
    with pytest.raises(GoJSONError) as raised:
        _decode(text)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{}", f"json: cannot unmarshal object into Go value of type []v1beta2.{STRUCT}"),
        ("1", f"json: cannot unmarshal number into Go value of type []v1beta2.{STRUCT}"),
        ("[1]", f"json: cannot unmarshal number into Go value of type v1beta2.{STRUCT}"),
        ('[{"topology":1,"size":1}]',
         f"json: cannot unmarshal number into Go struct field {STRUCT}.topology of type string"),
        ('[{"topology":"a","size":"1"}]',
         f"json: cannot unmarshal string into Go struct field {STRUCT}.size of type int32"),
        ('[{"topology":"a","size":1.5}]',
         f"json: cannot unmarshal number 1.5 into Go struct field {STRUCT}.size of type int32"),
        ('[{"topology":"a","size":3000000000}]',
         f"json: cannot unmarshal number 3000000000 into Go struct field {STRUCT}.size of type int32"),
        ('[{"size":"x"},1]',
         f"json: cannot unmarshal string into Go struct field {STRUCT}.size of type int32"),
    ],
)
def test_the_first_type_error_is_reported(text: str, message: str) -> None:
    assert syntax_error(text) is None
    with pytest.raises(GoJSONError) as raised:
        _decode(text)
    assert str(raised.value) == message


def test_decoding_follows_go() -> None:
    assert _decode("null") == []
    assert _decode("[null]") == [{"topology": "", "size": 0}]
    # Keys fold as Go folds them, the last of a repeated key wins, unknown keys are skipped.
    assert _decode('[{"Topology":"a","SIZE":2,"size":3,"x":{"size":"y"}}]') == [{"topology": "a", "size": 3}]
    assert _decode('[{"\u017fize":4,"topology":"b","size":null}]') == [{"topology": "b", "size": 4}]
    assert _decode('[{"topology":"a","size":-2147483648}]') == [{"topology": "a", "size": -(2**31)}]
    assert _decode('\t[{"topology":"\\u00e9","size":1}]\n') == [{"topology": "é", "size": 1}]
