"""Kubernetes resource quantities with the apiserver's exact semantics.

A quantity is held as an exact integer count of nano-units plus the *format* it was
written in (BinarySI ``Ki``, DecimalSI ``k``/``m``, DecimalExponent ``e3``), because
Kubernetes prints a quantity back in the family of suffixes it was read with. Values
finer than a nano-unit are rounded away from zero, as the apiserver does.

Quota arithmetic never uses floats: Kueue counts every resource as an int64 "amount",
cpu in milli-cores and everything else in whole base units, rounding up. ``resource_value``
and ``resource_quantity`` convert between the two views with those rules.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import total_ordering
from typing import Any

NANO = 10**9

_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {e: s for s, e in _BINARY_SUFFIXES.items()}

# <sign><digits>[.<digits>]<suffix>, where the suffix is a binary/decimal SI suffix or an
# exponent e<signed integer>. "1E" is exa, "1E3" is an exponent: the regex tries the
# exponent form first only when digits follow.
_QUANTITY_RE = re.compile(
    r"^(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message says why."""


class Format(StrEnum):
    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


def _ceil_div_away(numerator: int, denominator: int) -> int:
    """Integer division rounding away from zero (Kubernetes' RoundUp)."""
    q, r = divmod(abs(numerator), denominator)
    if r:
        q += 1
    return -q if numerator < 0 else q


@total_ordering
class Quantity:
    """An immutable resource quantity. Compare, add and subtract exactly."""

    __slots__ = ("_format", "_nano")

    def __init__(self, nano: int = 0, fmt: Format = Format.DECIMAL_SI) -> None:
        self._nano = nano
        self._format = fmt

    # -- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, value: str | int | float | Quantity) -> Quantity:
        """Parse a quantity string (or a YAML number) the way the apiserver does."""
        if isinstance(value, Quantity):
            return value
        if isinstance(value, bool):
            raise QuantityError(f"quantities must be strings or numbers, not {value!r}")
        if isinstance(value, int):
            return cls(value * NANO, Format.DECIMAL_SI)
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise QuantityError(f"quantity {value!r} is not a finite number")
            value = repr(value)
            if "e" in value or "E" in value:
                # repr gives e.g. 1e-05: rewrite as a plain decimal, precision kept.
                value = format(float(value), "f")
        if not isinstance(value, str):
            raise QuantityError(f"quantities must be strings or numbers, not {type(value).__name__}")
        text = value
        if not text:
            raise QuantityError("quantity is empty")
        match = _QUANTITY_RE.match(text)
        if match is None:
            raise QuantityError(
                f"quantity {text!r} does not match the expected format "
                "'<number><suffix>' (suffixes: n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or e<exponent>)"
            )
        int_part = match.group("int")
        frac_part = match.group("frac") or ""
        if not int_part and not frac_part:
            raise QuantityError(f"quantity {text!r} has no digits")
        suffix = match.group("suffix")
        digits = int((int_part or "0") + frac_part)
        scale10 = -len(frac_part)  # value = digits * 10**scale10 * suffix_multiplier
        if suffix in _BINARY_SUFFIXES:
            fmt = Format.BINARY_SI
            numerator = digits * (1 << _BINARY_SUFFIXES[suffix])
        elif suffix[:1] in ("e", "E") and len(suffix) > 1:
            fmt = Format.DECIMAL_EXPONENT
            exponent = int(suffix[1:])
            if abs(exponent) > 1000:
                raise QuantityError(f"quantity {text!r} has an exponent out of range")
            scale10 += exponent
            numerator = digits
        else:
            fmt = Format.DECIMAL_SI
            scale10 += _DECIMAL_SUFFIXES[suffix]
            numerator = digits
        # nano = numerator * 10**(scale10 + 9), rounded away from zero.
        shift = scale10 + 9
        nano = numerator * 10**shift if shift >= 0 else _ceil_div_away(numerator, 10**-shift)
        if match.group("sign") == "-":
            nano = -nano
        return cls(nano, fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        return cls(milli * 10**6, fmt)

    @classmethod
    def from_int(cls, value: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        return cls(value * NANO, fmt)

    # -- views ----------------------------------------------------------------------------
    @property
    def format(self) -> Format:
        return self._format

    @property
    def nano(self) -> int:
        return self._nano

    def value(self) -> int:
        """Whole units, rounded away from zero (Kubernetes ``Value()``)."""
        return _ceil_div_away(self._nano, NANO)

    def milli_value(self) -> int:
        """Milli-units, rounded away from zero (Kubernetes ``MilliValue()``)."""
        return _ceil_div_away(self._nano, 10**6)

    def is_zero(self) -> bool:
        return self._nano == 0

    def sign(self) -> int:
        return (self._nano > 0) - (self._nano < 0)

    # -- arithmetic (the receiver's format wins, as in Kubernetes; zero adopts the other's)
    def _combine_format(self, other: Quantity) -> Format:
        return other._format if self._nano == 0 and self._format == Format.DECIMAL_SI else self._format

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self._nano + other._nano, self._combine_format(other))

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self._nano - other._nano, self._combine_format(other))

    def __neg__(self) -> Quantity:
        return Quantity(-self._nano, self._format)

    def __mul__(self, factor: int) -> Quantity:
        if not isinstance(factor, int) or isinstance(factor, bool):
            return NotImplemented
        return Quantity(self._nano * factor, self._format)

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self._nano == other._nano
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        return self._nano < other._nano

    def __hash__(self) -> int:
        return hash(self._nano)

    def __bool__(self) -> bool:
        return self._nano != 0

    # -- canonical form -------------------------------------------------------------------
    def __str__(self) -> str:
        if self._nano == 0:
            return "0"
        fmt = self._format
        if fmt == Format.BINARY_SI:
            # Small or fractional binary values are printed as decimal to avoid rounding.
            if abs(self._nano) < 1024 * NANO or self._nano % NANO:
                fmt = Format.DECIMAL_SI
            else:
                return self._binary_string()
        return self._decimal_string(fmt)

    def _binary_string(self) -> str:
        number = self._nano // NANO if self._nano > 0 else -((-self._nano) // NANO)
        exponent = 0
        while exponent < 60 and number % 1024 == 0:
            number //= 1024
            exponent += 10
        return f"{number}{_BINARY_BY_EXPONENT.get(exponent, '') if exponent else ''}"

    def _decimal_string(self, fmt: Format) -> str:
        mantissa = self._nano
        exponent = -9
        while mantissa % 10 == 0:
            mantissa //= 10
            exponent += 1
        # Lower the exponent to a multiple of three (towards -inf), growing the mantissa.
        remainder = exponent % 3
        if remainder:
            mantissa *= 10**remainder
            exponent -= remainder
        if fmt == Format.DECIMAL_EXPONENT:
            return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"
        suffix = _DECIMAL_BY_EXPONENT.get(exponent)
        if suffix is None:
            # Beyond exa: Kubernetes would have to fall back to an exponent too.
            while exponent > 18:
                mantissa *= 1000
                exponent -= 3
            suffix = _DECIMAL_BY_EXPONENT[exponent]
        return f"{mantissa}{suffix}"

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def to_json(self) -> str:
        return str(self)


def parse_quantity(value: Any) -> Quantity:
    """Parse anything a manifest may hold for a quantity (string or number)."""
    return Quantity.parse(value)


ZERO = Quantity(0)

CPU = "cpu"
_BINARY_RESOURCES = ("memory", "ephemeral-storage")
_HUGEPAGES_PREFIX = "hugepages-"


def resource_value(resource: str, quantity: Quantity) -> int:
    """Kueue's int64 amount of a resource: cpu in milli-cores, anything else in units."""
    return quantity.milli_value() if resource == CPU else quantity.value()


def resource_quantity(resource: str, amount: int) -> Quantity:
    """The inverse of :func:`resource_value`, printed in the resource's usual format."""
    if resource == CPU:
        return Quantity.from_milli(amount, Format.DECIMAL_SI)
    if resource in _BINARY_RESOURCES or resource.startswith(_HUGEPAGES_PREFIX):
        return Quantity.from_int(amount, Format.BINARY_SI)
    return Quantity.from_int(amount, Format.DECIMAL_SI)


def canonical(value: Any) -> str:
    """The canonical string of a quantity given as a string or number."""
    return str(Quantity.parse(value))
