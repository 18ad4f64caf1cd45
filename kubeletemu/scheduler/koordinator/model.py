"""Koordinator's NodeNUMAResource as :class:`~kubeletemu.scheduler.framework.Model` s: the shipped code
(``NodeNUMAResource``, exact to koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``) and
the design of the seed Koordinator NUMA document (``NodeNUMAResourceDesign``).

A node is read the way the scheduler holds it: the Node object's labels, annotations and allocatable (a
node known only from its NRT has no labels and the sum of its zones' allocatable), the NRT through the
plugin's ``NewTopologyOptions``, and Koordinator's accounting of the pods bound to it (their
resource-status annotations). Filter, Score and Reserve run one pod in one fresh scheduling cycle.

The design model differs from the shipped one only where the design says otherwise (scheduler-side.md §3):

- policy: the kubelet's policy from the NRT's ``topologyPolicies`` (every kubelet name, container-level
  single-numa-node included) wins when it is not None; otherwise the node label, where ``None`` or any
  unknown value is none (no crash);
- merge: the kubelet's hint preference (fewest NUMA nodes), also under Restricted, and no hint scores;
- score: the share of the node's NUMA nodes in use once the pod is placed (MostAllocated, the default) or
  not in use (LeastAllocated), ×100, integer division; the node's ``numa-allocate-strategy`` label, when
  MostAllocated or LeastAllocated, picks the strategy.

Everything the design does not speak of (pod-level policy, cpusets, accounting, reasons) is shipped code.

What the scheduler keeps between cycles is kept here too: the node's :class:`NodeState` (its topology
options, accounting, labels and totals) once per NodeInfo, the design's view of it once per NodeInfo, and
PreFilter's state once per pod (:meth:`NodeNUMAResourcePlugin.pre_filter`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from kubeletemu.config import fields
from kubeletemu.lifecycle.resources import Resource, sum_requests
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import Crash, NodeInfo, PluginPanic, Status, memo
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.koordinator import reservation as rsv
from kubeletemu.scheduler.koordinator.allocation import node_allocation
from kubeletemu.scheduler.koordinator.args import NodeNUMAResourceArgs
from kubeletemu.scheduler.koordinator.deviceshare import DeviceReserveResult, DeviceShare
from kubeletemu.scheduler.koordinator.hint_provider import DeviceShareProvider, NUMAHintProvider
from kubeletemu.scheduler.koordinator.merge import (
    POLICY_BEST_EFFORT,
    POLICY_NONE,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    NUMATopologyHint,
)
from kubeletemu.scheduler.koordinator.options import (
    PolicyConflict,
    TopologyOptions,
    merge_topology_policy,
    topology_options,
)
from kubeletemu.scheduler.koordinator.plugin import (
    FilterResult,
    NodeNUMAResourcePlugin,
    PreFilterState,
    ReserveResult,
)
from kubeletemu.scheduler.koordinator.resources import (
    AllocateRefused,
    NodeState,
    ResourceError,
    allocate,
)
from kubeletemu.scheduler.koordinator.scoring import LEAST_ALLOCATED, MOST_ALLOCATED

NAME = "NodeNUMAResource"
DESIGN_NAME = "NodeNUMAResourceDesign"
# The kubelet's policies as the NRT's legacy list names them, read by the design.
_DESIGN_KUBELET_POLICIES = {
    "BestEffort": POLICY_BEST_EFFORT,
    "Restricted": POLICY_RESTRICTED,
    "SingleNUMANodePodLevel": POLICY_SINGLE_NUMA_NODE,
    "SingleNUMANodeContainerLevel": POLICY_SINGLE_NUMA_NODE,
}


def node_state(node: NodeInfo) -> NodeState:
    """The node as NodeNUMAResource's managers and the scheduler's snapshot hold it, built once per
    NodeInfo (nothing in it is changed by Filter, Score or Reserve). A panic while building it (a
    cpu-topology annotation that fails to decode) is kept too and raised afresh on every call."""
    state = memo(node, "_koord_node_state", lambda: _build_node_state(node))
    if isinstance(state, Crash):
        raise PluginPanic(state.what, state.where)
    return state


def _build_node_state(node: NodeInfo) -> NodeState | Crash:
    try:
        return _node_state(node)
    except PluginPanic as panic:
        return panic.crash


def _node_state(node: NodeInfo) -> NodeState:
    options = topology_options(node.topology) if node.topology is not None else TopologyOptions()
    if node.node is not None:
        labels: Mapping[str, str] = node.node.labels
        annotations: Mapping[str, str] = node.node.annotations
        allocatable = Resource.from_list({k: q.amount for k, q in node.node.allocatable.items()})
    else:
        labels, annotations = {}, {}
        totals: dict[str, Fraction] = {}
        for zone in node.topology.zones if node.topology is not None else ():
            for resource in zone.resources:
                totals[resource.name] = totals.get(resource.name, Fraction(0)) + resource.allocatable.amount
        allocatable = Resource.from_list(totals)
    return NodeState(
        name=node.name,
        options=options,
        allocation=node_allocation((*rsv.reserve_pods(node.reservations), *node.pods), options),
        labels=labels,
        annotations=annotations,
        allocatable=allocatable,
        requested=sum_requests(node.pods),
    )


def _restore(pod: Pod, node: NodeInfo, view: NodeState) -> rsv.NodeRestoreState:
    """The pod's matched and unmatched reservations on the node (none without Reservation objects)."""
    if not node.reservations:
        return rsv.EMPTY_RESTORE
    return rsv.restore_state(pod, node.reservations, node.pods, view.allocation)


CycleResult = tuple[PreFilterState | Status, NodeState, FilterResult]


class NodeNUMAResource:
    """The shipped plugin. ``filter``/``score`` may raise
    :class:`~kubeletemu.scheduler.framework.PluginPanic` (an unknown policy label on a node with NUMA
    zones; a malformed cpu-topology annotation; non-contiguous NUMA ids with a pod-level policy)."""

    name = NAME

    def __init__(self, args: NodeNUMAResourceArgs | None = None) -> None:
        self.plugin = NodeNUMAResourcePlugin(args)
        # The shipped profile runs DeviceShare next to NodeNUMAResource (PreFilter, Filter and Reserve
        # right after it, and as a second NUMA hint provider); a node without a Device object and without
        # pods holding devices is left alone by it.
        self.device_share = DeviceShare()
        # The scheduling cycle's CycleState: Score and Reserve read what Filter computed for the same pod
        # on the same node. Kept for the current pod only, by node identity (the entries hold the nodes,
        # so an id cannot be reused while cached); NodeInfo and Pod are frozen, so an entry cannot go stale.
        self._cycle_pod: Pod | None = None
        self._cycle_results: dict[int, tuple[NodeInfo, CycleResult]] = {}

    def _cycle(self, pod: Pod, node: NodeInfo) -> CycleResult:
        if pod is not self._cycle_pod:
            self._cycle_pod, self._cycle_results = pod, {}
        cached = self._cycle_results.get(id(node))
        if cached is not None and cached[0] is node:
            return cached[1]
        result = self._run_cycle(pod, node)
        self._cycle_results[id(node)] = (node, result)
        return result

    def _run_cycle(self, pod: Pod, node: NodeInfo) -> CycleResult:
        state = self.plugin.pre_filter(pod)
        view = node_state(node)
        if isinstance(state, Status):
            return state, view, FilterResult(state)
        return state, view, self._with_devices(pod, node, state, view)

    def _with_devices(self, pod: Pod, node: NodeInfo, state: PreFilterState, view: NodeState) -> FilterResult:
        """DeviceShare's PreFilter, NodeNUMAResource's Filter (DeviceShare a hint provider of its NUMA
        admission), then DeviceShare's Filter, which passes when that admission stored an affinity."""
        devices = self.device_share.pre_filter(pod)
        if isinstance(devices, Status):
            return FilterResult(devices)
        restore, providers = _restore(pod, node, view), self._providers(pod, node)
        result = self._filter_plugin().filter(state, view, restore, providers)
        if not result.status.ok:
            return result
        status = self.device_share.filter(pod, node, affinity_stored=result.affinity is not None)
        return result if status.ok else FilterResult(status)

    def _providers(self, pod: Pod, node: NodeInfo) -> tuple[NUMAHintProvider, ...]:
        return (DeviceShareProvider(self.device_share, pod, node),)

    def _filter_plugin(self) -> NodeNUMAResourcePlugin:
        """The plugin whose Filter runs (the design's prefers the fewest NUMA nodes)."""
        return self.plugin

    def _nominated(
        self,
        pod: Pod,
        node: NodeInfo,
        state: PreFilterState,
        view: NodeState,
        affinity: NUMATopologyHint | None,
    ) -> rsv.NodeRestoreState:
        """The pod's reservations on the node with one nominated: the first matched reservation (name
        order) that passes ``FilterNominateReservation`` under Filter's affinity. The shipped nominator
        scores the candidates in the Reservation plugin; that ranking is not modelled."""
        restore = _restore(pod, node, view)
        if not restore.matched or state.skip:
            return restore
        bind = self.plugin._request_cpu_bind(state, view)
        if isinstance(bind, Status):
            return restore
        try:
            opts = self.plugin.resource_options(state, view, bind, affinity)
        except ResourceError:
            return restore
        for alloc in restore.matched:
            if rsv.filter_nominate_reservation(view, restore, opts, alloc.uid, state.reservation_ignored).ok:
                return replace(restore, nominated=alloc.uid)
        return restore

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        return self._cycle(pod, node)[2].status

    def score(self, pod: Pod, node: NodeInfo) -> int:
        state, view, result = self._cycle(pod, node)
        if isinstance(state, Status):
            return 0
        if node.reservations:
            return self.plugin.score(
                state, view, result.affinity, self._nominated(pod, node, state, view, result.affinity)
            )
        return self._score(state, view, result.affinity)

    def _score(self, state: PreFilterState, view: NodeState, affinity: NUMATopologyHint | None) -> int:
        return self.plugin.score(state, view, affinity)

    def reserve(self, pod: Pod, node: NodeInfo) -> Status:
        """Reserve after a Filter pass in the same cycle (a failed Filter is returned as is)."""
        return self.reserve_allocation(pod, node).status

    def reserve_allocation(self, pod: Pod, node: NodeInfo) -> ReserveResult:
        """Reserve's status with the allocation it stores (the CPU set and NUMA resources; None when
        nothing is allocated or Filter failed)."""
        state, view, result = self._cycle(pod, node)
        if isinstance(state, Status) or not result.status.ok:
            return ReserveResult(result.status)
        restore = self._nominated(pod, node, state, view, result.affinity)
        providers = self._providers(pod, node)
        reserved = self.plugin.reserve_allocation(
            state, view, result.affinity, restore, result.allocation, providers
        )
        if not reserved.status.ok:
            return reserved
        devices = self.reserve_devices(pod, node)
        return reserved if devices.status.ok else ReserveResult(devices.status)

    def reserve_devices(self, pod: Pod, node: NodeInfo) -> DeviceReserveResult:
        """DeviceShare's Reserve after NodeNUMAResource's: the devices it allocates inside the affinity
        the Topology Manager stored (at Filter, or at Reserve under BestEffort)."""
        state, view, result = self._cycle(pod, node)
        if isinstance(state, Status) or not result.status.ok:
            return DeviceReserveResult(result.status)
        affinity = result.affinity
        if not state.skip and self.plugin._merged_policy(state, view) == POLICY_BEST_EFFORT:
            restore = self._nominated(pod, node, state, view, result.affinity)
            admitted = self.plugin.filter_by_numa_node(
                state,
                view,
                POLICY_BEST_EFFORT,
                self.plugin._exclusive(state),
                restore,
                self._providers(pod, node),
            )
            affinity = admitted.affinity
        return self.device_share.reserve(pod, node, affinity)

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        """The NUMA topology policy Filter applies to ``pod`` on ``node`` ("none" for none): the node's
        (``getNUMATopologyPolicy``) merged with the pod's ``scheduling.koordinator.sh/numa-topology-spec``
        by ``mergeTopologyPolicy`` (``plugin.go`` ``Filter``, ``util.go``), so a pod-level policy wins on a
        node without one. Where no merge happens the node's policy is reported: a conflict (Filter
        refuses the node with "node(s) NUMA Topology policy not match") or a PreFilter refusal."""
        node_policy = self._node_policy(node)
        state = self.plugin.pre_filter(pod)
        if isinstance(state, Status):
            return node_policy or "none"
        try:
            return merge_topology_policy(node_policy, state.pod_numa_topology_policy) or "none"
        except PolicyConflict:
            return node_policy

    def _node_policy(self, node: NodeInfo) -> str:
        """The node's policy as this model's Filter reads it."""
        return self.plugin.node_policy(node_state(node))


class NodeNUMAResourceDesign(NodeNUMAResource):
    """The design of the seed document (see the module docstring for the points that differ)."""

    name = DESIGN_NAME

    def _node_policy(self, node: NodeInfo) -> str:
        return self.plugin.node_policy(self._design_view(node))

    def _design_view(self, node: NodeInfo) -> NodeState:
        return memo(node, "_koord_design_view", lambda: self._view(node_state(node), node))

    def _design_policy(self, view: NodeState) -> str:
        kubelet = view.options.numa_topology_policy
        if kubelet != POLICY_NONE:
            return kubelet
        label = ext.node_numa_topology_policy(view.labels)
        return (
            label
            if label in (POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)
            else POLICY_NONE
        )

    def _cycle(self, pod: Pod, node: NodeInfo) -> tuple[PreFilterState | Status, NodeState, FilterResult]:
        view = self._design_view(node)
        state = self.plugin.pre_filter(pod)
        if isinstance(state, Status):
            return state, view, FilterResult(state)
        return state, view, self._with_devices(pod, node, state, view)

    def _view(self, view: NodeState, node: NodeInfo) -> NodeState:
        """The node as the design reads it (depends on the node alone, so built once per NodeInfo)."""
        if node.topology is not None:
            kubelet = next(
                (
                    _DESIGN_KUBELET_POLICIES[p]
                    for p in node.topology.topology_policies
                    if p in _DESIGN_KUBELET_POLICIES
                ),
                POLICY_NONE,
            )
            view = replace(view, options=replace(view.options, numa_topology_policy=kubelet))
        # The design's precedence, expressed as the label the shipped reader would then see.
        labels = {**view.labels, ext.LABEL_NUMA_TOPOLOGY_POLICY: self._design_policy(view)}
        return replace(view, labels=labels)

    def _filter_plugin(self) -> NodeNUMAResourcePlugin:
        return _DesignPlugin(self.plugin.args)

    def _score(self, state: PreFilterState, view: NodeState, affinity: NUMATopologyHint | None) -> int:
        """Share of NUMA nodes in use after placing the pod, ×100 (MostAllocated) or its complement."""
        numa_nodes = view.options.numa_nodes()
        if state.skip or not numa_nodes:
            return 0
        used = {
            n for n, held in view.allocation.allocated_resources.items() if any(v > 0 for v in held.values())
        }
        used |= {info.node for info in view.allocation.allocated_cpus.values()}
        plugin = self.plugin
        bind = plugin._request_cpu_bind(state, view)
        if isinstance(bind, Status):
            return 0
        try:
            opts = plugin.resource_options(state, view, bind, affinity)
            placed = allocate(view, opts) if affinity is not None else None
        except (ResourceError, AllocateRefused):
            return 0
        if placed is not None:
            used |= {entry.node for entry in placed.numa_node_resources}
        in_use = len(used & set(numa_nodes)) * 100 // len(numa_nodes)
        strategy = view.labels.get(ext.LABEL_NODE_NUMA_ALLOCATE_STRATEGY, "")
        if strategy not in (MOST_ALLOCATED, LEAST_ALLOCATED):
            strategy = (
                MOST_ALLOCATED if plugin.args.numa_scoring_strategy.type == MOST_ALLOCATED else strategy
            )
            strategy = strategy or MOST_ALLOCATED
        return in_use if strategy == MOST_ALLOCATED else 100 - in_use


class _DesignPlugin(NodeNUMAResourcePlugin):
    """The kubelet's hint preference: fewest NUMA nodes under every policy, hints unscored."""

    def pod_topology_hints(
        self,
        state: PreFilterState,
        node: NodeState,
        policy: str,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
    ) -> dict[str, list[NUMATopologyHint]] | Status:
        hints = super().pod_topology_hints(state, node, POLICY_BEST_EFFORT, restore)
        if isinstance(hints, Status):
            return hints
        return {name: [replace(h, score=0) for h in resource_hints] for name, resource_hints in hints.items()}


def node_numa_resource(raw: Mapping[str, Any] | None, source: str) -> NodeNUMAResource:
    """A profile's model factory: the ``args`` of a ``NodeNUMAResource`` pluginConfig entry (errors name
    ``source`` and the field)."""
    return NodeNUMAResource(NodeNUMAResourceArgs.from_args(raw or {}, fields.Where(source)))


def node_numa_resource_design(raw: Mapping[str, Any] | None, source: str) -> NodeNUMAResourceDesign:
    return NodeNUMAResourceDesign(NodeNUMAResourceArgs.from_args(raw or {}, fields.Where(source)))
