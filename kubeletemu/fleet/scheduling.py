"""The scheduler side of a fleet configuration: the profile's models wired to a NodeResourceTopologyMatch
cache with its full cycle (:class:`CachedTopology`, :func:`with_cache_source`), and the scheduling cycle
itself, re-exported from :mod:`kubeletemu.fleet.cycle` (kube-scheduler's ``schedule_one.go`` per version
1.32 – 1.36, and the ``exact``/``exact-numa`` setups; see there).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from kubeletemu.fleet.cycle import (
    EXACT,
    EXACT_NUMA,
    SETUPS,
    CycleOutcome,
    ExactNUMAFit,
    ExactScheduler,
    Scheduler,
    WouldAdmit,
    exact_profile,
    num_feasible_nodes_to_find,
)
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import Model, NodeInfo
from kubeletemu.scheduler.nrtcache import Cache
from kubeletemu.scheduler.nrtcache.interface import TopologyNotFresh
from kubeletemu.scheduler.nrtmatch.model import NodeResourceTopologyMatch
from kubeletemu.scheduler.objects import NodeResourceTopology
from kubeletemu.scheduler.profile import Profile

__all__ = [
    "EXACT",
    "EXACT_NUMA",
    "SETUPS",
    "CachedTopology",
    "CycleOutcome",
    "ExactNUMAFit",
    "ExactScheduler",
    "Scheduler",
    "WouldAdmit",
    "exact_profile",
    "num_feasible_nodes_to_find",
    "with_cache_source",
]


class CachedTopology:
    """NodeResourceTopologyMatch's ``TopologySource`` over a :class:`~kubeletemu.scheduler.nrtcache.Cache`:
    ``GetCachedNRTCopy`` (not fresh: the model's Filter answers ``invalid node topology data``) and
    ``NodeMaybeOverReserved`` on a Filter failure.

    The cache builds a new object per lookup where it holds assumed resources; the answer is kept per node
    until the engine reports something that can change it (:meth:`changed`, :meth:`changed_all`), so the
    model's per-object parsing is reused across pods. ``memo=False`` asks the cache every time."""

    def __init__(self, cache: Cache, *, memo: bool = True) -> None:
        self.cache = cache
        self.memo = memo
        # A node's version is a number: each change reported takes the next one, for the node it names
        # (_versions) or for every node (_floor, what an unchanged node reads). Equal numbers: no change
        # between; plain ints, so a cycle reads the versions of a thousand nodes without building any.
        self._numbered = 0
        self._floor = 0
        self._versions: dict[str, int] = {}
        self._answers: dict[str, tuple[int, NodeResourceTopology | None, bool]] = {}
        self.generation = 0  # moves with every change reported: part of the scheduler's cycle state

    def topology(self, node: NodeInfo, pod: Pod) -> NodeResourceTopology | None:
        key = self._version(node.name)
        answer = self._answers.get(node.name) if self.memo else None
        if answer is None or answer[0] != key:
            nrt, info = self.cache.get_cached_nrt_copy(node.name, pod)
            answer = (key, nrt, info.fresh)
            self._answers[node.name] = answer
        if not answer[2]:
            raise TopologyNotFresh(node.name)
        return answer[1]

    def version(self, node: NodeInfo) -> Hashable | None:
        """What :meth:`topology` answers for ``node`` changes only when this does (None: asked every time)."""
        return self._version(node.name) if self.memo else None

    def versions(self, nodes: Sequence[NodeInfo]) -> list[Hashable | None]:
        """:meth:`version` of each node, in one pass."""
        if not self.memo:
            return [None] * len(nodes)
        floor, get = self._floor, self._versions.get
        return [version if (version := get(node.name, 0)) > floor else floor for node in nodes]

    def _version(self, name: str) -> int:
        version = self._versions.get(name, 0)
        return version if version > self._floor else self._floor

    def node_maybe_overreserved(self, node_name: str, pod: Pod) -> None:
        # Marks the node dirty; lookups do not depend on the mark, so the kept answer stays valid.
        self.cache.node_maybe_over_reserved(node_name, pod)

    def each_node_maybe_overreserved(self, node_names: Sequence[str], pod: Pod) -> None:
        """:meth:`node_maybe_overreserved` for each name in turn."""
        self.cache.each_node_maybe_over_reserved(node_names, pod)

    def nodes_maybe_overreserved(self, node_names: tuple[str, ...], pod: Pod, times: int = 1) -> None:
        # The marks of a replayed cycle, in order: the same tuple each replay (overreserve counts repeats).
        self.cache.nodes_maybe_over_reserved(node_names, pod, times)

    def changed(self, node_name: str) -> None:
        self._numbered += 1
        self._versions[node_name] = self._numbered
        self.generation += 1

    def changed_all(self) -> None:
        self._numbered += 1
        self._floor = self._numbered
        self.generation += 1


def with_cache_source(profile: Profile, source: CachedTopology) -> Profile:
    """The profile with each NodeResourceTopologyMatch model reading through ``source`` (one model
    instance for its Filter and Score, as the plugin is one object)."""
    swapped: dict[int, Model] = {}

    def swap(model: Model) -> Model:
        if isinstance(model, NodeResourceTopologyMatch):
            if id(model) not in swapped:
                swapped[id(model)] = NodeResourceTopologyMatch(model.args, source, keep_answers=source.memo)
            return swapped[id(model)]
        return model

    return Profile(
        profile.name, tuple(swap(m) for m in profile.filters), tuple((swap(m), w) for m, w in profile.scores)
    )
