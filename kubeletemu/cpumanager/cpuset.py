"""``k8s.io/utils/cpuset``: an immutable set of CPU ids with the kubelet's list syntax (``0-3,8-11``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kubeletemu.cpumanager.errors import CPUSetError
from kubeletemu.golang import GoSyntaxError, go_atoi, go_quote

# Go would try to materialise any range it is given; a typo like "0-4000000000" would exhaust memory.
# No machine has CPU ids anywhere near this bound.
MAX_CPU_ID = 1 << 20


class CPUSet:
    """Immutable; set operations return new sets. Iteration is ascending, like ``CPUSet.List()``."""

    __slots__ = ("_elems",)

    def __init__(self, cpus: Iterable[int] = ()) -> None:
        self._elems: frozenset[int] = frozenset(cpus)

    @classmethod
    def of(cls, *cpus: int) -> CPUSet:
        """``cpuset.New(cpus...)``."""
        return cls(cpus)

    @classmethod
    def parse(cls, text: str) -> CPUSet:
        """``cpuset.Parse``: comma-separated ids or ``a-b`` ranges; ``""`` is the empty set.

        Errors carry Go's text (``strconv.Atoi: parsing "x": invalid syntax``,
        ``invalid range "5-3" (5 > 3)``).
        """
        if text == "":
            return cls()
        result: set[int] = set()
        for part in text.split(","):
            bounds = part.split("-", 1)
            try:
                if len(bounds) == 1:
                    result.add(_check_id(go_atoi(bounds[0]), text))
                    continue
                start = go_atoi(bounds[0])
                end = go_atoi(bounds[1])
            except GoSyntaxError as err:
                raise CPUSetError(str(err)) from None
            if start > end:
                raise CPUSetError(f"invalid range {go_quote(part)} ({start} > {end})")
            _check_id(end, text)
            result.update(range(start, end + 1))
        return cls(result)

    @property
    def elems(self) -> frozenset[int]:
        return self._elems

    def size(self) -> int:
        return len(self._elems)

    def is_empty(self) -> bool:
        return not self._elems

    def contains(self, cpu: int) -> bool:
        return cpu in self._elems

    def is_subset_of(self, other: CPUSet) -> bool:
        return self._elems <= other._elems

    def union(self, *others: CPUSet) -> CPUSet:
        return CPUSet(self._elems.union(*(o._elems for o in others)))

    def intersection(self, other: CPUSet) -> CPUSet:
        return CPUSet(self._elems & other._elems)

    def difference(self, other: CPUSet) -> CPUSet:
        return CPUSet(self._elems - other._elems)

    def list(self) -> list[int]:
        """Ascending ids (``List()``)."""
        return sorted(self._elems)

    def __or__(self, other: CPUSet) -> CPUSet:
        return self.union(other)

    def __and__(self, other: CPUSet) -> CPUSet:
        return self.intersection(other)

    def __sub__(self, other: CPUSet) -> CPUSet:
        return self.difference(other)

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._elems))

    def __len__(self) -> int:
        return len(self._elems)

    def __contains__(self, cpu: object) -> bool:
        return cpu in self._elems

    def __bool__(self) -> bool:
        return bool(self._elems)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CPUSet) and self._elems == other._elems

    def __hash__(self) -> int:
        return hash(self._elems)

    def __repr__(self) -> str:
        return f"CPUSet.parse({str(self)!r})"

    def __str__(self) -> str:
        """``String()``: ascending ranges, a run of two or more written ``a-b``, joined by commas."""
        return format_cpu_list(self._elems)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """The kubelet's list syntax for any iterable of ids (``CPUSet.String()``)."""
    ordered = sorted(set(cpus))
    if not ordered:
        return ""
    parts: list[str] = []
    start = prev = ordered[0]
    for cpu in ordered[1:]:
        if cpu == prev + 1:
            prev = cpu
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def _check_id(cpu: int, text: str) -> int:
    if cpu > MAX_CPU_ID:
        raise CPUSetError(f"cpu id {cpu} in {go_quote(text)} is beyond any real machine (max {MAX_CPU_ID})")
    return cpu
