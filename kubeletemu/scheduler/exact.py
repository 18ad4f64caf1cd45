"""The exact node answers both exact schedulers share: the fleet's ``exact`` and ``exact-numa`` setups
(:mod:`kubeletemu.fleet.cycle.exact`) and the production extender (:mod:`kubeletemu.extender`).

* :class:`WouldAdmit`: a node's own kubelet admission (``NodeEmulator.would_admit``) as a Filter, on the node
  as the scheduler counts it: the kubelet's state with the assumed, not yet admitted pods admitted on a fork
  (``NodeEmulator.fork``) in assume order. Answers are kept per pod shape until the node changes
  (``NodeEmulator.state_version``, and a new emulator object: the extender replaces a node's mirror whole).
* :class:`ExactNUMAFit`: ``exact-numa``'s score on the exact state: the fewest NUMA nodes the kubelet would
  place the pod on, then the tightest fit; :meth:`ExactNUMAFit.normalize_scores` maps keys onto
  ``[0, max_score]`` (100 for a score plugin, ``MaxExtenderPriority`` 10 for an extender).

kube-scheduler's cache counts a pod from its assume on (``AssumePod`` in
``pkg/scheduler/backend/cache/cache.go``, kubernetes v1.36.3) until the informer confirms it, or
``ForgetPod`` drops it; the kubelet admits it only when its watch delivers the Binding. Grpc-free: the
engine's layer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeVar, cast

from kubeletemu.emulator import NodeEmulator
from kubeletemu.lifecycle.resources import CPU, MEMORY, milli_value, pod_request_list, value
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo, Status
from kubeletemu.scheduler.noderesourcesfit import MAX_NODE_SCORE, node_allocatable
from kubeletemu.scheduler.pod_shape import pod_shape
from kubeletemu.scheduler.state_class import state_class
from kubeletemu.simulate.metrics import NUMANodeUsage, container_numa_nodes, numa_usage

# Encodes (NUMA nodes, CPU left, memory left) in one integer, each part below this.
_PART = 10**18


@dataclass(frozen=True)
class Verdict:
    """The node's answer for a pod shape: admitted or not (reason and message as the kubelet gives
    them), and where the pod would sit: the NUMA nodes of its exclusive resources, the exclusive CPUs and
    the NUMA-pinned memory (bytes of ``memory`` blocks) it would take."""

    admitted: bool
    reason: str
    message: str
    numa_nodes: frozenset[int] = frozenset()
    exclusive_cpus: int = 0
    pinned_memory: int = 0


T = TypeVar("T")
_UNKNOWN = object()
# Answers shared between nodes of one state class, (class, key) -> answer, least recently used dropped.
_SHARED_ANSWERS = 200_000


class _Kept:
    """Answers per pod shape for one emulator at one ``state_version``, and its state class once asked."""

    __slots__ = ("answers", "emulator", "state_class", "version")

    def __init__(self, emulator: NodeEmulator) -> None:
        self.emulator = emulator
        self.version = emulator.state_version
        self.answers: dict[Hashable, object] = {}
        self.state_class: object = _UNKNOWN

    def current(self, emulator: NodeEmulator) -> bool:
        return self.emulator is emulator and self.version == emulator.state_version


def _holds(node: NodeEmulator, pod: Pod) -> bool:
    """Whether the node already holds the pod's UID or namespace/name: "already admitted" reads the pod's
    identity, so that answer is the node's own, never another node's."""
    return pod.uid in node.registry or node.registry.by_name(pod.namespace, pod.name) is not None


class WouldAdmit:
    """The exact Filter: the node's own ``WouldAdmit`` (no predictor can do better). ``memo=False`` asks
    the node every time. ``share=True`` shares answers between nodes of one state class
    (:mod:`kubeletemu.scheduler.state_class`): a pod shape seen for the first time is asked once per
    distinct node state instead of once per node."""

    name = "WouldAdmit"

    def __init__(
        self,
        emulators: Mapping[str, NodeEmulator],
        *,
        memo: bool = True,
        count_assumed: bool = True,
        assumed: dict[str, dict[str, Pod]] | None = None,
        share: bool = False,
    ) -> None:
        self.emulators = emulators
        self.memo = memo
        self.share = share
        self.shared_hits = 0  # answers taken from another node of the same state class
        self._shared: OrderedDict[tuple[Hashable, Hashable], object] = OrderedDict()
        self.count_assumed = count_assumed
        self._kept: dict[str, _Kept] = {}
        self.asked = 0  # WouldAdmit calls made (the kept answers saved the rest)
        # node -> uid -> assumed pod, not yet admitted; the extender's ledger shares its own dict here.
        self.assumed: dict[str, dict[str, Pod]] = {} if assumed is None else assumed
        self._views: dict[str, tuple[tuple[NodeEmulator, int, tuple[str, ...]], NodeEmulator]] = {}

    def assume(self, node_name: str, pod: Pod) -> None:
        """``AssumePod``: the pod counts on the node until the kubelet admits it or it is forgotten."""
        if self.count_assumed:
            self.assumed.setdefault(node_name, {})[pod.uid] = pod

    def settled(self, node_name: str, uid: str) -> None:
        """The kubelet admitted (or rejected) the pod, or ``ForgetPod`` dropped it: no longer assumed."""
        pods = self.assumed.get(node_name)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self.assumed[node_name]
                self._views.pop(node_name, None)

    def emulator(self, node_name: str) -> NodeEmulator:
        """The node as the scheduler counts it: the kubelet's, with the assumed pods admitted on a fork."""
        real = self.emulators[node_name]
        pods = self.assumed.get(node_name)
        if not pods:
            return real
        # The emulator itself is part of the key: the extender replaces a node's mirror by a new emulator,
        # whose state_version may equal the last one's.
        key = (real, real.state_version, tuple(pods))
        view = self._views.get(node_name)
        if view is None or view[0][0] is not real or view[0][1:] != key[1:]:
            fork = real.fork()
            for pod in pods.values():
                # A pod the node already holds is counted there (an entry its agent's report has not
                # closed yet); one the node will reject holds nothing, as there.
                if pod.uid not in real.registry:
                    fork.admit(pod)
            view = self._views[node_name] = (key, fork)
        return view[1]

    def _kept_for(self, node_name: str, emulator: NodeEmulator) -> _Kept:
        kept = self._kept.get(node_name)
        if kept is None or not kept.current(emulator):
            kept = self._kept[node_name] = _Kept(emulator)
        return kept

    def verdict(self, pod: Pod, node_name: str) -> Verdict:
        return self.kept_answer(node_name, pod_shape(pod), self._ask, pod, _holds)

    def kept_answer(
        self,
        node_name: str,
        key: Hashable,
        compute: Callable[[NodeEmulator, Pod], T],
        pod: Pod,
        own_only: Callable[[NodeEmulator, Pod], bool] | None = None,
    ) -> T:
        """``compute(node, pod)`` on the node as counted, for an answer that reads only the node's state and
        ``key`` (the pod's shape, or a scorer's key with it): kept until the node changes and, with
        ``share``, taken from another node of the same state class unless ``own_only`` says the node must
        answer itself (asked only when nothing is kept). ``memo=False``: computed every time."""
        emulator = self.emulator(node_name)
        if not self.memo:
            return compute(emulator, pod)
        kept = self._kept_for(node_name, emulator)
        answer = kept.answers.get(key, _UNKNOWN)
        if answer is not _UNKNOWN:
            return cast(T, answer)
        if self.share and (own_only is None or not own_only(emulator, pod)):
            answer = self._shared_or_compute(kept, key, compute, pod)
        else:
            answer = compute(emulator, pod)
        kept.answers[key] = answer
        return answer

    def _shared_or_compute(
        self, kept: _Kept, key: Hashable, compute: Callable[[NodeEmulator, Pod], T], pod: Pod
    ) -> T:
        if kept.state_class is _UNKNOWN:
            kept.state_class = state_class(kept.emulator)
        if kept.state_class is None:
            return compute(kept.emulator, pod)
        shared_key = (kept.state_class, key)
        if shared_key in self._shared:
            self.shared_hits += 1
            self._shared.move_to_end(shared_key)
            return cast(T, self._shared[shared_key])
        answer = self._shared[shared_key] = compute(kept.emulator, pod)
        if len(self._shared) > _SHARED_ANSWERS:
            self._shared.popitem(last=False)
        return answer

    def _ask(self, emulator: NodeEmulator, pod: Pod) -> Verdict:
        self.asked += 1
        report = emulator.would_admit(pod)
        if not report.admitted:
            return Verdict(False, report.reason, report.message)
        numa: set[int] = set()
        cpus = memory = 0
        for container in report.containers:
            numa |= container_numa_nodes(emulator.machine, container)
            if container.exclusive_cpus:
                cpus += len(container.cpu_ids)
            memory += sum(block.size for block in container.memory if block.memory_type == MEMORY)
        return Verdict(True, "", "", frozenset(numa), cpus, memory)

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        verdict = self.verdict(pod, node.name)
        return Status() if verdict.admitted else Status.unschedulable(f"{verdict.reason}: {verdict.message}")

    def score(self, pod: Pod, node: NodeInfo) -> int:
        return 0

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        return self.emulators[node.name].config.kubelet.topology_manager_policy


class ExactNUMAFit:
    """``exact-numa``'s score, computed on the exact node state (our rule; no upstream plugin):

    1. fewer NUMA nodes first: the NUMA nodes the kubelet would place the pod's exclusive resources on
       (pinned CPUs, memory blocks, devices: what ``WouldAdmit`` allocates); a pod holding nothing
       NUMA-bound counts 0;
    2. then the tightest fit: the fewest CPUs, then the least memory, left free after the pod on those
       NUMA nodes (all of the node's NUMA nodes for a pod holding nothing NUMA-bound) — free as the CPU
       Manager and Memory Manager count it; where a manager is not static, the node-level allocatable
       minus the requests of its pods and this one.

    ``normalize_scores`` (the plugin's ``NormalizeScore``) gives the best key 100 and the others
    ``99·(worst − key) // (worst − best)``, so only nodes equal on both counts share the top score and
    ``selectHost`` picks among them."""

    name = "ExactNUMAFit"

    def __init__(self, would_admit: WouldAdmit) -> None:
        self.would_admit = would_admit
        self._usage: dict[str, tuple[NodeEmulator, int, tuple[NUMANodeUsage, ...]]] = {}

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        return Status()

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        return self.would_admit.policy(pod, node)

    def key(self, pod: Pod, node: NodeInfo) -> tuple[int, int, int]:
        """(NUMA nodes, milli-CPUs left, memory bytes left): smaller is better."""
        verdict = self.would_admit.verdict(pod, node.name)
        emulator = self.would_admit.emulator(node.name)
        usage = self._numa_usage(node.name, emulator)
        scope = verdict.numa_nodes or frozenset(u.node for u in usage)
        chosen = [u for u in usage if u.node in scope]
        cpus = [u.free_cpus for u in chosen]
        memory = [u.free_memory for u in chosen]
        if all(c is not None for c in cpus):
            cpu_left = (sum(c for c in cpus if c is not None) - verdict.exclusive_cpus) * 1000
        else:
            cpu_left = _node_left(pod, node, CPU)
        if all(m is not None for m in memory):
            memory_left = sum(m for m in memory if m is not None) - verdict.pinned_memory
        else:
            memory_left = _node_left(pod, node, MEMORY)
        return len(verdict.numa_nodes), max(cpu_left, 0), max(memory_left, 0)

    def score(self, pod: Pod, node: NodeInfo) -> int:
        """The key as one integer (ordered as the key); ``normalize_scores`` maps it into [0, 100]."""
        numa, cpu_left, memory_left = self.key(pod, node)
        return (numa * _PART + min(cpu_left, _PART - 1)) * _PART + min(memory_left, _PART - 1)

    def normalize_scores(
        self, pod: Pod, names: Sequence[str], scores: Sequence[int], max_score: int = MAX_NODE_SCORE
    ) -> list[int]:
        """Best key ``max_score``, the others ``(max_score - 1)·(worst − key) // (worst − best)``."""
        if not scores:
            return []
        best, worst = min(scores), max(scores)
        if best == worst:
            return [max_score] * len(scores)
        span = worst - best
        return [max_score if s == best else (max_score - 1) * (worst - s) // span for s in scores]

    def _numa_usage(self, name: str, emulator: NodeEmulator) -> tuple[NUMANodeUsage, ...]:
        kept = self._usage.get(name)
        if kept is None or kept[0] is not emulator or kept[1] != emulator.state_version:
            # Free as the kubelet's admission finds it: after its sweeps of ended pods' state.
            kept = self._usage[name] = (emulator, emulator.state_version, numa_usage(emulator.swept()))
        return kept[2]


def _node_left(pod: Pod, node: NodeInfo, resource: str) -> int:
    allocatable = node_allocatable(node).get(resource, Fraction(0))
    requested = sum((pod_request_list(p).get(resource, Fraction(0)) for p in (*node.pods, pod)), Fraction(0))
    left = allocatable - requested
    return milli_value(left) if resource == CPU else value(left)
