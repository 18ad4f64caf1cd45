"""The collector's thresholds during a fleet run (:mod:`kubeletemu.fleet.gc_tuning`): the run's while it
runs, the process's own again after it, whether it ends or raises."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeletemu.fleet.engine import run_configuration
from kubeletemu.fleet.gc_tuning import RUN_THRESHOLDS, fewer_collections
from kubeletemu.fleet.spec import load_fleet


@pytest.fixture
def own_thresholds() -> Iterator[tuple[int, int, int]]:
    previous = gc.get_threshold()
    gc.set_threshold(701, 11, 12)  # not the interpreter's defaults, so a reset to them shows
    try:
        yield (701, 11, 12)
    finally:
        gc.set_threshold(*previous)


def test_the_block_runs_at_the_run_thresholds_and_restores_them(own_thresholds: tuple[int, ...]) -> None:
    with fewer_collections():
        assert gc.get_threshold() == RUN_THRESHOLDS
    assert gc.get_threshold() == own_thresholds
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == own_thresholds


def test_a_fleet_run_runs_at_the_run_thresholds(own_thresholds: tuple[int, ...], fleet_dir: Path) -> None:
    seen: list[tuple[int, int, int]] = []
    config = load_fleet(fleet_dir / "fleet.yaml").configurations()[0]
    run_configuration(config, lambda done, total: seen.append(gc.get_threshold()))
    assert seen and set(seen[:-1]) == {RUN_THRESHOLDS}  # the last report comes after the run
    assert gc.get_threshold() == own_thresholds
