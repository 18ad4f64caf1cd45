"""A pod's resource shape: every field of a pod an admission or a plugin can read, without its identity
(name, UID, the node it is bound to, its phase). Two pods of one template have the same shape, so an
answer computed for one holds for the other on the same node state."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import memo

IDENTITY = frozenset({"name", "uid", "node_name", "phase"})
# Shapes seen in this process, numbered: a small int is what the answers are kept by (cheap to hash).
_NUMBERS: dict[Hashable, int] = {}


def pod_shape(pod: Pod) -> int:
    """The shape's number (computed once per pod object): pods have the same number exactly when every
    field but :data:`IDENTITY` is equal — a field added to :class:`~kubeletemu.pod.Pod` later counts too."""
    number: int | None = pod.__dict__.get("cycle_shape")  # memo's store, read without building its lambda
    if number is not None:
        return number
    return memo(pod, "cycle_shape", lambda: _number(_freeze_fields(pod, IDENTITY)))


def _number(shape: Hashable) -> int:
    return _NUMBERS.setdefault(shape, len(_NUMBERS))


def _freeze_fields(obj: object, skip: frozenset[str] = frozenset()) -> Hashable:
    fields = dataclasses.fields(obj)  # type: ignore[arg-type]
    return (
        type(obj).__name__,
        *((f.name, _freeze(getattr(obj, f.name))) for f in fields if f.name not in skip),
    )


def _freeze(value: object) -> Hashable:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, tuple | list):
        return tuple(_freeze(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _freeze_fields(value)
    assert isinstance(value, Hashable)
    return value
