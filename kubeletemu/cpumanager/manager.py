"""``cpu_manager.go``: the CPU manager, a Topology Manager hint provider wrapping a policy and its state.

The Topology Manager calls ``get_topology_hints`` / ``get_pod_topology_hints``, stores the merged hint,
then calls ``allocate`` (or ``allocate_pod`` with ``PodLevelResourceManagers``), which reads that hint
back through the Store. The kubelet's stale-state sweep over active pods is ``remove_stale_state``: with
``active_pods`` it runs first in every hint and allocation call, as ``GetTopologyHints``,
``GetPodTopologyHints``, ``Allocate`` and ``AllocatePod`` call ``removeStaleState`` (kubernetes v1.37.2
``pkg/kubelet/cm/cpumanager/cpu_manager.go``; the same at v1.33.3, v1.34.7, v1.35.4 and v1.36.3), and its
``reconcileState`` loop calls it every ``cpuManagerReconcilePeriod`` (the fleet's kubelets run that loop,
:mod:`kubeletemu.fleet.kubelet`). So a pod that is no longer active keeps its exclusive CPUs until the next of
these.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CPUManagerError
from kubeletemu.cpumanager.metrics import CPUManagerMetrics
from kubeletemu.cpumanager.policy import Policy
from kubeletemu.cpumanager.policy_none import POLICY_NONE, NonePolicy
from kubeletemu.cpumanager.policy_static import POLICY_STATIC, StaticPolicy
from kubeletemu.cpumanager.reservation import num_reserved_cpus
from kubeletemu.cpumanager.state.formats import CPUCheckpointFormat
from kubeletemu.cpumanager.state.state import ContainerCPUAssignments, State
from kubeletemu.cpumanager.state.state_checkpoint import CheckpointState
from kubeletemu.cpumanager.state.state_mem import MemoryState
from kubeletemu.cpumanager.topology import CPUTopology
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import ProviderHints, Store
from kubeletemu.versions.version import MASTER

POLICY_NAMES = (POLICY_NONE, POLICY_STATIC)
# The kubelet's GetActivePods: pods (or their UIDs: every container of the pod is active).
ActivePodsFunc = Callable[[], Iterable[Pod | str]]


class CPUManager:
    """``manager``: serialises policy calls and keeps the container-id map."""

    def __init__(
        self,
        policy: Policy,
        topology: CPUTopology | None,
        state: State | None = None,
        active_pods: ActivePodsFunc | None = None,
    ) -> None:
        self.policy = policy
        self.topology = topology
        # None: no stale-state sweep at admission (the manager alone, as the conformance tables drive it).
        self.active_pods = active_pods
        # The pod being admitted is active to the sweep (the kubelet's pod manager holds it already).
        self._pending_pod: str | None = None
        self._lock = threading.RLock()
        self._state: State | None = state
        # containerID -> (podUID, container name), filled by add_container.
        self.container_map: dict[str, tuple[str, str]] = {}
        self._allocatable = CPUSet()
        # The cpu_manager_state format of the emulated kubelet (new_manager sets it from the version).
        self.checkpoint_format = CPUCheckpointFormat()

    # -- life cycle ----------------------------------------------------------------------------------

    def start(
        self,
        state_dir: str | os.PathLike[str] | None = None,
        initial_containers: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        """``Start``: open the state (the checkpoint in ``state_dir``, or memory), then the policy's
        ``Start`` (initialise or validate it). Raises ``StateError`` with the kubelet's text."""
        with self._lock:
            self.container_map.update(initial_containers or {})
            if self._state is None:
                if state_dir is None:
                    self._state = MemoryState()
                else:
                    self._state = CheckpointState(
                        state_dir,
                        self.policy.name,
                        self.container_map,
                        checkpoint_format=self.checkpoint_format,
                    )
            self.policy.start(self._state)
            self._allocatable = self.policy.get_allocatable_cpus(self._state)

    def copy_for(self, affinity: Store, active_pods: ActivePodsFunc | None = None) -> CPUManager:
        """A manager on an in-memory copy of this one's state, bound to ``affinity`` (another Topology
        Manager): what a what-if runs on. The policy's ``Start`` validation is not run again (the kubelet
        validates its state only when it starts, never at admission); the static policy's gauges are set
        from the copy as ``Start`` sets them, and its options are checked against ``affinity`` as
        ``NewStaticPolicy`` checks them (``new static policy error: ...``)."""
        with self._lock:
            state = copy_state(self.state)
            policy: Policy = self.policy
            if isinstance(policy, StaticPolicy):
                try:
                    policy = policy.copy_for(affinity)
                except CPUManagerError as err:
                    raise type(err)(f"new static policy error: {err}") from None
                policy.update_metrics_from_state(state)
        manager = CPUManager(policy, self.topology, state, active_pods)
        manager.checkpoint_format = self.checkpoint_format
        manager._allocatable = self._allocatable
        return manager

    @property
    def state(self) -> State:
        if self._state is None:
            raise CPUManagerError("the CPU manager has not been started")
        return self._state

    # -- the HintProvider ------------------------------------------------------------------------------

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints:
        self._admitting(pod)
        with self._lock:
            return self.policy.get_topology_hints(self.state, pod, container)

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints:
        self._admitting(pod)
        with self._lock:
            return self.policy.get_pod_topology_hints(self.state, pod)

    def allocate(self, pod: Pod, container: Container) -> None:
        self._admitting(pod)
        with self._lock:
            self.policy.allocate(self.state, pod, container)

    def _admitting(self, pod: Pod) -> None:
        """``removeStaleState`` before the call, with the pod being admitted counted active."""
        self._pending_pod = pod.uid
        self.remove_stale_state()

    def metrics(self) -> CPUManagerMetrics:
        """The policy's metric values now: the static policy's counters and gauges; nothing under none,
        which the kubelet never counts nor sets."""
        with self._lock:
            if isinstance(self.policy, StaticPolicy):
                return self.policy.metrics()
            return CPUManagerMetrics()

    def pinning_counts(self) -> tuple[int, int]:
        """(pinning requests, pinning errors) so far: the static policy's, zero under none."""
        metrics = self.metrics()
        return metrics.pinning_requests, metrics.pinning_errors

    def allocate_pod(self, pod: Pod) -> None:
        self._admitting(pod)
        with self._lock:
            self.policy.allocate_pod(self.state, pod)

    # -- containers ------------------------------------------------------------------------------------

    def add_container(self, pod: Pod, container: Container, container_id: str) -> None:
        with self._lock:
            self.container_map[container_id] = (pod.uid, container.name)

    def remove_container(self, container_id: str) -> None:
        """``RemoveContainer`` by container id; an unknown id is ignored."""
        with self._lock:
            ref = self.container_map.get(container_id)
            if ref is None:
                return
            self.policy.remove_container(self.state, *ref)
            del self.container_map[container_id]

    def remove_container_by_ref(self, pod_uid: str, container_name: str) -> None:
        with self._lock:
            self.policy.remove_container(self.state, pod_uid, container_name)
            for cid in [cid for cid, ref in self.container_map.items() if ref == (pod_uid, container_name)]:
                del self.container_map[cid]

    def remove_pod(self, pod_uid: str) -> None:
        """Release every container of a pod (what the stale-state sweep does once the pod is gone)."""
        with self._lock:
            names = set(self.state.get_cpu_assignments().get(pod_uid, {}))
            names |= {name for uid, name in self.container_map.values() if uid == pod_uid}
            for name in sorted(names):
                self.remove_container_by_ref(pod_uid, name)
            if self._pending_pod == pod_uid:
                self._pending_pod = None

    def restore_checkpoint(self, blob: bytes, admitted: Iterable[str]) -> None:
        """Go back to a checkpoint's content, writing nothing (the daemon's undo of calls whose files
        could not be written): the state, and what the policy keeps per pod for the ``admitted`` pods only,
        as a restart would find it."""
        with self._lock:
            state = self.state
            if not isinstance(state, CheckpointState):
                raise CPUManagerError("the CPU manager's state is not checkpointed")
            state.restore(blob)
            keep = set(admitted)
            self.container_map = {cid: ref for cid, ref in self.container_map.items() if ref[0] in keep}
            if isinstance(self.policy, StaticPolicy):
                reuse = self.policy.cpus_to_reuse
                for uid in [uid for uid in reuse if uid not in keep]:
                    del reuse[uid]
                self.policy.update_metrics_from_state(state)

    def remove_stale_state(self, active_pods: Iterable[Pod | str] | None = None) -> list[str]:
        """``removeStaleState``: forget containers that no active pod has any more; returns the UIDs of
        the pods whose state went. ``active_pods`` None: the manager's own ``active_pods`` and the pod
        being admitted (no sweep without them)."""
        if active_pods is None:
            if self.active_pods is None:
                return []
            active_pods = [*self.active_pods(), *([self._pending_pod] if self._pending_pod else [])]
        with self._lock:
            whole: set[str] = set()
            active: set[tuple[str, str]] = set()
            for pod in active_pods:
                if isinstance(pod, str):
                    whole.add(pod)
                else:
                    active.update((pod.uid, c.name) for c in pod.all_containers())
            assignments = self.state.get_cpu_assignments()
            if not active and all(uid in whole for uid in assignments) and not self.container_map:
                return []  # the common case at admission: nothing stale (no set of references built)

            def is_stale(ref: tuple[str, str]) -> bool:
                return ref[0] not in whole and ref not in active

            stale = {
                (pod, name)
                for pod, containers in assignments.items()
                for name in containers
                if is_stale((pod, name))
            }
            stale |= {ref for ref in self.container_map.values() if is_stale(ref)}
            for pod_uid, name in sorted(stale):
                self.remove_container_by_ref(pod_uid, name)
            return sorted({pod_uid for pod_uid, _ in stale})

    # -- queries ---------------------------------------------------------------------------------------

    def get_exclusive_cpus(self, pod_uid: str, container_name: str) -> CPUSet:
        """``GetExclusiveCPUs``: the container's own CPUs, empty if it runs in the shared pool."""
        cpus = self.state.get_cpu_set(pod_uid, container_name)
        return CPUSet() if cpus is None else cpus

    def get_cpu_affinity(self, pod_uid: str, container_name: str) -> CPUSet:
        """``GetCPUAffinity``: where the container runs (its exclusive CPUs, else the shared pool)."""
        return self.state.get_cpu_set_or_default(pod_uid, container_name)

    def get_assignments(self) -> ContainerCPUAssignments:
        return self.state.get_cpu_assignments()

    def get_default_cpu_set(self) -> CPUSet:
        """The shared pool."""
        return self.state.get_default_cpu_set()

    def get_allocatable_cpus(self) -> CPUSet:
        """``GetAllocatableCPUs``: all CPUs minus reserved (empty for the none policy)."""
        return self._allocatable

    def get_reserved_cpus(self) -> CPUSet:
        return self.policy.reserved_cpus if isinstance(self.policy, StaticPolicy) else CPUSet()

    def get_exclusively_assigned_cpus(self) -> CPUSet:
        """Every CPU some container holds (``getTotalAssignedExclusiveCPUs``)."""
        return CPUSet().union(
            *(c for containers in self.get_assignments().values() for c in containers.values())
        )

    def _per_numa(self, cpus: CPUSet) -> dict[int, int]:
        if self.topology is None:
            return {}
        details = self.topology.cpu_details
        counts = dict.fromkeys(details.numa_nodes().list(), 0)
        for cpu in cpus.elems:
            info = details.get(cpu)
            if info is not None:
                counts[info.numa_node_id] += 1
        return counts

    def exclusive_cpus_per_numa(self) -> dict[int, int]:
        """Exclusively assigned CPUs per NUMA node (the kubelet's per-NUMA allocation metric)."""
        return self._per_numa(self.get_exclusively_assigned_cpus())

    def allocatable_cpus_per_numa(self) -> dict[int, int]:
        """Allocatable CPUs (reserved excluded) per NUMA node."""
        return self._per_numa(self.get_allocatable_cpus())

    def numa_utilization_score(self, numa_nodes: Iterable[int]) -> int:
        """KEP-6007 (unmerged): max(1, assigned·100 // allocatable) over the nodes.

        0 when the nodes have nothing allocatable (the none policy).
        """
        nodes = set(numa_nodes)
        assigned = sum(n for numa, n in self.exclusive_cpus_per_numa().items() if numa in nodes)
        allocatable = sum(n for numa, n in self.allocatable_cpus_per_numa().items() if numa in nodes)
        if allocatable == 0:
            return 0
        return max(1, assigned * 100 // allocatable)


def copy_state(state: State) -> MemoryState:
    """An in-memory copy of ``state``: what a what-if copy, or a kubelet restarted on it, starts from."""
    copied = MemoryState()
    copied.set_default_cpu_set(state.get_default_cpu_set())
    copied.set_cpu_assignments(state.get_cpu_assignments())
    copied.set_pod_cpu_assignments(state.get_pod_cpu_assignments())
    return copied


def new_manager(
    policy_name: str,
    policy_options: Mapping[str, str] | None,
    topology: CPUTopology | None,
    affinity: Store,
    *,
    node_allocatable_cpu_reservation: Quantity | None = None,
    reserved_system_cpus: CPUSet | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    initial_containers: Mapping[str, tuple[str, str]] | None = None,
    start: bool = True,
    state: State | None = None,
    kubelet_version: str = MASTER,
    active_pods: ActivePodsFunc | None = None,
) -> CPUManager:
    """``NewManager`` (and, unless ``start=False``, ``Start``).

    The static policy's options are checked against their maturity at ``kubelet_version`` (issue 16).

    ``node_allocatable_cpu_reservation`` is the cpu of kube-reserved + system-reserved (see
    ``reservation.node_allocatable_cpu_reservation``); ``reserved_system_cpus`` the explicit list.
    ``state``, when given, is used instead of opening one (an in-memory copy for what-if questions).
    """
    policy: Policy
    if policy_name == POLICY_NONE:
        try:
            policy = NonePolicy(policy_options)
        except CPUManagerError as err:
            raise type(err)(f"new none policy error: {err}") from None
    elif policy_name == POLICY_STATIC:
        if topology is None:
            raise CPUManagerError("could not detect number of cpus")
        num_reserved = num_reserved_cpus(node_allocatable_cpu_reservation)
        try:
            policy = StaticPolicy(
                topology,
                num_reserved,
                reserved_system_cpus,
                affinity,
                policy_options,
                feature_gates,
                kubelet_version,
            )
        except CPUManagerError as err:
            raise type(err)(f"new static policy error: {err}") from None
    else:
        raise CPUManagerError(f'unknown policy: "{policy_name}"')
    manager = CPUManager(policy, topology, state, active_pods)
    manager.checkpoint_format = CPUCheckpointFormat.for_kubelet(kubelet_version, feature_gates)
    if start:
        manager.start(state_dir, initial_containers)
    return manager
