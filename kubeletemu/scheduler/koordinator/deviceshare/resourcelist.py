"""``corev1.ResourceList`` arithmetic as ``k8s.io/apiserver/pkg/quota/v1`` does it, on exact amounts.

DeviceShare compares device resources with these helpers; their quirks decide fits: ``less_than_or_equal``
only looks at the names ``b`` holds (a request for a resource the device does not list is satisfied), and
``subtract_non_negative`` keeps every name of either side, clamped at zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

ResourceList = dict[str, Fraction]
ZERO = Fraction(0)


def is_zero(a: Mapping[str, Fraction] | None) -> bool:
    """``IsZero``: no name, or every amount zero."""
    return not a or all(v == 0 for v in a.values())


def add(a: Mapping[str, Fraction] | None, b: Mapping[str, Fraction] | None) -> ResourceList:
    """``Add``: the union of names, amounts summed."""
    out = dict(a or {})
    for name, amount in (b or {}).items():
        out[name] = out.get(name, ZERO) + amount
    return out


def subtract(a: Mapping[str, Fraction] | None, b: Mapping[str, Fraction] | None) -> ResourceList:
    """``Subtract``: names of ``a`` less ``b``; names only in ``b`` become their negation."""
    out = dict(a or {})
    for name, amount in (b or {}).items():
        out[name] = out.get(name, ZERO) - amount
    return out


def subtract_non_negative(a: Mapping[str, Fraction] | None, b: Mapping[str, Fraction] | None) -> ResourceList:
    """``SubtractWithNonNegativeResult``: ``a - b`` clamped at zero; names only in ``b`` are zero."""
    b = b or {}
    out = {name: max(amount - b.get(name, ZERO), ZERO) for name, amount in (a or {}).items()}
    for name in b:
        out.setdefault(name, ZERO)
    return out


def less_than_or_equal(a: Mapping[str, Fraction] | None, b: Mapping[str, Fraction] | None) -> bool:
    """``LessThanOrEqual(a, b)``: for every name ``b`` holds that ``a`` holds too, ``a <= b``."""
    a = a or {}
    return all(a[name] <= amount for name, amount in (b or {}).items() if name in a)


def equals(a: Mapping[str, Fraction] | None, b: Mapping[str, Fraction] | None) -> bool:
    """``Equals``: the same names with equal amounts."""
    a, b = a or {}, b or {}
    return len(a) == len(b) and all(name in b and b[name] == amount for name, amount in a.items())


def mask(a: Mapping[str, Fraction], names: Iterable[str]) -> ResourceList:
    """``Mask``: only the listed names."""
    return {name: a[name] for name in names if name in a}


def value(amount: Fraction) -> int:
    """``Quantity.Value()``: rounded up to an integer."""
    return -((-amount.numerator) // amount.denominator)
