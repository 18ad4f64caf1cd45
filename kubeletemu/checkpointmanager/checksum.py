"""The kubelet's checkpoint checksum: FNV-32a over go-spew's ``%#v`` dump (``dump.ForHash``).

Only what the memory and device checkpoints need: typed struct fields ``Name:(type)value``, untyped map
entries and slice elements, pointers inside maps as ``<*>``, nil maps/slices/pointers as ``<nil>``,
map keys sorted (ints numerically, strings bytewise), strings unquoted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from fnv_hash_fast import fnv1a_32

K = TypeVar("K")
V = TypeVar("V")

NIL = "<nil>"


def fnv32a(data: bytes) -> int:
    """Go's ``hash/fnv`` New32a over ``data``, as ``hashutil.DeepHashObject`` feeds it."""
    return fnv1a_32(data)


def checksum_of(dump: str) -> int:
    return fnv32a(dump.encode("utf-8"))


def field(name: str, go_type: str, value: str) -> str:
    return f"{name}:({go_type}){value}"


def struct(*fields: str) -> str:
    return "{" + " ".join(fields) + "}"


def go_map(
    entries: Mapping[K, V] | None,
    value: Callable[[V], str],
    key: Callable[[K], str] = str,
    sort_key: Callable[[K], Any] | None = None,
) -> str:
    """``map[k:v k:v]`` with keys sorted the way spew's ``SortKeys`` does, ``<nil>`` for a nil map."""
    if entries is None:
        return NIL
    keys = sorted(entries, key=sort_key) if sort_key is not None else sorted(entries)  # type: ignore[type-var]
    return "map[" + " ".join(f"{key(k)}:{value(entries[k])}" for k in keys) + "]"


def go_slice(items: Iterable[V] | None, element: Callable[[V], str] = str) -> str:
    if items is None:
        return NIL
    return "[" + " ".join(element(i) for i in items) + "]"


def pointer_in_container(value: V | None, render: Callable[[V], str]) -> str:
    """A pointer met as a map value or slice element: ``<*>`` then the pointee, or ``<nil>``."""
    return NIL if value is None else "<*>" + render(value)
