"""The extender's verbs on the mirrors (no HTTP here): Filter, Prioritize and Preempt in node-cache mode, and
what Bind tells the ledger. Each answers on a node's exact state: its mirror (:mod:`.mirrors`) with the
ledger's in-flight pods admitted on a fork (:mod:`.ledger`), through the same :class:`WouldAdmit` and
:class:`ExactNUMAFit` as the fleet's ``exact-numa`` setup (:mod:`kubeletemu.scheduler.exact`).

* **Filter** (kube-scheduler has already run ``NodeResourcesFit`` and its other filters on the nodes it
  sends): a node passes when its kubelet would admit the pod. A rejected node goes to ``FailedNodes`` when
  evicting its lower-priority pods would let the kubelet admit the pod (a preemption candidate, as
  ``Unschedulable``), else to ``FailedAndUnresolvableNodes``, with the kubelet's ``reason: message``. A node
  whose mirror is missing or stale fails closed in ``FailedAndUnresolvableNodes`` with why.
* **Prioritize**: ``exact-numa``'s rule (fewest NUMA nodes, then the tightest fit) scaled onto
  ``0..MaxExtenderPriority``: one node 10 (the first best in the scheduler's order), the other
  best 7, the rest ``6·(worst − key) // (worst − best)`` (see ``_OTHERS_AT_MOST``); a node
  that would not admit the pod, or fails closed, 0.
* **Preempt**: for each candidate node, admission re-run on a fork with the scheduler's victims removed;
  the nodes where the pod then fits are returned with their victims unchanged (never a node without
  victims: kube-scheduler's ``callExtenders`` refuses one).

A pod with no exclusive resources (:func:`has_exclusive_resources`) passes through untouched: every node
passes Filter, scores 0, and keeps its victims. Requests in the non-node-cache form (``Nodes`` without
``NodeNames``) get an ``Error``: the reply would need whole Node objects, which the extender does not keep.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from types import MappingProxyType

from kubeletemu.emulator import EmulatorError, NodeEmulator
from kubeletemu.pod import Pod
from kubeletemu.scheduler.exact import ExactNUMAFit, Verdict, WouldAdmit
from kubeletemu.scheduler.extender.ledger import (
    CLOSED_BY_BIND_ERROR,
    CLOSED_BY_REFILTER,
    OPENED_BY_BIND,
    OPENED_BY_FILTER,
    OPENED_BY_PRIORITIZE,
    Ledger,
)
from kubeletemu.scheduler.extender.mirrors import Mirrors
from kubeletemu.scheduler.extender.protocol import (
    MAX_EXTENDER_PRIORITY,
    ExtenderArgs,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
    MetaVictims,
)
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.nrtcache.exclusive import is_exclusive, is_native_resource
from kubeletemu.scheduler.objects import Node
from kubeletemu.scheduler.pod_shape import pod_shape

NODE_CACHE_ONLY = (
    "the kubeletemu extender answers in node-cache mode only: set nodeCacheCapable: true in the "
    "scheduler's extender configuration"
)
# Pods last seen by Filter, by UID: what a Bind (which names only the UID) puts in the ledger.
_REMEMBERED_PODS = 10_000
# The key ExactNUMAFit's scores are kept under beside the verdicts (WouldAdmit.kept_answer).
_SCORE = "exact-numa score"
# Prioritize's score for every node but the one it picks: at most this, 3 below MaxExtenderPriority. At the
# documented weight 10 each point counts 100, so the picked node leads by 300 or more, more than the default
# profile's score plugins can set apart nodes for a pod without affinities, spread constraints or tolerations
# (NodeResourcesFit and NodeResourcesBalancedAllocation, 100 each at weight 1; ImageLocality 100).
_OTHERS_AT_MOST = MAX_EXTENDER_PRIORITY - 3


def has_exclusive_resources(pod: Pod, ignored: Collection[str] = ()) -> bool:
    """Whether the kubelet could give the pod something exclusive, NUMA-bound: a device (any extended
    resource, which the Device Manager allocates with topology hints), or, for a Guaranteed pod, whole CPUs
    or memory and hugepages (the static CPU and Memory Managers). ``ignored`` names resources that say
    nothing (the extender's opt-in resource)."""
    qos = str(pod.qos_class)
    lists = [c.requests for c in pod.all_containers()]
    if pod.resources is not None:
        lists.append(pod.resources.requests)
    for requests in lists:
        for name, quantity in requests.items():
            if name in ignored:
                continue
            if not is_native_resource(name) or is_exclusive(qos, name, quantity, None):
                return True
    return False


class Engine:
    """The verbs over ``mirrors``, counting ``ledger``'s open entries. ``opt_in_resources`` are ignored when
    deciding whether a pod has exclusive resources."""

    def __init__(self, mirrors: Mirrors, ledger: Ledger, opt_in_resources: Collection[str] = ()) -> None:
        self.mirrors = mirrors
        self.ledger = ledger
        self.opt_in_resources = frozenset(opt_in_resources)
        mirrors.on_apply(ledger.mirror_applied)
        self.would_admit = WouldAdmit(mirrors.emulators, assumed=ledger.by_node, share=True)
        self.numa_fit = ExactNUMAFit(self.would_admit)
        self._pods: OrderedDict[str, Pod] = OrderedDict()
        self._could_preempt: dict[tuple[int, str], tuple[NodeEmulator, int, bool]] = {}

    # ---- Filter --------------------------------------------------------------------------------------

    def filter(self, args: ExtenderArgs) -> ExtenderFilterResult:
        names = args.node_names
        if names is None:
            return ExtenderFilterResult(error=NODE_CACHE_ONLY)
        pod = args.pod
        self._remember(pod)
        self.ledger.expire()
        self.ledger.close(pod.uid, CLOSED_BY_REFILTER)
        if not self.exclusive(pod):
            return ExtenderFilterResult(list(names), {}, {})
        passed: list[str] = []
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        for name in names:
            lookup = self.mirrors.lookup(name)
            if lookup.mirror is None:
                unresolvable[name] = lookup.reason
                continue
            verdict = self._verdict(pod, name)
            if verdict.admitted:
                passed.append(name)
            elif self._preemption_could_help(pod, name):
                failed[name] = _message(verdict)
            else:
                unresolvable[name] = _message(verdict)
        if len(passed) == 1:
            self.ledger.open(pod, passed[0], OPENED_BY_FILTER)
        return ExtenderFilterResult(passed, failed, unresolvable)

    # ---- Prioritize ----------------------------------------------------------------------------------

    def prioritize(self, args: ExtenderArgs) -> list[HostPriority]:
        names = args.candidate_names() or ()
        pod = args.pod
        if not self.exclusive(pod):
            return [HostPriority(name, 0) for name in names]
        self.ledger.expire()
        self.ledger.close(pod.uid, CLOSED_BY_REFILTER)
        admitted: list[str] = []
        keys: list[int] = []
        for name in names:
            if self.mirrors.lookup(name).mirror is None or not self._verdict(pod, name).admitted:
                continue
            admitted.append(name)
            keys.append(self._score(pod, name))
        scores = dict(
            zip(admitted, self.numa_fit.normalize_scores(pod, admitted, keys, _OTHERS_AT_MOST), strict=True)
        )
        if admitted:
            # One node alone gets the top score: the first of the best keys in the scheduler's order (which
            # rotates with its nextStartNodeIndex), so that the node the ledger charges is the one the
            # scheduler picks (see _OTHERS_AT_MOST).
            best = min(keys)
            chosen = admitted[keys.index(best)]
            scores[chosen] = MAX_EXTENDER_PRIORITY
            self.ledger.open(pod, chosen, OPENED_BY_PRIORITIZE)
        return [HostPriority(name, scores.get(name, 0)) for name in names]

    # ---- Preempt -------------------------------------------------------------------------------------

    def preempt(self, args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult:
        pod = args.pod
        exclusive = self.exclusive(pod)
        if exclusive:
            self.ledger.expire()
        kept: dict[str, MetaVictims | None] = {}
        for node, victims in args.victims().items():
            if victims is None or not victims.uids():
                continue  # kube-scheduler refuses a node returned without victims
            if not exclusive:
                kept[node] = victims
                continue
            if self.mirrors.lookup(node).mirror is None:
                continue
            if self._admits_without(pod, node, victims.uids()):
                kept[node] = victims
        return ExtenderPreemptionResult(kept)

    # ---- Bind's outcome ------------------------------------------------------------------------------

    def bound(self, uid: str, node: str) -> bool:
        """The pod was bound to ``node``: its entry moves (or opens) there; False when the pod is unknown."""
        entry = self.ledger.entry(uid)
        pod = entry.pod if entry is not None else self._pods.get(uid)
        if pod is None:
            return False
        self.ledger.open(pod, node, OPENED_BY_BIND)
        return True

    def bind_failed(self, uid: str) -> None:
        """The binding failed: the scheduler unreserves and requeues the pod, which counts nowhere now."""
        self.ledger.close(uid, CLOSED_BY_BIND_ERROR)

    # ---- helpers -------------------------------------------------------------------------------------

    def exclusive(self, pod: Pod) -> bool:
        return has_exclusive_resources(pod, self.opt_in_resources)

    def _remember(self, pod: Pod) -> None:
        self._pods[pod.uid] = pod
        self._pods.move_to_end(pod.uid)
        while len(self._pods) > _REMEMBERED_PODS:
            self._pods.popitem(last=False)

    def _verdict(self, pod: Pod, name: str) -> Verdict:
        try:
            return self.would_admit.verdict(pod, name)
        except EmulatorError as err:  # the node already holds a pod of this UID or namespace/name
            return Verdict(False, "PodExists", str(err))

    def _score(self, pod: Pod, name: str) -> int:
        """ExactNUMAFit's key as one integer, kept per pod shape until the node (as counted) changes: it
        reads only the node's state and the pod's shape, so nodes of one state class share it."""
        return self.would_admit.kept_answer(
            name,
            (_SCORE, pod_shape(pod)),
            lambda _, asked: self.numa_fit.score(asked, self._node_info(name)),
            pod,
        )

    def _node_info(self, name: str) -> NodeInfo:
        """The node as ExactNUMAFit's fallback reads it (a manager not static): allocatable and pods."""
        view = self.would_admit.emulator(name)
        node = Node(name=name, allocatable=MappingProxyType(dict(view.allocatable.allocatable)))
        return NodeInfo(name, node, pods=tuple(view.registry.pods()))

    def _lower_priority(self, pod: Pod, view: NodeEmulator) -> list[str]:
        own = pod.priority or 0
        return [p.uid for p in view.registry.pods() if (p.priority or 0) < own]

    def _preemption_could_help(self, pod: Pod, name: str) -> bool:
        """Whether the kubelet would admit the pod once every lower-priority pod on the node is gone (the
        most any preemption can free); kept per (node state, pod shape and priority)."""
        view = self.would_admit.emulator(name)
        victims = self._lower_priority(pod, view)
        if not victims:
            return False
        key = (pod_shape(pod), name)
        kept = self._could_preempt.get(key)
        if kept is not None and kept[0] is view and kept[1] == view.state_version:
            return kept[2]
        answer = self._admits_on(view, pod, victims)
        self._could_preempt[key] = (view, view.state_version, answer)
        return answer

    def _admits_without(self, pod: Pod, name: str, uids: Collection[str]) -> bool:
        return self._admits_on(self.would_admit.emulator(name), pod, uids)

    @staticmethod
    def _admits_on(view: NodeEmulator, pod: Pod, uids: Collection[str]) -> bool:
        fork = view.fork()
        for uid in uids:
            if uid in fork.registry:
                fork.remove(uid)
        try:
            return fork.would_admit(pod).admitted
        except EmulatorError:
            return False


def _message(verdict: Verdict) -> str:
    return f"{verdict.reason}: {verdict.message}" if verdict.message else verdict.reason
