"""``topology_manager.go``: construction (``NewManager``) and the admit handler."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubeletemu.admission import PodAdmitResult
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager.errors import TopologyManagerError
from kubeletemu.topologymanager.hint import TopologyHint
from kubeletemu.topologymanager.numa_info import NUMAInfo, NUMAInfoError
from kubeletemu.topologymanager.policy import POLICY_SINGLE_NUMA_NODE, MaskTieBreaker, Policy
from kubeletemu.topologymanager.policy_best_effort import POLICY_BEST_EFFORT, BestEffortPolicy
from kubeletemu.topologymanager.policy_none import POLICY_NONE, NonePolicy
from kubeletemu.topologymanager.policy_options import PolicyOptions, validate_policy_options
from kubeletemu.topologymanager.policy_restricted import POLICY_RESTRICTED, RestrictedPolicy
from kubeletemu.topologymanager.policy_single_numa_node import SingleNumaNodePolicy
from kubeletemu.topologymanager.provider import HintProvider
from kubeletemu.topologymanager.scope import SCOPE_CONTAINER, SCOPE_POD, MergeObserver, Scope
from kubeletemu.topologymanager.scope_container import ContainerScope
from kubeletemu.topologymanager.scope_pod import PodScope
from kubeletemu.versions.version import MASTER

POLICY_NAMES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)
SCOPE_NAMES = (SCOPE_CONTAINER, SCOPE_POD)

# (node id, distance row or None), in cadvisor order: what NewManager reads of the machine topology.
NUMATopology = Sequence[tuple[int, Sequence[int] | None]]


def new_policy(
    name: str,
    numa_info: NUMAInfo,
    options: PolicyOptions,
    tie_breaker: MaskTieBreaker | None = None,
) -> Policy:
    """The policy object for a name; ``unknown policy: "<name>"`` otherwise."""
    if name == POLICY_NONE:
        return NonePolicy()
    if name == POLICY_BEST_EFFORT:
        return BestEffortPolicy(numa_info, options, tie_breaker)
    if name == POLICY_RESTRICTED:
        return RestrictedPolicy(numa_info, options, tie_breaker)
    if name == POLICY_SINGLE_NUMA_NODE:
        return SingleNumaNodePolicy(numa_info, options, tie_breaker)
    raise TopologyManagerError(f'unknown policy: "{name}"')


class TopologyManager:
    """``Manager``: the pod admit handler plus the Store the providers read."""

    def __init__(self, scope: Scope, numa_info: NUMAInfo | None, options: PolicyOptions | None) -> None:
        self.scope = scope
        self.numa_info = numa_info
        self.options = options

    @property
    def policy(self) -> Policy:
        return self.scope.policy

    @property
    def scope_name(self) -> str:
        return self.scope.name

    def add_hint_provider(self, provider: HintProvider) -> None:
        self.scope.add_hint_provider(provider)

    def set_tie_breaker(self, tie_breaker: MaskTieBreaker | None) -> None:
        """Install KEP-6007's tie-breaker after construction (its ``SetNUMAScorer``): the scorer reads the
        CPU and memory managers, which the container manager builds after the Topology Manager.

        The policy is rebuilt with the tie-breaker; the none policy merges nothing and ignores it.
        """
        if self.numa_info is None or self.options is None:
            return
        self.scope.policy = new_policy(self.policy.name, self.numa_info, self.options, tie_breaker)

    def set_merge_observer(self, observer: MergeObserver | None) -> None:
        self.scope.observer = observer

    def add_container(self, pod: Pod, container: Container, container_id: str) -> None:
        self.scope.add_container(pod, container, container_id)

    def remove_container(self, container_id: str) -> None:
        self.scope.remove_container(container_id)

    def remove_pod(self, pod_uid: str) -> None:
        self.scope.remove_pod(pod_uid)

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        return self.scope.get_affinity(pod_uid, container_name)

    def get_policy(self) -> Policy:
        return self.scope.get_policy()

    def admit(self, pod: Pod) -> PodAdmitResult:
        return self.scope.admit(pod)


def new_manager(
    topology: NUMATopology | None,
    policy_name: str,
    scope_name: str,
    policy_options: Mapping[str, str] | None,
    feature_gates: Mapping[str, bool] | None = None,
    tie_breaker: MaskTieBreaker | None = None,
    kubelet_version: str = MASTER,
) -> TopologyManager:
    """``NewManager``. Policy none short-circuits: no option parsing, no NUMA count check.

    Options are checked against the maturity levels of ``kubelet_version`` (issue 16).

    More NUMA nodes than max-allowable-numa-nodes (strictly greater) is an error that stops the kubelet, as
    are KEP-6007 options the policy cannot honour (``validate_policy_options``).
    """
    if policy_name == POLICY_NONE:
        return TopologyManager(Scope(NonePolicy()), None, None)
    options = PolicyOptions.from_map(policy_options, feature_gates, kubelet_version=kubelet_version)
    try:
        numa_info = NUMAInfo.from_topology(topology, options.prefer_closest_numa)
    except NUMAInfoError as err:
        raise TopologyManagerError(f"cannot discover NUMA topology: {err}") from None
    if len(numa_info.nodes) > options.max_allowable_numa_nodes:
        raise TopologyManagerError(
            f"unsupported on machines with more than {options.max_allowable_numa_nodes} NUMA Nodes"
        )
    policy = new_policy(policy_name, numa_info, options, tie_breaker)
    validate_policy_options(policy_name, options)
    gates = feature_gates or {}
    scope: Scope
    if scope_name == SCOPE_CONTAINER:
        scope = ContainerScope(policy, gates.get("PodLevelResourceManagers", False))
    elif scope_name == SCOPE_POD:
        scope = PodScope(policy, gates.get("PodLevelResourceManagers", False))
    else:
        raise TopologyManagerError(f'unknown scope: "{scope_name}"')
    return TopologyManager(scope, numa_info, options)
