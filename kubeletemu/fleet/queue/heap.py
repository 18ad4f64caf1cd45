"""kube-scheduler's keyed heap (``pkg/scheduler/backend/heap``, identical in 1.32 … 1.36) on Go's
``container/heap`` algorithm, so items that compare equal leave in the order the shipped scheduler takes
them (Python's ``heapq`` sifts differently).

Items are kept by key; adding an existing key replaces the item and re-fixes its place (``AddOrUpdate``).
The less function is read at each comparison, as upstream's is: a backoffQ item's order may depend on
state cached on the item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Heap(Generic[T]):
    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._queue: list[str] = []
        self._items: dict[str, T] = {}
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._queue)

    def __contains__(self, item: T) -> bool:
        return self._key(item) in self._items

    def __iter__(self) -> Iterator[T]:
        """The items in heap-array order (``List``; upstream iterates a map, in no order)."""
        return (self._items[k] for k in self._queue)

    def get(self, item: T) -> T | None:
        return self._items.get(self._key(item))

    def get_by_key(self, key: str) -> T | None:
        return self._items.get(key)

    def peek(self) -> T | None:
        return self._items[self._queue[0]] if self._queue else None

    def add_or_update(self, item: T) -> None:
        key = self._key(item)
        if key in self._items:
            self._items[key] = item
            self._fix(self._index[key])
        else:
            self._items[key] = item
            self._index[key] = len(self._queue)
            self._queue.append(key)
            self._up(len(self._queue) - 1)

    def delete(self, item: T) -> bool:
        """Remove the item with ``item``'s key; False when there is none (upstream: an error)."""
        key = self._key(item)
        if key not in self._items:
            return False
        self._remove(self._index[key])
        return True

    def pop(self) -> T | None:
        if not self._queue:
            return None
        n = len(self._queue) - 1
        self._swap(0, n)
        self._down(0, n)
        return self._pop_last()

    # container/heap

    def _pop_last(self) -> T:
        key = self._queue.pop()
        del self._index[key]
        return self._items.pop(key)

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
        return self._less(self._items[self._queue[i]], self._items[self._queue[j]])

    def _swap(self, i: int, j: int) -> None:
        queue = self._queue
        queue[i], queue[j] = queue[j], queue[i]
        self._index[queue[i]] = i
        self._index[queue[j]] = j

    def _up(self, j: int) -> None:
        while True:
            i = (j - 1) // 2  # parent
            if i == j or j <= 0 or not self._less_at(j, i):
                break
            self._swap(i, j)
            j = i

    def _down(self, i0: int, n: int) -> bool:
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
