"""The scheduler side of a fleet configuration: the profile's models wired to a NodeResourceTopologyMatch
cache with its full cycle, the ``exact`` predictor, and one scheduling cycle over the fleet.

One cycle is kube-scheduler's ``schedulePod`` (``pkg/scheduler/schedule_one.go``, kubernetes v1.33):
``numFeasibleNodesToFind`` (all nodes below 100; else ``percentageOfNodesToScore``, adaptively
``50 - nodes/125`` percent but at least 5 %, and at least 100 nodes), the filters run from
``nextStartNodeIndex`` round the node list until that many nodes passed, the index then moving past the
nodes processed; a single feasible node is taken without scoring; otherwise the weighted sum of the scores,
the first node in evaluation order winning a tie (upstream picks one of the tied nodes at random). A node
on which a plugin would panic is not feasible (``scheduler-side.md`` §4) and is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubeletemu.emulator import NodeEmulator
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import Model, NodeInfo, PluginPanic, Status
from kubeletemu.scheduler.nrtcache import Cache
from kubeletemu.scheduler.nrtcache.interface import TopologyNotFresh
from kubeletemu.scheduler.nrtmatch.model import NodeResourceTopologyMatch
from kubeletemu.scheduler.objects import NodeResourceTopology
from kubeletemu.scheduler.profile import Profile, default_profile

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
BASE_PERCENTAGE_OF_NODES_TO_SCORE = 50


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind`` with the global ``percentageOfNodesToScore`` (0: adaptive)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = max(
            BASE_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
        )
    found = num_all_nodes * adaptive // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


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
        self._epoch = 0
        self._versions: dict[str, int] = {}
        self._answers: dict[str, tuple[tuple[int, int], NodeResourceTopology | None, bool]] = {}

    def topology(self, node: NodeInfo, pod: Pod) -> NodeResourceTopology | None:
        key = (self._epoch, self._versions.get(node.name, 0))
        answer = self._answers.get(node.name) if self.memo else None
        if answer is None or answer[0] != key:
            nrt, info = self.cache.get_cached_nrt_copy(node.name, pod)
            answer = (key, nrt, info.fresh)
            self._answers[node.name] = answer
        if not answer[2]:
            raise TopologyNotFresh(node.name)
        return answer[1]

    def node_maybe_overreserved(self, node_name: str, pod: Pod) -> None:
        # Marks the node dirty; lookups do not depend on the mark, so the kept answer stays valid.
        self.cache.node_maybe_over_reserved(node_name, pod)

    def changed(self, node_name: str) -> None:
        self._versions[node_name] = self._versions.get(node_name, 0) + 1

    def changed_all(self) -> None:
        self._epoch += 1


class WouldAdmit:
    """The ``exact`` predictor's Filter: the node's own ``WouldAdmit`` (no predictor can do better)."""

    name = "WouldAdmit"

    def __init__(self, emulators: Mapping[str, NodeEmulator]) -> None:
        self.emulators = emulators

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        report = self.emulators[node.name].would_admit(pod)
        return Status() if report.admitted else Status.unschedulable(f"{report.reason}: {report.message}")

    def score(self, pod: Pod, node: NodeInfo) -> int:
        return 0

    def policy(self, node: NodeInfo) -> str:
        return self.emulators[node.name].config.kubelet.topology_manager_policy


def with_cache_source(profile: Profile, source: CachedTopology) -> Profile:
    """The profile with each NodeResourceTopologyMatch model reading through ``source`` (one model
    instance for its Filter and Score, as the plugin is one object)."""
    swapped: dict[int, Model] = {}

    def swap(model: Model) -> Model:
        if isinstance(model, NodeResourceTopologyMatch):
            if id(model) not in swapped:
                swapped[id(model)] = NodeResourceTopologyMatch(model.args, source)
            return swapped[id(model)]
        return model

    return Profile(
        profile.name, tuple(swap(m) for m in profile.filters), tuple((swap(m), w) for m, w in profile.scores)
    )


@dataclass
class CycleOutcome:
    chosen: NodeInfo | None
    crashes: int = 0
    reason: str = ""


@dataclass
class Scheduler:
    """A profile scheduling pods one at a time over ``nodes`` (kept in a fixed order)."""

    profile: Profile
    percentage_of_nodes_to_score: int = 0
    next_start_node_index: int = 0

    def schedule(self, pod: Pod, nodes: Sequence[NodeInfo]) -> CycleOutcome:
        count = len(nodes)
        wanted = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, count)
        feasible: list[NodeInfo] = []
        crashes = 0
        processed = 0
        last_reason = ""
        start = self.next_start_node_index
        filters = self.profile.filters
        for offset in range(count):
            node = nodes[(start + offset) % count]
            processed += 1
            passed = True
            for model in filters:
                try:
                    status = model.filter(pod, node)
                except PluginPanic:
                    crashes += 1
                    passed = False
                    break
                if not status.ok:
                    last_reason = status.message
                    passed = False
                    break
            if passed:
                feasible.append(node)
                if len(feasible) >= wanted:
                    break
        if count:
            self.next_start_node_index = (start + processed) % count
        if not feasible:
            return CycleOutcome(None, crashes, last_reason or "no node")
        if len(feasible) == 1:
            return CycleOutcome(feasible[0], crashes)
        best: NodeInfo | None = None
        best_score = -1
        for node in feasible:
            total = 0
            try:
                for model, weight in self.profile.scores:
                    total += weight * model.score(pod, node)
            except PluginPanic:
                crashes += 1
                continue
            if best is None or total > best_score:
                best, best_score = node, total
        return CycleOutcome(best, crashes, "" if best is not None else "every feasible node crashed in Score")


class ExactScheduler(Scheduler):
    """``exact``: the default scheduler's fit and scores over every node, then the best-scored node whose
    own WouldAdmit admits the pod (the first in node order on a tie). The same choice as filtering every
    node with WouldAdmit first, asking only as many nodes as it takes."""

    def __init__(self, emulators: Mapping[str, NodeEmulator]) -> None:
        default = default_profile()
        super().__init__(Profile("exact", default.filters, default.scores))
        self.would_admit = WouldAdmit(emulators)

    def schedule(self, pod: Pod, nodes: Sequence[NodeInfo]) -> CycleOutcome:
        candidates: list[tuple[int, int, NodeInfo]] = []
        reason = ""
        for index, node in enumerate(nodes):
            status = next((s for s in (m.filter(pod, node) for m in self.profile.filters) if not s.ok), None)
            if status is not None:
                reason = status.message
                continue
            score = sum(weight * model.score(pod, node) for model, weight in self.profile.scores)
            candidates.append((-score, index, node))
        candidates.sort(key=lambda c: (c[0], c[1]))
        for _, _, node in candidates:
            verdict = self.would_admit.filter(pod, node)
            if verdict.ok:
                return CycleOutcome(node)
            reason = verdict.message
        return CycleOutcome(None, 0, reason or "no node")
