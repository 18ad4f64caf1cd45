"""The apimachinery ``Quantity`` format and ``String()`` rendering, for integer byte counts.

The memory manager's error texts print quantities, and hugepage resource names are built from a page
size rendered as a ``BinarySI`` quantity, so both need the exact canonical form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from kubeletemu.quantity import Quantity


class QuantityFormat(StrEnum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"
    # A zero-valued ``resource.Quantity{}`` (a missing map entry) has the empty format.
    UNSET = ""


_BINARY_SUFFIXES = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_SUFFIX = re.compile(r"(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$")


def format_of(quantity: Quantity) -> QuantityFormat:
    """The format ``resource.ParseQuantity`` records for the text a quantity was written as."""
    match = _SUFFIX.search(quantity.text.strip())
    suffix = match.group(1) if match else ""
    if suffix.endswith("i"):
        return QuantityFormat.BINARY_SI
    if suffix[:1] in ("e", "E"):
        return QuantityFormat.DECIMAL_EXPONENT
    return QuantityFormat.DECIMAL_SI


@dataclass(frozen=True)
class GoQuantity:
    """An amount with the format Go keeps beside it; ``add`` follows ``Quantity.Add``."""

    amount: Fraction
    fmt: QuantityFormat = QuantityFormat.DECIMAL_SI

    @classmethod
    def of(cls, quantity: Quantity) -> GoQuantity:
        return cls(quantity.amount, format_of(quantity))

    def add(self, other: GoQuantity) -> GoQuantity:
        """``q.Add(y)``: a zero receiver takes the other operand's format."""
        fmt = other.fmt if self.amount == 0 else self.fmt
        return GoQuantity(self.amount + other.amount, fmt)

    def __str__(self) -> str:
        return canonical_string(self.amount, self.fmt)


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    times = 0
    while value != 0 and value % base == 0:
        value //= base
        times += 1
    return value, times


def canonical_string(amount: Fraction | int, fmt: QuantityFormat) -> str:
    """``Quantity.String()`` (``CanonicalizeBytes``) for the values the memory manager prints."""
    amount = Fraction(amount)
    if amount == 0:
        return "0"
    if fmt == QuantityFormat.BINARY_SI and amount.denominator == 1 and not -1024 < amount < 1024:
        mantissa, exponent = _remove_factors(int(amount), 1024)
        if exponent in _BINARY_SUFFIXES:
            return f"{mantissa}{_BINARY_SUFFIXES[exponent]}"
    if fmt not in (QuantityFormat.DECIMAL_SI, QuantityFormat.DECIMAL_EXPONENT):
        fmt = (
            QuantityFormat.DECIMAL_SI if fmt == QuantityFormat.BINARY_SI else QuantityFormat.DECIMAL_EXPONENT
        )
    # Scale to an integer mantissa with a decimal exponent, then make the exponent a multiple of 3.
    exponent = 0
    while amount.denominator != 1:
        amount *= 10
        exponent -= 1
    mantissa, times = _remove_factors(int(amount), 10)
    exponent += times
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    if fmt == QuantityFormat.DECIMAL_SI and exponent in _DECIMAL_SUFFIXES:
        return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


def hugepage_resource_name(page_size_kib: int) -> str:
    """``HugePageResourceName(NewQuantity(pageSize*1024, BinarySI))``: 2048 KiB → ``hugepages-2Mi``."""
    return "hugepages-" + canonical_string(page_size_kib * 1024, QuantityFormat.BINARY_SI)


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith("hugepages-")
