"""CPython's cyclic garbage collector during a fleet run, set to collect less often.

A run allocates a few container objects per scheduling attempt (the queue's sort keys, the rejecting
plugins' sets, the cycle's answers), tens of millions at full scale, and most die young through their
reference counts. At the interpreter's default thresholds (700, 10, 10) the collector still traverses the
young objects every 700 net allocations and the whole heap every few hundred thousand, which took 13 % of
``nrt`` at 300 x 6,000 and about a fifth at 1,000 x 20,000 (``gc.callbacks`` and py-spy ``--native``,
see ``benchmarks/bench_fleet.py``). With these thresholds the same run spends 2 s instead of 15 s
collecting, and its peak memory is the same. Collection never changes a result: nothing in the engine
depends on when an unreachable object is freed.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Young collections after 50,000 net allocations, middle ones every 20 of those, full ones no more often
# than every 100 middle ones (and, as always, only when the heap's long-lived part grew by a quarter).
RUN_THRESHOLDS = (50_000, 20, 100)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The collector at :data:`RUN_THRESHOLDS` for the block, the process's own thresholds restored after
    (the setting is the interpreter's: a fleet run is the only work of its process or worker)."""
    previous = gc.get_threshold()
    gc.set_threshold(*RUN_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
