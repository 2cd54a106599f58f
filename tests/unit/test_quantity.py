"""Resource quantities behave exactly as the apiserver's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykueue.api.quantity import (
    Format,
    Quantity,
    QuantityError,
    canonical,
    resource_quantity,
    resource_value,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.5Gi", "1536Mi"),
        ("100m", "100m"),
        ("1e3", "1e3"),
        ("0.1", "100m"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("1.5", "1500m"),
        ("1Ki", "1Ki"),
        ("1024", "1024"),
        ("0.5Ki", "512"),
        ("1.5Ki", "1536"),
        ("2048Mi", "2Gi"),
        ("32Gi", "32Gi"),
        ("0", "0"),
        ("0Gi", "0"),
        ("-1", "-1"),
        ("-100m", "-100m"),
        ("1.5m", "1500u"),
        ("12e6", "12e6"),
        ("1.5e3", "1500"),
        ("1E", "1E"),
        ("1E3", "1e3"),
        ("+5", "5"),
        (".5", "500m"),
        ("5.", "5"),
        ("0.0000000001", "1n"),
        ("1n", "1n"),
        ("1000000k", "1G"),
        ("8", "8"),
        ("110", "110"),
    ],
)
def test_canonical_form(text: str, expected: str) -> None:
    assert canonical(text) == expected


@pytest.mark.parametrize(
    "bad",
    ["", "abc", "1.2.3", "1 Gi", "1gi", "Gi", "1e", "--1", "1Kii", ".", "1e1.5", " 1", "1x"],
)
def test_malformed_is_rejected_with_a_clear_message(bad: str) -> None:
    with pytest.raises(QuantityError) as err:
        Quantity.parse(bad)
    assert "quantity" in str(err.value)


def test_yaml_numbers_parse() -> None:
    assert str(Quantity.parse(2)) == "2"
    assert str(Quantity.parse(0.5)) == "500m"
    assert str(Quantity.parse(1e-05)) == "10u"
    with pytest.raises(QuantityError):
        Quantity.parse(True)
    with pytest.raises(QuantityError):
        Quantity.parse(float("nan"))


def test_formats_are_remembered() -> None:
    assert Quantity.parse("1Gi").format is Format.BINARY_SI
    assert Quantity.parse("1G").format is Format.DECIMAL_SI
    assert Quantity.parse("1e9").format is Format.DECIMAL_EXPONENT


def test_arithmetic_is_exact() -> None:
    a = Quantity.parse("0.1")
    total = Quantity.parse("0")
    for _ in range(10):
        total = total + a
    assert total == Quantity.parse("1")
    assert str(total) == "1"
    assert Quantity.parse("1Gi") - Quantity.parse("512Mi") == Quantity.parse("512Mi")
    assert str(Quantity.parse("1Gi") - Quantity.parse("512Mi")) == "512Mi"
    assert Quantity.parse("1Gi") * 3 == Quantity.parse("3Gi")
    assert Quantity.parse("1Gi") > Quantity.parse("1G")
    assert Quantity.parse("1k") == Quantity.parse("1000")


def test_rounding_of_value_and_milli_value() -> None:
    assert Quantity.parse("100m").value() == 1
    assert Quantity.parse("1.5").value() == 2
    assert Quantity.parse("1n").milli_value() == 1
    assert Quantity.parse("1500m").milli_value() == 1500
    assert Quantity.parse("-1.5").value() == -2


def test_kueue_resource_amounts() -> None:
    assert resource_value("cpu", Quantity.parse("1.5")) == 1500
    assert resource_value("memory", Quantity.parse("1Gi")) == 1 << 30
    assert resource_value("nvidia.com/gpu", Quantity.parse("2")) == 2
    assert str(resource_quantity("cpu", 1500)) == "1500m"
    assert str(resource_quantity("memory", 1 << 30)) == "1Gi"
    assert str(resource_quantity("pods", 5)) == "5"


@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from(["", "m", "k", "Ki", "Mi", "e3"]))
def test_round_trip_through_canonical_string(number: int, suffix: str) -> None:
    q = Quantity.parse(f"{number}{suffix}")
    again = Quantity.parse(str(q))
    assert again == q
    assert str(again) == str(q)
