"""Kubernetes quantities: exact parsing and the rounding of Value()/MilliValue()."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubeletemu.quantity import Quantity, QuantityError


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("500m", Fraction(1, 2)),
        ("1Gi", Fraction(2**30)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("0.5", Fraction(1, 2)),
        ("1k", Fraction(1000)),
        ("1Ki", Fraction(1024)),
        ("1M", Fraction(10**6)),
        ("1Mi", Fraction(2**20)),
        ("1E", Fraction(10**18)),
        ("2.5Gi", Fraction(5 * 2**29)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("100n", Fraction(1, 10**7)),
        ("-1", Fraction(-1)),
        ("+4", Fraction(4)),
        ("1e-3", Fraction(1, 1000)),
        (4, Fraction(4)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse_exact(text: str | int | float, amount: Fraction) -> None:
    assert Quantity.parse(text).amount == amount


@pytest.mark.parametrize("text", ["", "abc", "1Gb", "1.2.3", "--1", "1 Gi", "Gi", "1e", "1ki", "1KI", "e3"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        Quantity.parse(text)


def test_bool_is_not_a_quantity() -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(True)


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1", 1, 1000),
        ("500m", 1, 500),
        ("1.0001", 2, 1001),
        ("0.0001", 1, 1),
        ("2", 2, 2000),
        ("1500m", 2, 1500),
    ],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    q = Quantity.parse(text)
    assert (q.value(), q.milli_value()) == (value, milli)


def test_integer_cpu_rule() -> None:
    # The kubelet's static policy gives exclusive CPUs only when Value()*1000 == MilliValue().
    assert all(Quantity.parse(t).value() * 1000 == Quantity.parse(t).milli_value() for t in ("2", "2000m"))
    assert all(Quantity.parse(t).value() * 1000 != Quantity.parse(t).milli_value() for t in ("1500m", "0.5"))
