"""Go's ``container/heap`` (``Init``, ``Pop``, and their ``down``), step for step: which of several equal
elements comes out first depends on these exact sift steps, and ``selectHost``/``sortedNodeScores``
inherit that order. Python's :mod:`heapq` sifts differently, so it cannot stand in."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
Less = Callable[[T, T], bool]


def init(h: list[T], less: Less[T]) -> None:
    """``heap.Init``: establishes the heap invariant in place."""
    n = len(h)
    for i in range(n // 2 - 1, -1, -1):
        _down(h, less, i, n)


def pop(h: list[T], less: Less[T]) -> T:
    """``heap.Pop``: the minimum by ``less`` (moved to the end, then removed)."""
    n = len(h) - 1
    h[0], h[n] = h[n], h[0]
    _down(h, less, 0, n)
    return h.pop()


def _down(h: list[T], less: Less[T], i0: int, n: int) -> None:
    i = i0
    while True:
        j1 = 2 * i + 1
        if j1 >= n:
            break
        j = j1
        j2 = j1 + 1
        if j2 < n and less(h[j2], h[j1]):
            j = j2
        if not less(h[j], h[i]):
            break
        h[i], h[j] = h[j], h[i]
        i = j
