"""The ``versions`` field of the node-side conformance tables and the loader that runs rows per version."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.topologymanager import PolicyOptions, PolicyOptionsError
from kubeletemu.versions import SUPPORTED
from tests.conformance import loader
from tests.conformance.loader import load, row_versions, version_kwargs, versioned_rows

NODE_TABLES = (
    "tm_merge",
    "tm_admit",
    "tm_options",
    "tm_scope",
    "cpu_hints",
    "cpu_assignment",
    "memory_hints",
    "device_hints",
    "bitmask",
    "numa_info",
    "podfingerprint",
)


def _row_sections(table: str) -> list[str]:
    """Every section that is a list of row objects (``not_vectors`` are values that must never match, not
    rows of an upstream table)."""
    data = load(table)
    return [
        key
        for key, value in data.items()
        if isinstance(value, list)
        and value
        and all(isinstance(r, dict) for r in value)
        and key != "not_vectors"
    ]


@pytest.mark.parametrize("table", NODE_TABLES)
def test_every_row_carries_valid_versions(table: str) -> None:
    sections = _row_sections(table)
    assert sections, table
    for section in sections:
        for index, row in enumerate(load(table)[section]):
            assert row_versions(row, f"{table}.json {section}[{index}]")


@pytest.mark.parametrize("table", NODE_TABLES)
def test_versions_documented_and_sourced(table: str) -> None:
    data = load(table)
    encoding = data["encoding"]
    text = encoding["versions"] if isinstance(encoding, dict) else encoding
    assert "versions:" in text
    covered = [v for entry in data["version_sources"] for v in entry["versions"]]
    # Each supported version is accounted for by what was read (an entry may cover one section only).
    assert set(covered) == set(SUPPORTED)
    assert all(entry["read"] and entry["basis"] for entry in data["version_sources"])


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        (None, "want a non-empty list"),
        ([], "want a non-empty list"),
        ("master", "want a non-empty list"),
        (["1.32"], "'1.32' is not a supported kubelet version"),
        (["1.34", "1.33"], "oldest first"),
        (["1.33", "1.33"], "each version once"),
    ],
)
def test_bad_versions_name_the_row(versions: Any, message: str) -> None:
    row = {} if versions is None else {"versions": versions}
    with pytest.raises(ValueError, match=r"^t\.json cases\[4\]: versions: ") as info:
        row_versions(row, "t.json cases[4]")
    assert message in str(info.value)


def test_one_param_per_row_and_version() -> None:
    params = versioned_rows("tm_options", "new_policy_options_cases")
    rows = load("tm_options")["new_policy_options_cases"]
    assert len(params) == sum(len(r["versions"]) for r in rows)
    assert {p.values[1] for p in params} == set(SUPPORTED)
    assert all(p.id.startswith(f"{p.values[1]}-") for p in params)


def test_pending_pairs_run_as_strict_xfail(monkeypatch: pytest.MonkeyPatch) -> None:
    name = load("tm_options")["new_policy_options_cases"][0]["name"]
    monkeypatch.setattr(loader, "PENDING", {("tm_options", "new_policy_options_cases", name, "1.34"): "x.y"})
    params = versioned_rows("tm_options", "new_policy_options_cases")
    marked = [p for p in params if p.marks]
    assert [(p.values[0]["name"], p.values[1]) for p in marked] == [(name, "1.34")]
    (mark,) = marked[0].marks
    assert mark.name == "xfail" and mark.kwargs == {"strict": True, "reason": "waits for behaviour x.y"}


def test_version_kwargs_follows_the_signature() -> None:
    def with_version(a: int, kubelet_version: str = "master") -> None: ...
    def without(a: int) -> None: ...

    assert version_kwargs(with_version, "1.34") == {"kubelet_version": "1.34"}
    assert version_kwargs(without, "1.34") == {}


def _split_rows() -> list[Any]:
    out = []
    for section in ("new_policy_options_cases", "check_policy_option_available_cases"):
        for row in load("tm_options")[section]:
            if row["versions"] != list(SUPPORTED):
                out.append(pytest.param(section, row, id=f"{section}-{row.get('name', row.get('option'))}"))
    return out


def _outcome(section: str, row: dict[str, Any], version: str) -> bool:
    """Whether the input is accepted by the kubelet of ``version``."""
    try:
        PolicyOptions.from_map(
            {row["option"]: "8"} if section.startswith("check") else row["policy_options"],
            row["feature_gates"],
            kubelet_version=version,
        )
    except PolicyOptionsError:
        return False
    return True


@pytest.mark.parametrize(("section", "row"), _split_rows())
def test_version_limited_rows_differ_outside_their_versions(section: str, row: dict[str, Any]) -> None:
    """A row limited to some versions is a real difference: outside them the emulator answers otherwise."""
    inside = {_outcome(section, row, v) for v in row["versions"]}
    outside = {_outcome(section, row, v) for v in SUPPORTED if v not in row["versions"]}
    assert len(inside) == len(outside) == 1 and inside != outside
