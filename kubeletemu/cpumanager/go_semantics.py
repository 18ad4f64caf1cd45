"""How Go's ``append`` shares a slice's backing array, as ``takeByTopologyNUMADistributed`` relies on.

The strconv/fmt/math helpers the kubelet's texts depend on are in :mod:`kubeletemu.golang`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence


class SliceView:
    """A Go slice header kept after the call that produced it: (backing array, length).

    ``values()`` reads the backing array *now*, so later writes through another slice sharing the array
    show through, exactly as in Go.
    """

    __slots__ = ("_backing", "_length")

    def __init__(self, backing: list[int], length: int) -> None:
        self._backing = backing
        self._length = length

    def __len__(self) -> int:
        return self._length

    def values(self) -> list[int]:
        return self._backing[: self._length]


def _last_fresh_index(size: int) -> int:
    """The highest index at which building a ``size``-element slice by appends allocated a new array.

    Appending to a full slice allocates: at lengths 0, 1, 2, 4, 8, ... (``growslice`` doubles 8-byte
    elements below capacity 256, and every doubled byte size is a malloc size class).
    """
    if size > 256:
        raise ValueError("slices beyond 256 elements grow differently; no machine has that many NUMA nodes")
    last = size - 1
    return 0 if last < 1 else 1 << (last.bit_length() - 1)


def iterate_combinations_go(items: Sequence[int], size: int, visit: Callable[[SliceView], bool]) -> None:
    """``cpuAccumulator.iterateCombinations``: every ``size``-subset in lexicographic position order.

    ``visit`` returns True to stop (Go's ``Break``). Go builds the subsets with ``append(accum, n[i])`` on
    one recursive accumulator, so a subset shares its backing array with every sibling that has the same
    elements up to the last index where ``append`` had to allocate (see ``_last_fresh_index``): for size
    4 the first 3 elements, for sizes 6-8 the first 5; sizes 1, 2, 3, 5 and 9 never share. Each visit
    writes its elements into that shared array, so a ``SliceView`` kept by the caller and read later shows
    the most recently visited sibling - the kubelet's distributed allocator does exactly that.
    """
    if size < 1 or size > len(items):
        return
    fresh = _last_fresh_index(size)
    backing: list[int] = []
    prefix: tuple[int, ...] | None = None
    for combo in itertools.combinations(items, size):
        head = combo[: fresh + 1]
        if head != prefix:
            # Siblings are contiguous in lexicographic order: a new prefix means a new array.
            prefix = head
            backing = list(combo)
        else:
            backing[fresh + 1 : size] = combo[fresh + 1 :]
        if visit(SliceView(backing, size)):
            return


def final_combination_positions(positions: Sequence[int], count: int) -> tuple[int, ...]:
    """What the slice of ``positions`` (a subset of 0..count-1) holds after ``iterateCombinations`` has
    visited every subset: its own elements up to the last fresh index, then the last sibling's tail,
    i.e. the highest positions."""
    size = len(positions)
    fresh = _last_fresh_index(size)
    tail = size - fresh - 1
    return tuple(positions[: fresh + 1]) + tuple(range(count - tail, count))
