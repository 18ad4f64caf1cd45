"""kube-scheduler's keyed heap (``pkg/scheduler/backend/heap``, identical in 1.32 … 1.36) on Go's
``container/heap`` algorithm, so items that compare equal leave in the order the shipped scheduler takes
them (Python's ``heapq`` sifts differently).

Items are kept by key; adding an existing key replaces the item and re-fixes its place (``AddOrUpdate``).
Upstream reads its less function at each comparison. Where the order is a plain comparison of values
that stay fixed while the item is queued (``sort_key``: PrioritySort's priority and timestamp, a backoff
expiry), the heap computes them once per ``add_or_update`` and compares those: the same order, without a
call per comparison. Anything that changes what the order reads must go through ``add_or_update``, as
upstream's updates do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

SortKey = Callable[[Any], Any]


class Heap(Generic[T]):
    def __init__(
        self, key: Callable[[T], str], less: Callable[[T, T], bool], sort_key: SortKey | None = None
    ) -> None:
        """``less(a, b)`` must equal ``sort_key(a) < sort_key(b)`` when ``sort_key`` is given."""
        self._key = key
        self._less = less
        self._sort_key = sort_key
        self._queue: list[str] = []
        # The sort keys, parallel to _queue (with sort_key only).
        self._order: list[Any] = []
        self.items_by_key: dict[str, T] = {}  # read-only outside
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._queue)

    def __contains__(self, item: T) -> bool:
        return self._key(item) in self.items_by_key

    def __iter__(self) -> Iterator[T]:
        """The items in heap-array order (``List``; upstream iterates a map, in no order)."""
        return (self.items_by_key[k] for k in self._queue)

    def get(self, item: T) -> T | None:
        return self.items_by_key.get(self._key(item))

    def get_by_key(self, key: str) -> T | None:
        return self.items_by_key.get(key)

    def peek(self) -> T | None:
        return self.items_by_key[self._queue[0]] if self._queue else None

    def has_key(self, key: str) -> bool:
        return key in self.items_by_key

    def add_or_update(self, item: T, key: str | None = None) -> None:
        """``key``: the item's key when the caller has it already."""
        if key is None:
            key = self._key(item)
        if key in self.items_by_key:
            self.items_by_key[key] = item
            i = self._index[key]
            if self._sort_key is not None:
                self._order[i] = self._sort_key(item)
            self._fix(i)
        elif self._sort_key is not None:
            self.push(item, key, self._sort_key(item))
        else:
            self.items_by_key[key] = item
            self._index[key] = len(self._queue)
            self._queue.append(key)
            self._up(len(self._queue) - 1)

    def push(self, item: T, key: str, sort_key: Any) -> None:
        """:meth:`add_or_update` for a key not in the heap, with the item's sort key already computed (a
        heap with ``sort_key`` only)."""
        self.items_by_key[key] = item
        queue, order, index = self._queue, self._order, self._index
        j = len(queue)
        queue.append(key)
        order.append(sort_key)
        index[key] = j
        # Go's up, inline.
        while j > 0:
            i = (j - 1) // 2
            if not sort_key < order[i]:
                break
            parent = queue[i]
            queue[j], order[j], index[parent] = parent, order[i], j
            j = i
        queue[j], order[j], index[key] = key, sort_key, j

    def delete(self, item: T, key: str | None = None) -> bool:
        """Remove the item with ``item``'s key; False when there is none (upstream: an error)."""
        if key is None:
            key = self._key(item)
        if key not in self.items_by_key:
            return False
        self._remove(self._index[key])
        return True

    def pop(self) -> T | None:
        queue = self._queue
        if not queue:
            return None
        n = len(queue) - 1
        if self._sort_key is None:
            self._swap(0, n)
            self._down(0, n)
            return self._pop_last()
        # Go's Pop (swap the root with the last, sift it down over the first n, remove the last) with the
        # last item held aside until its place is found.
        key, sort_key = queue.pop(), self._order.pop()
        if not n:
            del self._index[key]
            return self.items_by_key.pop(key)
        top = queue[0]
        self._sift_down(0, n, key, sort_key)
        del self._index[top]
        return self.items_by_key.pop(top)

    # container/heap

    def _pop_last(self) -> T:
        key = self._queue.pop()
        if self._sort_key is not None:
            self._order.pop()
        del self._index[key]
        return self.items_by_key.pop(key)

    def _remove(self, i: int) -> T:
        n = len(self._queue) - 1
        if n != i:
            self._swap(i, n)
            if not self._down(i, n):
                self._up(i)
        return self._pop_last()

    def _fix(self, i: int) -> None:
        if not self._down(i, len(self._queue)):
            self._up(i)

    def _less_at(self, i: int, j: int) -> bool:
        return self._less(self.items_by_key[self._queue[i]], self.items_by_key[self._queue[j]])

    def _swap(self, i: int, j: int) -> None:
        queue = self._queue
        queue[i], queue[j] = queue[j], queue[i]
        self._index[queue[i]] = i
        self._index[queue[j]] = j
        if self._sort_key is not None:
            order = self._order
            order[i], order[j] = order[j], order[i]

    def _up(self, j: int) -> None:
        if self._sort_key is not None:
            self._up_sorted(j)
            return
        while True:
            i = (j - 1) // 2  # parent
            if i == j or j <= 0 or not self._less_at(j, i):
                break
            self._swap(i, j)
            j = i

    def _down(self, i0: int, n: int) -> bool:
        if self._sort_key is not None:
            return self._down_sorted(i0, n)
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and self._less_at(j2, j1):
                j = j2
            if not self._less_at(j, i):
                break
            self._swap(i, j)
            i = j
        return i > i0

    # The sifts on the kept sort keys, the comparisons inline.

    def _up_sorted(self, j: int) -> None:
        order = self._order
        while j > 0:
            i = (j - 1) // 2
            if not order[j] < order[i]:
                break
            self._swap(i, j)
            j = i

    def _down_sorted(self, i0: int, n: int) -> bool:
        return self._sift_down(i0, n, self._queue[i0], self._order[i0]) > i0

    def _sift_down(self, i0: int, n: int, key: str, sort_key: Any) -> int:
        """Go's ``down`` from ``i0`` for the item ``key``: each smaller child moves up into the item's place
        until none is smaller (the swaps of ``down``, the item written once at the end); its index."""
        queue, order, index = self._queue, self._order, self._index
        i = i0
        while True:
            j = 2 * i + 1
            if j >= n:
                break
            if j + 1 < n and order[j + 1] < order[j]:
                j += 1
            if not order[j] < sort_key:
                break
            queue[i] = queue[j]
            order[i] = order[j]
            index[queue[i]] = i
            i = j
        queue[i], order[i] = key, sort_key
        index[key] = i
        return i
