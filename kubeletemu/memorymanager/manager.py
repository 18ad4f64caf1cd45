"""The memory manager (``memory_manager.go``): a Topology Manager hint provider over a policy and a state.

Beyond the kubelet's surface it answers the queries the emulator's other parts need: memory blocks per
container (podresources ``memory``), allocatable and assigned bytes per NUMA node (KEP-6007 scoring).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kubeletemu.golang import go_quote
from kubeletemu.memorymanager.errors import MemoryManagerError
from kubeletemu.memorymanager.machine import MachineInfo
from kubeletemu.memorymanager.policy import Policy
from kubeletemu.memorymanager.policy_none import POLICY_NONE, NonePolicy
from kubeletemu.memorymanager.policy_static import POLICY_STATIC, StaticPolicy
from kubeletemu.memorymanager.quantity_format import GoQuantity
from kubeletemu.memorymanager.reserved_memory import (
    MemoryReservation,
    QuantityLike,
    get_node_allocatable_reservation,
    get_system_reserved_memory,
)
from kubeletemu.memorymanager.state.formats import MemoryCheckpointFormat
from kubeletemu.memorymanager.state.state import Block, MemoryTable, State
from kubeletemu.memorymanager.state.state_checkpoint import MEMORY_MANAGER_STATE_FILE, CheckpointState
from kubeletemu.memorymanager.state.state_mem import MemoryState
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager.hint import ProviderHints
from kubeletemu.topologymanager.provider import Store
from kubeletemu.versions.version import MASTER

POLICY_NAMES = (POLICY_NONE, POLICY_STATIC)


@dataclass(frozen=True)
class MemoryManagerMetrics:
    """``memory_manager_pinning_{requests,errors}_total`` so far: the static policy's ``Allocate`` counts
    them (a ``defer`` counts the errors); the None policy counts nothing. The memory manager has no gauges
    and creates no labelled series at start."""

    pinning_requests: int = 0
    pinning_errors: int = 0


# Returns the active pods (or their UIDs); state of any other pod is dropped before hints and allocation.
ActivePodsFunc = Callable[[], Iterable[Pod | str]]


class MemoryManager:
    """``manager``: implements ``HintProvider``. Build it with :func:`new_manager`."""

    def __init__(
        self,
        policy: Policy,
        state: State,
        active_pods: ActivePodsFunc | None = None,
        *,
        start: bool = True,
        allocatable: list[Block] | None = None,
    ) -> None:
        """``start`` False skips the policy's ``Start``, and ``allocatable`` is what it computed (a what-if
        copy of a running manager, see :meth:`copy_for`)."""
        self.policy = policy
        self.state = state
        self.active_pods = active_pods
        self._lock = threading.RLock()
        # containerID -> (pod UID, container name)
        self._container_map: dict[str, tuple[str, str]] = {}
        # The pod being admitted counts as active, like the kubelet's pending-admission pod.
        self._pending_pod: str | None = None
        if start:
            self._start()
        self._allocatable = (
            self.policy.get_allocatable_memory(self.state) if allocatable is None else allocatable
        )

    def _start(self) -> None:
        """``Start``'s policy start. On a checkpoint the kubelet logs "Invalid state, please drain node and
        remove policy state file" and stops with ``start memory manager error: <err>``
        (``container_manager_linux.go``); that text, naming the file."""
        try:
            self.policy.start(self.state)
        except MemoryManagerError as err:
            path = getattr(self.state, "path", None)
            if path is None:
                raise
            raise MemoryManagerError(
                f"start memory manager error: {err} (invalid state in {go_quote(str(path))}: please drain "
                "node and remove policy state file)"
            ) from None

    def copy_for(self, affinity: Store, active_pods: ActivePodsFunc | None = None) -> MemoryManager:
        """A manager on an in-memory copy of this one's state, bound to ``affinity`` (another Topology
        Manager): what a what-if runs on. ``Start`` is not run again: the kubelet validates its state only
        when it starts, never at admission, and a state admissions reached need not pass that check
        (kubernetes#113035). Nothing accumulated is carried (as a manager built on the copy would have)."""
        with self._lock:
            state = copy_state(self.state)
            policy: Policy = (
                self.policy.copy_for(affinity) if isinstance(self.policy, StaticPolicy) else NonePolicy()
            )
        return MemoryManager(policy, state, active_pods, start=False, allocatable=self._allocatable)

    @property
    def policy_name(self) -> str:
        return self.policy.name()

    # ---- HintProvider -----------------------------------------------------------------------------

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints:
        self._pending_pod = pod.uid
        self.remove_stale_state()
        with self._lock:
            return self.policy.get_topology_hints(self.state, pod, container)

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints:
        self._pending_pod = pod.uid
        self.remove_stale_state()
        with self._lock:
            return self.policy.get_pod_topology_hints(self.state, pod)

    def allocate(self, pod: Pod, container: Container) -> None:
        """Raises ``MemoryAllocationError`` with the kubelet's text when the policy refuses."""
        self._pending_pod = pod.uid
        self.remove_stale_state()
        with self._lock:
            self.policy.allocate(self.state, pod, container)

    def allocate_pod(self, pod: Pod) -> None:
        """``AllocatePod`` (PodLevelResourceManagers, pod scope): stale state first, then the policy."""
        self._pending_pod = pod.uid
        self.remove_stale_state()
        with self._lock:
            self.policy.allocate_pod(self.state, pod)

    # ---- container lifecycle ----------------------------------------------------------------------

    def add_container(self, pod: Pod, container: Container, container_id: str) -> None:
        with self._lock:
            self._container_map[container_id] = (pod.uid, container.name)

    def remove_container(self, container_id: str) -> None:
        """``RemoveContainer``: unknown ids are ignored."""
        with self._lock:
            ref = self._container_map.get(container_id)
            if ref is None:
                return
            self._remove_by_ref(*ref)

    def remove_container_by_ref(self, pod_uid: str, container_name: str) -> None:
        with self._lock:
            self._remove_by_ref(pod_uid, container_name)

    def remove_pod(self, pod_uid: str) -> None:
        """Release every container of a pod (deletion, or the emulator's clean-up after a rejection)."""
        with self._lock:
            for name in list(self.state.get_memory_assignments().get(pod_uid, {})):
                self._remove_by_ref(pod_uid, name)
            if self._pending_pod == pod_uid:
                self._pending_pod = None

    def _remove_by_ref(self, pod_uid: str, container_name: str) -> None:
        self.policy.remove_container(self.state, pod_uid, container_name)
        for cid in [c for c, ref in self._container_map.items() if ref == (pod_uid, container_name)]:
            del self._container_map[cid]

    def remove_stale_state(self) -> list[str]:
        """``removeStaleState``: drop containers of pods that are not active (needs ``active_pods``); returns
        the UIDs whose state went. The kubelet runs it only in the hint and allocation calls (the Memory
        Manager has no reconcile loop: kubernetes v1.37.2 ``memory_manager.go``, the same at v1.33.3 –
        v1.36.3), so a pod no longer active keeps its memory blocks until the node's next admission."""
        if self.active_pods is None:
            return []
        active = {p if isinstance(p, str) else p.uid for p in self.active_pods()}
        if self._pending_pod is not None:
            active.add(self._pending_pod)
        removed = []
        with self._lock:
            for pod_uid, containers in list(self.state.get_memory_assignments().items()):
                if pod_uid in active:
                    continue
                removed.append(pod_uid)
                for name in list(containers):
                    self._remove_by_ref(pod_uid, name)
        return removed

    def restore_checkpoint(self, blob: bytes, admitted: Iterable[str]) -> None:
        """Go back to a checkpoint's content, writing nothing (the daemon's undo of calls whose files
        could not be written); what the policy keeps per pod stays for the ``admitted`` pods only."""
        with self._lock:
            if not isinstance(self.state, CheckpointState):
                raise MemoryManagerError("the memory manager's state is not checkpointed")
            self.state.restore(blob)
            keep = set(admitted)
            self._container_map = {c: ref for c, ref in self._container_map.items() if ref[0] in keep}
            if isinstance(self.policy, StaticPolicy):
                reusable = self.policy.init_containers_reusable_memory
                for uid in [uid for uid in reusable if uid not in keep]:
                    del reusable[uid]

    # ---- queries ----------------------------------------------------------------------------------

    def get_memory(self, pod_uid: str, container_name: str) -> list[Block]:
        """``GetMemory``: the container's blocks (podresources ``memory``: type, size, NUMA nodes)."""
        return self.state.get_memory_blocks(pod_uid, container_name) or []

    def get_pod_memory(self, pod_uid: str) -> list[Block]:
        """``GetPodMemory``: the pod-level blocks of a pod allocated at pod level (podresources' pod
        ``memory``, master), empty for any other pod."""
        return self.state.get_pod_memory_blocks(pod_uid) or []

    def get_memory_numa_nodes(self, pod: Pod, container: Container) -> set[int] | None:
        """``GetMemoryNUMANodes``: the union of the container's block nodes, None without blocks."""
        nodes = {n for b in self.get_memory(pod.uid, container.name) for n in b.numa_affinity}
        return nodes or None

    def get_allocatable_memory(self) -> list[Block]:
        """``GetAllocatableMemory``: computed at start, one block per node and resource."""
        return list(self._allocatable)

    def memory_tables(self) -> dict[int, dict[str, MemoryTable]]:
        """Node -> resource -> {total, systemReserved, allocatable, reserved, free} (copies)."""
        return {node: dict(s.memory_map) for node, s in self.state.get_machine_state().items()}

    def allocatable_per_numa(self) -> dict[int, dict[str, int]]:
        machine_state = self.state.read_machine_state()
        return {n: {r: t.allocatable for r, t in s.memory_map.items()} for n, s in machine_state.items()}

    def assigned_per_numa(self) -> dict[int, dict[str, int]]:
        """Bytes reserved for containers per node and resource (KEP-6007's ``assignedBytes``)."""
        machine_state = self.state.read_machine_state()
        return {n: {r: t.reserved for r, t in s.memory_map.items()} for n, s in machine_state.items()}

    def numa_groups(self) -> dict[int, list[int]]:
        return {n: list(s.cells) for n, s in self.state.read_machine_state().items()}

    def metrics(self) -> MemoryManagerMetrics:
        with self._lock:
            if isinstance(self.policy, StaticPolicy):
                return MemoryManagerMetrics(self.policy.pinning_requests, self.policy.pinning_errors)
            return MemoryManagerMetrics()


def new_manager(
    policy_name: str,
    machine: MachineInfo,
    affinity: Store,
    *,
    reserved_memory: Iterable[MemoryReservation | Mapping[str, object]] = (),
    node_allocatable_reservation: Mapping[str, GoQuantity | Quantity] | None = None,
    system_reserved: Mapping[str, QuantityLike] | None = None,
    kube_reserved: Mapping[str, QuantityLike] | None = None,
    eviction_hard_memory_available: str | Quantity | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    checkpoint_name: str = MEMORY_MANAGER_STATE_FILE,
    active_pods: ActivePodsFunc | None = None,
    state: State | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    kubelet_version: str = MASTER,
) -> MemoryManager:
    """``NewManager`` + ``Start``. ``policy_name`` is ``None`` or ``Static`` (the kubelet's spelling).

    The node-allocatable reservation is taken as given, or computed from systemReserved + kubeReserved
    + ``evictionHard[memory.available]`` (pass the kubelet default ``100Mi`` when the config omits it).
    ``reserved_memory`` entries may be ``MemoryReservation`` or ``{"numaNode": 0, "limits": {...}}``.
    ``state_dir`` None keeps the state in memory; otherwise ``<state_dir>/memory_manager_state`` is
    restored (checksum verified) or created, and written on every change. ``state``, when given, is used
    as it is (an in-memory copy for what-if questions). ``feature_gates`` and ``kubelet_version``: the
    emulated kubelet's gates and version (how pods with pod-level resources are treated).
    """
    policy: Policy
    if policy_name == POLICY_NONE:
        policy = NonePolicy()
    elif policy_name == POLICY_STATIC:
        reservations = [_reservation(r) for r in reserved_memory]
        if node_allocatable_reservation is None:
            node_allocatable_reservation = get_node_allocatable_reservation(
                machine, system_reserved, kube_reserved, eviction_hard_memory_available
            )
        system_reserved_memory = get_system_reserved_memory(
            machine, node_allocatable_reservation, reservations
        )
        policy = StaticPolicy(
            machine,
            system_reserved_memory,
            affinity,
            feature_gates=feature_gates,
            kubelet_version=kubelet_version,
        )
    else:
        raise MemoryManagerError(f'unknown policy: "{policy_name}"')
    if state is None:
        state = (
            MemoryState()
            if state_dir is None
            else CheckpointState(
                state_dir,
                policy.name(),
                checkpoint_name,
                checkpoint_format=MemoryCheckpointFormat.for_kubelet(kubelet_version, feature_gates),
            )
        )
    return MemoryManager(policy, state, active_pods)


def copy_state(state: State) -> MemoryState:
    """An in-memory copy of ``state``: what a what-if copy, or a kubelet restarted on it, starts from."""
    if isinstance(state, MemoryState | CheckpointState):
        return state.copy()
    copied = MemoryState()
    copied.set_machine_state(state.get_machine_state())
    copied.set_memory_assignments(state.get_memory_assignments())
    copied.set_pod_memory_assignments(state.get_pod_memory_assignments())
    return copied


def _reservation(entry: MemoryReservation | Mapping[str, object]) -> MemoryReservation:
    if isinstance(entry, MemoryReservation):
        return entry
    numa = entry.get("numaNode", entry.get("numa_node"))
    limits = entry.get("limits", {})
    if not isinstance(numa, int) or not isinstance(limits, Mapping):
        raise MemoryManagerError(f"reservedMemory: invalid entry {dict(entry)!r}")
    return MemoryReservation.of(numa, limits)
