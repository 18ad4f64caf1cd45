"""Kubernetes resource quantities (``k8s.io/apimachinery/pkg/api/resource``), parsed exactly.

Values are kept as exact fractions. ``value()`` and ``milli_value()`` round up, as ``Quantity.Value()`` and
``MilliValue()`` do; the kubelet's "integer CPU request" test is ``value() * 1000 == milli_value()``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# <signedNumber><suffix>, where the number is digits, digits., .digits or digits.digits and the suffix a
# binary SI suffix, a decimal SI suffix or a decimal exponent e<signed int> / E<signed int>.
_QUANTITY = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message is the apimachinery one plus the input."""


class Quantity:
    """An exact resource amount with the string it was written as."""

    __slots__ = ("amount", "text")

    def __init__(self, amount: Fraction | int, text: str | None = None) -> None:
        self.amount = Fraction(amount)
        self.text = text if text is not None else _format(self.amount)

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse ``500m``, ``1Gi``, ``1e3``, ``0.5``, ``1k`` (decimal) vs ``1Ki`` (binary)...

        Numbers given as YAML ints/floats are accepted as their decimal text, as ``kubectl`` does.
        """
        if isinstance(text, bool):
            raise QuantityError(f"quantities must match the regular expression: {text!r}")
        raw = repr(text) if isinstance(text, float) else str(text)
        raw = raw.strip()
        match = _QUANTITY.match(raw)
        if match is None:
            raise QuantityError(
                f"quantities must match the regular expression "
                f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {raw!r}"
            )
        sign, number, suffix = match.groups()
        amount = Fraction(number)
        if suffix in _BINARY:
            amount *= _BINARY[suffix]
        elif suffix[:1] in ("e", "E") and len(suffix) > 1:
            amount *= Fraction(10) ** int(suffix[1:])
        else:
            amount *= _DECIMAL[suffix]
        if sign == "-":
            amount = -amount
        return cls(amount, raw)

    def value(self) -> int:
        """``Value()``: the amount rounded up to an integer."""
        return math.ceil(self.amount)

    def milli_value(self) -> int:
        """``MilliValue()``: thousandths, rounded up."""
        return math.ceil(self.amount * 1000)

    def is_zero(self) -> bool:
        return self.amount == 0

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.amount + other.amount)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.amount == other.amount

    def __lt__(self, other: Quantity) -> bool:
        return self.amount < other.amount

    def __le__(self, other: Quantity) -> bool:
        return self.amount <= other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"

    def __str__(self) -> str:
        return self.text


def _format(amount: Fraction) -> str:
    if amount.denominator == 1:
        return str(amount.numerator)
    milli = amount * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return str(float(amount))
