"""Loads the conformance tables copied from ../shared/conformance (kubelet unit-test vectors)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent


@cache
def load(name: str) -> dict[str, Any]:
    with open(HERE / f"{name}.json", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def rows(name: str, section: str, key: str = "name") -> list[Any]:
    """``pytest.param`` per row, with an id from the row's name (made unique by position)."""
    out = []
    for index, row in enumerate(load(name)[section]):
        label = str(row.get(key, row.get("op", ""))) if isinstance(row, dict) else str(index)
        out.append(pytest.param(row, id=f"{index:03d}-{label}"[:120]))
    return out
