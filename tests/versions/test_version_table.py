"""The version table of docs/kubelet-versions.md is generated from the data
(``python -m kubeletemu.versions.table``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletemu.versions import (
    SUPPORTED,
    FeatureGateError,
    effective_gates,
    feature_gates,
    validate_feature_gates,
)
from kubeletemu.versions.behaviours import behaviours, table_markdown
from kubeletemu.versions.derived_rows import TABLE_GATES, derived_rows
from kubeletemu.versions.table import BEGIN, END, TableMarkersError, main, with_table

PAGE = Path(__file__).resolve().parents[2] / "docs" / "kubelet-versions.md"


def test_documented_table_matches_the_data() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert with_table(text, table_markdown(), str(PAGE)) == text, (
        "docs/kubelet-versions.md's version table is out of date: run python -m kubeletemu.versions.table"
    )


def test_default_page_is_the_documented_one() -> None:
    assert main(["--check"]) == 0


def test_table_has_a_row_per_behaviour_and_derived_row() -> None:
    lines = table_markdown().splitlines()
    assert lines[0] == "| behaviour | 1.33 | 1.34 | 1.35 | 1.36 | 1.37 | master |"
    assert len(lines) == 2 + len(behaviours()) + len(derived_rows(SUPPORTED))
    assert all(line.count(" | ") == len(SUPPORTED) for line in lines[2:])


def test_derived_rows_follow_the_policy_option_and_gate_tables() -> None:
    rows = {row.label: row.cells for row in derived_rows(SUPPORTED)}
    assert rows["CPU Manager: option `prefer-align-cpus-by-uncorecache`"] == (
        "alpha",
        "beta (kubernetes#132970)",
        "beta",
        "GA (kubernetes#137055)",
        "GA",
        "GA",
    )
    assert rows["feature gate `MemoryManager`"] == (
        "GA, locked on",
        "GA, locked on",
        "GA, locked on",
        "removed (kubernetes#136381)",
        "removed",
        "removed",
    )
    assert rows["feature gate `PodLevelResourceManagers`"] == (
        "—",
        "—",
        "—",
        "alpha, off (kubernetes#134768)",
        "beta, off (kubernetes#140573, kubernetes#141209)",
        "beta, off",
    )
    # A gate step without a known PR cites the gate's KEP.
    assert rows["feature gate `InPlacePodVerticalScaling`"][2] == "GA, locked on (KEP-1287)"
    # Only gates that change within the range get a row; each row's cells come from the gate data.
    for name in TABLE_GATES:
        specs = [feature_gates(v).get(name) for v in SUPPORTED]
        changes = len({None if s is None else (s.stage, s.default, s.locked) for s in specs}) > 1
        assert (f"feature gate `{name}`" in rows) == changes


def _observed(version: str, name: str) -> tuple[bool | None, bool, bool, bool | None]:
    """What a kubelet of ``version`` does with gate ``name``: its default (None when unknown), whether
    it starts with the gate set on, and set off, and its value under ``AllBeta: true`` (an alpha and a
    beta gate, both off, differ only there)."""

    def starts(value: bool) -> bool:
        try:
            validate_feature_gates(version, {name: value})
        except FeatureGateError:
            return False
        return True

    spec = feature_gates(version).get(name)
    all_beta = effective_gates(version, {"AllBeta": True}).get(name)
    return (None if spec is None else spec.default), starts(True), starts(False), all_beta


@pytest.mark.parametrize("name", TABLE_GATES)
def test_each_gate_row_change_shows_on_both_sides(name: str) -> None:
    """Every cell of a gate row that differs from the version before: the two kubelets behave differently
    at start-up — another default, a lock refusing the other value, a name the older or newer kubelet does
    not know."""
    row = {r.label: r.cells for r in derived_rows(SUPPORTED)}.get(f"feature gate `{name}`")
    if row is None:
        return  # no change within the range: no row (checked above)
    changed = 0
    for index in range(1, len(SUPPORTED)):
        before, after = SUPPORTED[index - 1], SUPPORTED[index]
        if row[index].split(" (")[0] == row[index - 1].split(" (")[0]:
            continue
        changed += 1
        assert _observed(before, name) != _observed(after, name), (name, before, after)
    assert changed


def test_with_table_replaces_between_markers_only() -> None:
    text = f"intro\n{BEGIN}\nold\n{END}\noutro\n"
    assert with_table(text, "| t |\n") == f"intro\n{BEGIN}\n\n| t |\n\n{END}\noutro\n"


@pytest.mark.parametrize("text", ["no markers\n", f"{END}\n{BEGIN}\n", f"{BEGIN}\n{BEGIN}\n{END}\n"])
def test_with_table_refuses_bad_markers(text: str) -> None:
    with pytest.raises(TableMarkersError, match=r"x\.md: "):
        with_table(text, "| t |\n", "x.md")


def test_main_rewrites_then_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# r\n{BEGIN}\nstale\n{END}\n", encoding="utf-8")
    assert main(["--readme", str(readme), "--check"]) == 1
    assert main(["--readme", str(readme)]) == 0
    assert table_markdown() in readme.read_text(encoding="utf-8")
    assert main(["--readme", str(readme), "--check"]) == 0
    assert "current" in capsys.readouterr().out
    assert main(["--readme", str(tmp_path / "missing.md")]) == 2
