"""kube-scheduler's own scheduling-queue tests (1.32 … 1.36), as rows of
``tests/conformance/kube_scheduler_queue.json``, each run against the port at every version it holds for."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from kubeletemu.fleet.queue.versions import SUPPORTED
from tests.conformance.loader import load, versioned_rows
from tests.fleet.queue.rows import RowFailure, run_row

TABLE = "kube_scheduler_queue"
CASES: list[dict[str, Any]] = load(TABLE)["cases"]


def _label(index: int, row: dict[str, Any]) -> str:
    return f"{index:03d}-{row['test']}-{row['name']}"


@pytest.mark.parametrize(
    ("row", "version"),
    versioned_rows(TABLE, "cases", label=_label, supported=SUPPORTED, component="kube-scheduler"),
)
def test_upstream_row(row: dict[str, Any], version: str) -> None:
    run_row(row, version, CASES)


def test_every_version_has_its_rows_and_sources() -> None:
    data = load(TABLE)
    per_version = Counter(v for row in CASES for v in row["versions"])
    assert dict(per_version) == data["counts"]["per_version"]
    assert data["counts"]["rows"] == len(CASES)
    assert data["counts"]["pairs"] == sum(per_version.values())
    assert [s["versions"] for s in data["version_sources"]] == [[v] for v in SUPPORTED]
    assert all(s["read"] and s["basis"] for s in data["version_sources"])
    assert all(per_version[v] >= 100 for v in SUPPORTED)


def test_a_subtest_runs_once_per_version() -> None:
    keys = Counter((row["test"], row["name"], v) for row in CASES for v in row["versions"])
    assert max(keys.values()) == 1


def _first(test: str, name: str) -> dict[str, Any]:
    return next(r for r in CASES if r["test"] == test and r["name"].startswith(name))


@pytest.mark.parametrize(
    ("test", "name", "index", "change"),
    [
        ("Test_InFlightPods", "Pod and interested events", -1, {"in_flight_events": [{"pod": "pod1"}]}),
        ("TestPriorityQueue_Add", "TestPriorityQueue_Add", 4, {"want": "mpp"}),
        (
            "TestBackOffFlow",
            "step 2",
            5,
            {"pod_backoff": {"info": "info", "since": "ts", "want_ns": 3_000_000_000}},
        ),
        ("TestPriorityQueue_Pop", "Pop pod only from activeQ", -1, {"want": "hpp"}),
    ],
)
def test_an_altered_row_fails(test: str, name: str, index: int, change: dict[str, Any]) -> None:
    """The interpreter checks what a row says: the same row with one expectation changed fails."""
    row = copy.deepcopy(_first(test, name))
    run_row(row, row["versions"][-1], CASES)
    ops = row["ops"]
    position = index if index >= 0 else len(ops) + index
    ops[position] = {**ops[position], **change}
    with pytest.raises(RowFailure):
        run_row(row, row["versions"][-1], CASES)
