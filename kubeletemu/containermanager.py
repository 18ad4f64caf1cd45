"""The kubelet's container manager (``cm/container_manager_linux.go``): the Topology Manager and its hint
providers, wired as ``NewContainerManager`` does, plus the resource-allocator admit handler.

Providers are registered in the kubelet's order: device manager, CPU manager, memory manager. A what-if
question runs on a clone whose states are in-memory copies of the live ones, so it changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kubeletemu import cpumanager, memorymanager, numa_scoring, topologymanager
from kubeletemu.admission import PodAdmitResult
from kubeletemu.checkpointmanager import batched_writes, make_directories
from kubeletemu.config import Config
from kubeletemu.cpumanager.manager import copy_state as copy_cpu_state
from kubeletemu.devicemanager import Device, DeviceManager, devices_from_pci
from kubeletemu.machine import Machine
from kubeletemu.memorymanager.manager import copy_state as copy_memory_state
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager import ProviderHints, TopologyHint
from kubeletemu.topologymanager.numa_scorer import TieBreakDecision
from kubeletemu.topologymanager.policy_options import DEFAULT_MAX_ALLOWABLE_NUMA_NODES, check_options_gate
from kubeletemu.versions.gates import effective_gates


class _Same:
    """Marks an argument left as it is."""


SAME = _Same()

PROVIDER_DEVICES = "devicemanager"
PROVIDER_CPU = "cpumanager"
PROVIDER_MEMORY = "memorymanager"
# The kubelet's registration order of hint providers.
PROVIDER_ORDER = (PROVIDER_DEVICES, PROVIDER_CPU, PROVIDER_MEMORY)


@dataclass(frozen=True)
class TopologyOverrides:
    """What-if replacements of the Topology Manager settings (None keeps the configured value)."""

    policy: str | None = None
    scope: str | None = None
    options: Mapping[str, str] | None = None


@dataclass(frozen=True)
class MemoryBlock:
    memory_type: str
    size: int
    numa_nodes: tuple[int, ...]


@dataclass(frozen=True)
class ContainerAllocation:
    """Where one container landed, and why."""

    name: str
    kind: str  # "init", "sidecar" or "app"
    affinity: TopologyHint | None  # the stored merged hint; None when no merge was done for it
    provider_hints: tuple[tuple[str, ProviderHints], ...]
    cpu_ids: tuple[int, ...]  # exclusive CPUs, or the shared pool when exclusive_cpus is False
    exclusive_cpus: bool
    memory: tuple[MemoryBlock, ...]
    devices: Mapping[str, Mapping[str, tuple[int, ...]]]  # resource -> device id -> NUMA nodes


@dataclass(frozen=True)
class AllocationResult:
    result: PodAdmitResult
    containers: tuple[ContainerAllocation, ...]
    # What a rejection released of the pod's earlier containers (the kubelet's stale-state removal).
    released: tuple[str, ...] = ()
    # Ties between equally fit masks broken by a KEP-6007 score, per container ("" for the pod scope).
    numa_decisions: tuple[tuple[str, TieBreakDecision], ...] = ()


def container_kind(pod: Pod, container: Container) -> str:
    if any(c is container for c in pod.init_containers):
        return "sidecar" if container.is_restartable_init else "init"
    return "app"


@dataclass
class _HintLog:
    """Provider hints and score decisions per container, captured from the Topology Manager's merge
    observer (called right after each merge, so the scorer's decisions so far belong to that merge)."""

    scoring: numa_scoring.NUMAScoring
    per_container: dict[str, list[ProviderHints]] = field(default_factory=dict)
    pod_level: list[ProviderHints] | None = None
    decisions: list[tuple[str, TieBreakDecision]] = field(default_factory=list)

    def record(
        self, pod: Pod, name: str | None, hints: list[ProviderHints], best: TopologyHint, admit: bool
    ) -> None:
        if name is None:
            self.pod_level = hints
        else:
            self.per_container[name] = hints
        self.decisions += [(name or "", d) for d in self.scoring.drain()]

    def for_container(self, name: str) -> list[ProviderHints] | None:
        return self.per_container.get(name, self.pod_level)


class ContainerManager:
    """Builds and holds the managers for one configuration and machine.

    ``state_dir`` keeps the kubelet-format checkpoints (``cpu_manager_state``, ``memory_manager_state``,
    ``device-plugins/kubelet_internal_checkpoint``); None keeps everything in memory. ``seed`` copies the
    states of a live manager instead (what-if clones). ``active_pods`` lists the UIDs the managers keep
    state for; anything else is stale.
    """

    def __init__(
        self,
        config: Config,
        machine: Machine,
        *,
        state_dir: str | os.PathLike[str] | None = None,
        active_pods: Callable[[], Iterable[str]] | None = None,
        overrides: TopologyOverrides | None = None,
        seed: ContainerManager | None = None,
    ) -> None:
        gates = self._start_topology(config, machine, overrides, active_pods)
        state_path = None if state_dir is None else Path(state_dir)
        self.devices = self._build_devices(state_path, seed)
        self.cpus = self._build_cpus(state_path, seed, gates)
        self.memory = self._build_memory(state_path, seed, gates)
        self._register_providers()

    def _start_topology(
        self,
        config: Config,
        machine: Machine,
        overrides: TopologyOverrides | None,
        active_pods: Callable[[], Iterable[str]] | None,
    ) -> Mapping[str, bool]:
        """The settings and the Topology Manager (with the KEP-6007 scorer); returns the gates in effect."""
        self.config = config
        self.machine = machine
        self.overrides = overrides or TopologyOverrides()
        self.active_pods = active_pods
        kubelet = config.kubelet
        # The emulated kubelet version's gate defaults under the configured settings (issue 16).
        gates = effective_gates(config.emulator.kubelet_version, kubelet.feature_gates)
        self.topology_manager_policy = self.overrides.policy or kubelet.topology_manager_policy
        self.topology_manager_scope = self.overrides.scope or kubelet.topology_manager_scope
        self.topology_manager_options = dict(
            kubelet.topology_manager_policy_options
            if self.overrides.options is None
            else self.overrides.options
        )
        # What-if options on a node whose TopologyManagerPolicyOptions gate is off stop that kubelet too
        # (the configured ones were refused when the configuration was read).
        check_options_gate(bool(self.topology_manager_options), self.topology_manager_options, gates)
        # KEP-6007's scorer: registered as the Topology Manager's tie-breaker, reads the providers lazily.
        self.numa_scoring = numa_scoring.NUMAScoring()
        self.topology = topologymanager.new_manager(
            machine.numa_topology,
            self.topology_manager_policy,
            self.topology_manager_scope,
            self.topology_manager_options,
            feature_gates=gates,
            tie_breaker=self.numa_scoring,
            kubelet_version=config.emulator.kubelet_version,
        )
        return gates

    def _register_providers(self) -> None:
        for provider in (self.devices, self.cpus, self.memory):
            self.topology.add_hint_provider(provider)
        self.numa_scoring.bind(self)

    # ---- construction -----------------------------------------------------------------------------

    def _active(self) -> list[str]:
        return list(self.active_pods()) if self.active_pods is not None else []

    def _build_devices(self, state_dir: Path | None, seed: ContainerManager | None) -> DeviceManager:
        checkpoint_dir = None if state_dir is None else state_dir / "device-plugins"
        if checkpoint_dir is not None:
            make_directories(checkpoint_dir)
        devices = DeviceManager(
            self.machine.numa_node_ids,
            self.topology,
            active_pods=self._active if self.active_pods is not None else None,
            checkpoint_dir=checkpoint_dir,
            kubelet_version=self.config.emulator.kubelet_version,
        )
        for resource in self.config.emulator.devices:
            if resource.pci_selector is not None:
                listed = devices_from_pci(self.machine.pci_devices, resource.pci_selector)
            else:
                listed = [Device(d.id, tuple(d.numa_nodes) or None) for d in resource.devices]
            devices.register_resource(resource.resource_name, listed)
        if seed is not None:
            devices.restore_checkpoint(seed.devices.checkpoint())
        return devices

    def _build_cpus(
        self, state_dir: Path | None, seed: ContainerManager | None, gates: Mapping[str, bool]
    ) -> cpumanager.CPUManager:
        kubelet = self.config.kubelet
        state = None if seed is None else copy_cpu_state(seed.cpus.state)
        reservation = cpumanager.node_allocatable_cpu_reservation(
            kubelet.kube_reserved, kubelet.system_reserved, kubelet.reserved_system_cpus
        )
        return cpumanager.new_manager(
            kubelet.cpu_manager_policy,
            kubelet.cpu_manager_policy_options,
            self.machine.cpu_topology,
            self.topology,
            node_allocatable_cpu_reservation=reservation,
            reserved_system_cpus=kubelet.reserved_system_cpus
            if kubelet.reserved_system_cpus.size()
            else None,
            state_dir=None if seed is not None else state_dir,
            feature_gates=gates,
            state=state,
            kubelet_version=self.config.emulator.kubelet_version,
            active_pods=self._active if self.active_pods is not None else None,
        )

    def _build_memory(
        self, state_dir: Path | None, seed: ContainerManager | None, gates: Mapping[str, bool]
    ) -> memorymanager.MemoryManager:
        kubelet = self.config.kubelet
        state = None if seed is None else copy_memory_state(seed.memory.state)
        return memorymanager.new_manager(
            kubelet.memory_manager_policy,
            self.machine.memory,
            self.topology,
            reserved_memory=kubelet.reserved_memory,
            system_reserved=kubelet.system_reserved,
            kube_reserved=kubelet.kube_reserved,
            eviction_hard_memory_available=kubelet.eviction_hard.get("memory.available"),
            state_dir=None if seed is not None else state_dir,
            active_pods=self._active if self.active_pods is not None else None,
            state=state,
            feature_gates=gates,
            kubelet_version=self.config.emulator.kubelet_version,
        )

    def kubelet_start_errors(self) -> tuple[str, ...]:
        """Why a real kubelet would refuse to start on this machine with these Topology Manager settings
        (``NewManager``'s NUMA-count limit, a cadvisor failure); empty when it would start."""
        host = self.machine.host
        if host is None:
            return ()
        options = self.topology.options
        max_nodes = (
            options.max_allowable_numa_nodes if options is not None else DEFAULT_MAX_ALLOWABLE_NUMA_NODES
        )
        return host.kubelet_view.startup_errors(self.topology_manager_policy, max_nodes)

    def clone(
        self,
        overrides: TopologyOverrides | None = None,
        active_pods: Callable[[], Iterable[str]] | _Same | None = SAME,
    ) -> ContainerManager:
        """An in-memory copy for a what-if question (or a fork), optionally with other Topology Manager
        settings and another list of active pods: the managers hold copies of the live states and nothing
        the live policies accumulated, as managers built on those states would.

        The managers are not started again: the kubelet validates its states (``validateState``) only when
        it starts, never at admission, and admissions can reach a Memory Manager state that check refuses
        (kubernetes#113035), which a what-if must still answer on. What is fixed once built (the CPU
        Manager's reserved CPUs and options, the Memory Manager's reservations, the devices) is shared,
        not recomputed. A kubelet started on these states (another version, :meth:`restarted`) is built
        with ``seed`` instead."""
        clone = ContainerManager.__new__(ContainerManager)
        active = self.active_pods if isinstance(active_pods, _Same) else active_pods
        clone._start_topology(self.config, self.machine, overrides, active)
        clone.devices = clone._build_devices(None, self)
        active_func = clone._active if clone.active_pods is not None else None
        clone.cpus = self.cpus.copy_for(clone.topology, active_func)
        clone.memory = self.memory.copy_for(clone.topology, active_func)
        clone._register_providers()
        return clone

    def restarted(
        self,
        config: Config,
        overrides: TopologyOverrides | None = None,
        active_pods: Callable[[], Iterable[str]] | None = None,
    ) -> ContainerManager:
        """Managers of a kubelet with ``config`` started on copies of these states (an upgrade or a
        downgrade is a restart): built from scratch, their start-up checks run as the kubelet runs them,
        raising what would stop it."""
        return ContainerManager(config, self.machine, active_pods=active_pods, overrides=overrides, seed=self)

    # ---- admission --------------------------------------------------------------------------------

    def allocate(self, pod: Pod) -> AllocationResult:
        """The resource-allocator admit handler: the Topology Manager's Admit with its providers.

        On a rejection the pod's partial allocations are released at once (the kubelet leaves that to
        the managers' stale-state removal) and named in ``released``.
        """
        self.numa_scoring.drain()
        log = _HintLog(self.numa_scoring)
        self.topology.set_merge_observer(log.record)
        try:
            with batched_writes():
                result = self.topology.admit(pod)
        finally:
            self.topology.set_merge_observer(None)
        containers = tuple(self.describe(pod, c, log.for_container(c.name)) for c in pod.all_containers())
        released: tuple[str, ...] = ()
        if not result.admit:
            released = tuple(held_summary(c) for c in containers if held_summary(c))
            self.release(pod.uid)
            containers = tuple(without_allocations(c) for c in containers)
        return AllocationResult(result, containers, released, tuple(log.decisions))

    def release(self, pod_uid: str) -> None:
        """Everything the pod holds goes back: devices, CPUs, memory, stored hints."""
        with batched_writes():
            self.devices.remove_pod(pod_uid)
            self.cpus.remove_pod(pod_uid)
            self.memory.remove_pod(pod_uid)
            self.topology.remove_pod(pod_uid)

    def remove_stale_state(self, active: Iterable[Pod]) -> None:
        """Drop state of pods that are not active (after a crash between a checkpoint and the registry)."""
        pods = list(active)
        self.cpus.remove_stale_state(pods)
        self.memory.remove_stale_state()
        self.devices.update_allocated_devices()

    def pods_with_state(self) -> dict[str, list[str]]:
        """Pod UID -> which checkpoints hold something for it (``cpu``, ``memory``, ``devices``)."""
        held: dict[str, list[str]] = {}
        sources = (
            ("cpu", self.cpus.get_assignments()),
            ("memory", self.memory.state.get_memory_assignments()),
            ("devices", self.devices.pod_devices.pods()),
        )
        for what, uids in sources:
            for uid in uids:
                held.setdefault(uid, []).append(what)
        return held

    def checkpoint_files(self) -> list[Path]:
        """The kubelet-format checkpoints this manager keeps (none when its state is in memory)."""
        paths = [getattr(self.cpus.state, "path", None), getattr(self.memory.state, "path", None)]
        paths.append(self.devices.checkpoint_path)
        return [p for p in paths if isinstance(p, Path)]

    def restore_checkpoints(self, files: Mapping[Path, bytes], admitted: Iterable[str]) -> None:
        """Go back to the checkpoints' content in ``files`` (a missing device checkpoint: nothing
        allocated), writing nothing; the stored hints of pods not ``admitted`` go. The daemon's undo of
        calls whose files could not be written: the managers then hold what a restart would read."""
        keep = set(admitted)
        cpu_path = getattr(self.cpus.state, "path", None)
        memory_path = getattr(self.memory.state, "path", None)
        # The CPU and memory checkpoints exist from the managers' start: one missing here is a bug.
        if isinstance(cpu_path, Path):
            self.cpus.restore_checkpoint(files[cpu_path], keep)
        if isinstance(memory_path, Path):
            self.memory.restore_checkpoint(files[memory_path], keep)
        if self.devices.checkpoint_path is not None:
            self.devices.restore_allocations(files.get(self.devices.checkpoint_path), keep)
        for uid in [uid for uid in self.topology.scope.pod_topology_hints if uid not in keep]:
            self.topology.remove_pod(uid)

    def restore_affinity(self, pod: Pod, container: str, hint: TopologyHint) -> None:
        self.topology.scope.set_topology_hints(pod.uid, container, hint)

    # ---- queries ----------------------------------------------------------------------------------

    def describe(
        self, pod: Pod, container: Container, hints: list[ProviderHints] | None = None
    ) -> ContainerAllocation:
        stored = self.topology.scope.pod_topology_hints.get(pod.uid, {}).get(container.name)
        exclusive = self.cpus.get_exclusive_cpus(pod.uid, container.name)
        cpu_ids = exclusive if exclusive.size() else self.cpus.get_cpu_affinity(pod.uid, container.name)
        blocks = tuple(
            MemoryBlock(b.type, b.size, tuple(b.numa_affinity))
            for b in self.memory.get_memory(pod.uid, container.name)
        )
        provider_hints = tuple(zip(PROVIDER_ORDER, hints, strict=True)) if hints is not None else ()
        return ContainerAllocation(
            name=container.name,
            kind=container_kind(pod, container),
            affinity=stored,
            provider_hints=provider_hints,
            cpu_ids=tuple(sorted(cpu_ids)),
            exclusive_cpus=bool(exclusive.size()),
            memory=blocks,
            devices=self.devices.get_devices(pod.uid, container.name),
        )


def held_summary(container: ContainerAllocation) -> str:
    """What a container holds, in one line ("" when nothing exclusive)."""
    parts = []
    if container.exclusive_cpus:
        parts.append(f"cpus {','.join(map(str, container.cpu_ids))}")
    parts += [f"{b.memory_type} {b.size} on NUMA {list(b.numa_nodes)}" for b in container.memory]
    parts += [f"{res} {','.join(ids)}" for res, ids in container.devices.items() if ids]
    return f"{container.name}: {'; '.join(parts)}" if parts else ""


def without_allocations(container: ContainerAllocation) -> ContainerAllocation:
    return ContainerAllocation(
        name=container.name,
        kind=container.kind,
        affinity=container.affinity,
        provider_hints=container.provider_hints,
        cpu_ids=(),
        exclusive_cpus=False,
        memory=(),
        devices={},
    )
