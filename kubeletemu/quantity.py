"""Kubernetes resource quantities (``k8s.io/apimachinery/pkg/api/resource``), parsed exactly.

Values are kept as exact fractions. ``value()`` and ``milli_value()`` round up, as ``Quantity.Value()`` and
``MilliValue()`` do; the kubelet's "integer CPU request" test is ``value() * 1000 == milli_value()``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_EXPONENT = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_NANO = Fraction(1, 10**9)
MAX_QUANTITY = (1 << 63) - 1
# The longest number a quantity may be written with (apimachinery has no such bound; no real one comes near).
MAX_QUANTITY_CHARS = 64
_TOO_LARGE = "quantities may be no greater than 2^63-1 (9223372036854775807) in magnitude"
# <signedNumber><suffix>, where the number is digits, digits., .digits or digits.digits and the suffix a
# binary SI suffix, a decimal SI suffix or a decimal exponent e<signed int> / E<signed int>.
_QUANTITY = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message is the apimachinery one plus the input."""


class QuantityRangeError(QuantityError):
    """A quantity past what Kubernetes represents (or what the emulator reads): the message says which
    bound, without the input (the caller quotes it)."""


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
        if isinstance(text, int) and abs(text) > MAX_QUANTITY:  # before str(), which refuses 4,300 digits
            raise QuantityRangeError(_TOO_LARGE)
        raw = repr(text) if isinstance(text, float) else str(text)
        raw = raw.strip()
        match = _QUANTITY.match(raw)
        if match is None:
            raise QuantityError(
                f"quantities must match the regular expression "
                f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {raw!r}"
            )
        sign, number, suffix = match.groups()
        amount = _bounded_amount(number, suffix)
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


def _bounded_amount(number: str, suffix: str) -> Fraction:
    """``number`` times ``suffix``, computed only once it is known to be small enough to compute: at most
    ``MAX_QUANTITY_CHARS`` characters of number, and at most 2^63-1 in magnitude, the bound apimachinery's
    ``Quantity`` documents ("no quantity may represent a number greater than 2^63-1 in magnitude"). A
    non-zero amount below a nano unit is one nano unit, as ``ParseQuantity`` rounds it up."""
    if len(number) > MAX_QUANTITY_CHARS:
        raise QuantityRangeError(f"a quantity's number may have at most {MAX_QUANTITY_CHARS} characters")
    whole, _, fraction = number.partition(".")
    if not (whole + fraction).strip("0"):
        return Fraction(0)
    # The decimal order of the number: its digits before the point, or minus the zeros after it.
    order = len(whole.lstrip("0")) or -(len(fraction) - len(fraction.lstrip("0")))
    if suffix in _BINARY:
        amount = Fraction(number) * _BINARY[suffix]  # at most 64 digits times 2^60: cheap
    else:
        if suffix[:1] in ("e", "E") and len(suffix) > 1:
            digits = suffix[1:].lstrip("+-").lstrip("0")
            exponent = int(digits) if len(digits) <= 9 else 10**10  # a long one is past either bound
            exponent = -exponent if suffix[1:2] == "-" else exponent
        else:
            exponent = _DECIMAL_EXPONENT[suffix]
        # 2^63-1 has 19 digits; 13 places below the point is far below the nano unit.
        if order + exponent > 19:
            raise QuantityRangeError(_TOO_LARGE)
        if order + exponent < -12:
            return _NANO
        amount = Fraction(number) * Fraction(10) ** exponent
    if amount > MAX_QUANTITY:
        raise QuantityRangeError(_TOO_LARGE)
    return amount


def _format(amount: Fraction) -> str:
    if amount.denominator == 1:
        return str(amount.numerator)
    milli = amount * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return str(float(amount))
