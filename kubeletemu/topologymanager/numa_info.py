"""``NUMAInfo``: the NUMA node ids and their distances, as the topology manager sees them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kubeletemu.bitmask import BitMask


class NUMAInfoError(ValueError):
    pass


class NUMAInfo:
    """Node ids in cadvisor order, and each node's distance row (None when not loaded).

    The kubelet indexes a row by node id (``d[a][b]``) although the kernel lists online nodes in order;
    the two only agree for ids 0..N-1. We index by id the same way so our averages equal the kubelet's.
    """

    def __init__(
        self, nodes: Sequence[int], distances: Mapping[int, Sequence[int] | None] | None = None
    ) -> None:
        self.nodes: tuple[int, ...] = tuple(nodes)
        rows = distances or {}
        self.distances: dict[int, tuple[int, ...] | None] = {
            node: (tuple(rows[node]) if rows.get(node) is not None else None)  # type: ignore[arg-type]
            for node in self.nodes
        }
        self._default = BitMask.of(*self.nodes)
        self._avg_cache: dict[int, float] = {}

    @classmethod
    def from_topology(
        cls, topology: Iterable[tuple[int, Sequence[int] | None]] | None, prefer_closest_numa: bool
    ) -> NUMAInfo:
        """``NewNUMAInfo``: distances are copied only when prefer-closest-numa-nodes is on."""
        nodes: list[int] = []
        rows: dict[int, Sequence[int] | None] = {}
        for node_id, row in topology or ():
            nodes.append(node_id)
            if prefer_closest_numa:
                if row is None:
                    raise NUMAInfoError("error getting NUMA distances from cadvisor")
                rows[node_id] = row
        return cls(nodes, rows)

    def default_affinity_mask(self) -> BitMask:
        return self._default

    def narrowest(self, m1: BitMask, m2: BitMask) -> BitMask:
        return m1 if m1.is_narrower_than(m2) else m2

    def closest(self, m1: BitMask, m2: BitMask) -> BitMask:
        """Different widths: the narrower. Same width: the smaller average distance, then the smaller int."""
        if m1.count() != m2.count():
            return self.narrowest(m1, m2)
        d1, d2 = self.average_distance(m1), self.average_distance(m2)
        if d1 == d2:
            return m1 if m1.is_less_than(m2) else m2
        return m1 if d1 < d2 else m2

    def average_distance(self, mask: BitMask) -> float:
        """``CalculateAverageFor``: sum over all ordered pairs (diagonal included) / count²."""
        key = mask.value
        cached = self._avg_cache.get(key)
        if cached is not None:
            return cached
        count = mask.count()
        if count == 0:
            return 0.0
        bits = mask.bits()
        total = 0
        for a in bits:
            row = self.distances.get(a)
            if row is None:
                raise NUMAInfoError(f"no NUMA distances known for node {a}")
            for b in bits:
                total += row[b]
        result = total / (count * count)
        self._avg_cache[key] = result
        return result
