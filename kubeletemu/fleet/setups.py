"""The terms a fleet's output counts in: a **setup** is one scheduler with its cache and periods (a
configuration's name without its ``/seed=N``), a **run** is one setup under one seed; the matrix gives
setups × seeds runs. The table, the progress bar, the interrupt line and the charts all count so.

Setup names grow with the matrix (``reserve-shared/overreserve/resync=5s/exporter=10s``); for people, a
``key=value`` part that has one value wherever it appears is said once above the table or chart instead
of in every name (:func:`short_names`). ``-o json`` keeps the full names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubeletemu.fleet.stats import base_name


@dataclass(frozen=True)
class ShortNames:
    """Each setup's name for people, and the ``key=value`` parts left out of them (in first-seen order)."""

    names: dict[str, str]
    shared: tuple[str, ...]

    def note(self) -> str:
        """``"every setup that has them: resync=5s, exporter=10s (not repeated in its name)"``, or empty
        when nothing was left out."""
        if not self.shared:
            return ""
        return f"every setup that has them: {', '.join(self.shared)} (not repeated in its name)"


def short_names(setups: Sequence[str]) -> ShortNames:
    """Leaves out of every setup's name each ``key=value`` part (after the scheduler's name) whose key has
    that one value in every setup that has it; the names stay as they are if two would then coincide."""
    values: dict[str, set[str]] = {}
    for setup in setups:
        for part in setup.split("/")[1:]:
            key, equals, _ = part.partition("=")
            if equals:
                values.setdefault(key, set()).add(part)
    shared = tuple(next(iter(parts)) for parts in values.values() if len(parts) == 1)
    names = {setup: _without(setup, shared) for setup in setups}
    if len(set(names.values())) < len(names):
        return ShortNames({setup: setup for setup in setups}, ())
    return ShortNames(names, shared)


def _without(setup: str, shared: Sequence[str]) -> str:
    first, *rest = setup.split("/")
    return "/".join([first, *(part for part in rest if part not in shared)])


def runs_text(names: Sequence[str]) -> str:
    """``6 setups × 5 seeds = 30 runs`` for runs named ``setup/seed=N`` (each setup with as many seeds), or
    ``6 setups, 28 runs`` when their seed counts differ (an interrupted fleet)."""
    counts: dict[str, int] = {}
    for name in names:
        counts[base_name(name)] = counts.get(base_name(name), 0) + 1
    setups = f"{len(counts)} setup{'' if len(counts) == 1 else 's'}"
    runs = f"{len(names)} run{'' if len(names) == 1 else 's'}"
    seeds = set(counts.values())
    if len(seeds) != 1:
        return f"{setups}, {runs}"
    [each] = seeds
    return f"{setups} × {each} seed{'' if each == 1 else 's'} = {runs}"
