"""Waits that never ended: right-censored observations.

A pod object never bound by the run's end, or a slot whose pod never reached Running (still waiting, or
closed without it: a bare pod rejected, a Job past its ``backoffLimit``), has no wait to report: only that
it waited longer than the run let it. Such waits are counted apart (``pending_censored``,
``never_running``) and sort above every observed one, so a percentile whose nearest rank falls on them is
not a number: it is None (JSON ``null``), shown ``> run length``. Below that rank a percentile is exact,
whatever the censored waits' true lengths.
"""

from __future__ import annotations

from collections.abc import Sequence

DIGITS = 6


def censored_percentile(observed: Sequence[float], censored: int, q: int) -> float | None:
    """Nearest rank over ``observed`` (ascending) and ``censored`` waits longer than any of them: the
    smallest value with at least q % of all the waits at or below it, or None where that rank is
    censored; 0.0 without any wait."""
    total = len(observed) + censored
    if total == 0:
        return 0.0
    rank = max(1, -(-q * total // 100))
    if rank > len(observed):
        return None
    return round(observed[rank - 1], DIGITS)


def censored_max(observed: Sequence[float], censored: int) -> float | None:
    """The longest wait (ascending ``observed``), None when one is censored, 0.0 without any."""
    if censored:
        return None
    return round(observed[-1], DIGITS) if observed else 0.0
