"""Reading the JSON-ready results the charts are drawn from, with errors that name the entry and field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


class PlotInputError(ValueError):
    """A result handed to a chart lacks a field or holds a value of the wrong type."""


def field(entry: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(entry, Mapping):
        raise PlotInputError(f"{where}: expected an object, got {type(entry).__name__}")
    if key not in entry:
        raise PlotInputError(f"{where}: missing field {key!r}")
    return entry[key]


def number(entry: Mapping[str, Any], key: str, where: str) -> float:
    value = field(entry, key, where)
    # bool is an int subclass: a true/false here is a producer's bug, not a count.
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise PlotInputError(f"{where}: {key}: expected a number, got {value!r}")
    return float(value)


def optional_fraction(value: Any, where: str) -> float:
    """A utilisation fraction 0..1, or NaN for None (nothing accounted: drawn as an empty cell)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlotInputError(f"{where}: expected a number or null, got {value!r}")
    return float(value)


def name_of(entry: Mapping[str, Any], index: int, kind: str) -> str:
    """``kind`` ``index`` (``name``) for messages; the name alone for labels once it is known to exist."""
    return f"{kind} {index}" + (
        f" ({entry['name']})" if isinstance(entry, Mapping) and "name" in entry else ""
    )
