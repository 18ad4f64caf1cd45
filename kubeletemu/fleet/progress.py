"""Progress of a fleet on a terminal, drawn with tqdm: one bar for the runs done (``runs (6 setups × 5
seeds)``, :mod:`kubeletemu.fleet.setups`), and one bar of pods per run going on (opened at its first
report, closed when it finishes).

Every update comes from the thread that runs ``parallel.run_many``'s loop (reports from worker processes
or Ray tasks are relayed to it), so no bar is ever touched from two threads. tqdm 4.70.1 behaviour relied
on: ``position`` picks the screen line below the first bar, ``leave=False`` erases a bar when it closes,
and ``refresh()`` draws at once whatever ``mininterval`` says.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Never, TextIO

from tqdm import tqdm

from kubeletemu.fleet.setups import runs_text

if TYPE_CHECKING:
    # A bar that counts without iterating anything (tqdm is generic only in its stubs).
    Bar = tqdm[Never]


class FleetProgress:
    def __init__(self, names: Sequence[str], *, file: TextIO | None = None) -> None:
        self._names = list(names)
        self._file = file if file is not None else sys.stderr
        setups = runs_text(self._names).partition(" = ")[0]  # "6 setups × 5 seeds", the bar counts runs
        self._overall = tqdm(
            total=len(self._names), desc=f"runs ({setups})", unit="run", position=0, file=self._file
        )
        self._running: dict[int, tuple[Bar, int]] = {}  # run -> its pod bar, its screen line
        self._free: set[int] = set()  # screen lines of closed pod bars, reused first

    def pods(self, index: int, done: int, total: int) -> None:
        """Run ``index`` has scheduled ``done`` of its ``total`` pods."""
        if index in self._running:
            bar = self._running[index][0]
        else:
            line = self._line()
            bar = tqdm(
                total=total, desc=self._names[index], unit="pod", position=line, leave=False, file=self._file
            )
            self._running[index] = (bar, line)
        bar.total = total
        bar.n = done
        bar.refresh()  # each report is drawn: the engine reports at most every 1% of the pods

    def finished(self, index: int) -> None:
        if index in self._running:
            bar, line = self._running.pop(index)
            self._free.add(line)
            bar.close()
        self._overall.set_postfix_str(self._names[index], refresh=False)
        self._overall.update(1)

    def close(self) -> None:
        for bar, _ in self._running.values():
            bar.close()
        self._running.clear()
        self._overall.close()

    def _line(self) -> int:
        if self._free:
            line = min(self._free)
            self._free.discard(line)
            return line
        return len(self._running) + 1
