"""One node's exact state as its agent reports it, and the mirror rebuilt from it.

A :class:`NodeState` holds what a :class:`~kubeletemu.emulator.NodeEmulator` answers from: the machine
(hostprobe's ``HostTopology``), the configuration after the node's own defaulting and overrides, the
admitted pods in admission order (their registry entries), the managers' states and the Topology Manager's
stored hints. :func:`to_emulator` builds an in-memory node on them that answers every ``would_admit`` as the
node does: it holds the same CPU ids, memory blocks and devices, and its what-if clones copy those states as
the node's own clones do (``ContainerManager.clone``).

The managers' states travel in one form whatever kubelet version the node runs, so nothing of a version's
checkpoint format is lost on the way (a V2 CPU checkpoint has no pod-level sets): the CPU Manager's as a
JSON object of the fields of a V4 checkpoint (``policyName``, ``defaultCpuSet``, ``entries``,
``podEntries``), the Memory Manager's as its checkpoint with the ``podEntries`` layout, the Device
Manager's as its ``kubelet_internal_checkpoint``.

**Generations.** ``generation`` orders the states of one node: a larger one is newer. An agent counts
the changes it has seen since it started and adds that count to its start time in Unix nanoseconds
(:class:`Incarnation`), so a restarted agent's generations are larger than any of its previous run's
(fewer changes than nanoseconds ever pass between two starts) without anything kept on disk. The rule
needs the agent's wall clock not to step back across a restart by more than the time between the two
starts. ``incarnation`` names the run (a random id): a client sees a restart as a new incarnation.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hostprobe.model import HostTopology
from kubeletemu.bitmask import BitMask
from kubeletemu.config import Config
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.policy_static import StaticPolicy
from kubeletemu.devicemanager.checkpoint import marshal as marshal_devices
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.memorymanager.state.checkpoint import (
    LAYOUT_POD_ENTRIES,
    MemoryManagerCheckpoint,
)
from kubeletemu.memorymanager.state.checkpoint import (
    marshal as marshal_memory,
)
from kubeletemu.memorymanager.state.checkpoint import (
    unmarshal as unmarshal_memory,
)
from kubeletemu.registry import encode_entry
from kubeletemu.topologymanager import TopologyHint


class NodeStateError(ValueError):
    """A state that cannot be rebuilt into a node: which part, and why."""


@dataclass(frozen=True)
class StoredHint:
    """One entry of the Topology Manager's Store: the merged hint kept for a pod's container."""

    pod_uid: str
    container: str
    hint: TopologyHint


@dataclass(frozen=True)
class NodeState:
    node_name: str
    generation: int
    incarnation: str
    kubelet_version: str
    host: HostTopology
    config: Config
    # Registry entries (``encode_entry``) in admission order.
    pods: tuple[bytes, ...]
    cpu_state: bytes
    memory_state: bytes
    device_state: bytes
    hints: tuple[StoredHint, ...] = field(default=())
    # UIDs of the pods the node refused most recently, oldest first.
    refused: tuple[str, ...] = field(default=())


@dataclass
class Incarnation:
    """One run of an agent: its id, its start time, and per node the changes seen (see the module
    docstring for the rule)."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_ns: int = field(default_factory=time.time_ns)

    def generation(self, changes: int) -> int:
        return self.started_ns + changes


def snapshot(node_name: str, generation: int, emulator: NodeEmulator, incarnation: str = "") -> NodeState:
    """``emulator``'s state now. Call it between changes (the daemon's changes and this run on its event
    loop, under no await): it reads the managers' live states, not the files on disk."""
    if emulator.machine.host is None:
        raise NodeStateError(f"node {node_name}: a mirror needs the probed host")
    managers = manager_states(emulator)
    return NodeState(
        node_name=node_name,
        generation=generation,
        incarnation=incarnation,
        kubelet_version=emulator.config.emulator.kubelet_version,
        host=emulator.machine.host,
        config=emulator.config,
        pods=tuple(encode_entry(entry) for entry in emulator.registry),
        cpu_state=managers.cpu_state,
        memory_state=managers.memory_state,
        device_state=managers.device_state,
        hints=managers.hints,
        refused=tuple(emulator.refused),
    )


@dataclass(frozen=True)
class ManagerStates:
    """The managers' states in the feed's one form (see the module docstring) and the stored hints."""

    cpu_state: bytes
    memory_state: bytes
    device_state: bytes
    hints: tuple[StoredHint, ...]


def manager_states(emulator: NodeEmulator) -> ManagerStates:
    """The node's managers' live states as :func:`snapshot` sends them (state classes compare these too)."""
    cm = emulator.cm
    cpu_state = cm.cpus.state
    cpus = {
        "policyName": cm.cpus.policy.name,
        "defaultCpuSet": str(cpu_state.get_default_cpu_set()),
        "entries": {
            pod: {name: str(cpus) for name, cpus in containers.items()}
            for pod, containers in cpu_state.get_cpu_assignments().items()
        },
        "podEntries": {uid: str(cpus) for uid, cpus in cpu_state.get_pod_cpu_assignments().items()},
    }
    memory_state = cm.memory.state
    memory = MemoryManagerCheckpoint(
        policy_name=cm.memory.policy_name,
        machine_state=memory_state.get_machine_state(),
        entries=memory_state.get_memory_assignments(),
        pod_entries=memory_state.get_pod_memory_assignments(),
    )
    hints = tuple(
        StoredHint(uid, name, hint)
        for uid, containers in cm.topology.scope.pod_topology_hints.items()
        for name, hint in containers.items()
    )
    return ManagerStates(
        cpu_state=json.dumps(cpus).encode(),
        memory_state=marshal_memory(memory, LAYOUT_POD_ENTRIES),
        device_state=marshal_devices(cm.devices.checkpoint()),
        hints=hints,
    )


def to_emulator(state: NodeState) -> NodeEmulator:
    """An in-memory node holding what ``state`` says: the node's managers started on its machine and
    configuration, then given its states, pods and stored hints as they are (no start-up check runs on
    them: the kubelet checks its states only when it starts, and admissions can reach states that check
    refuses, kubernetes#113035). Raises :class:`NodeStateError` naming the part that does not decode."""
    node = NodeEmulator(state.config, Machine.from_host(state.host))
    try:
        node.registry.restore({Path(f"{i:08d}.json"): body for i, body in enumerate(state.pods)})
    except (ValueError, KeyError, TypeError) as err:
        raise NodeStateError(f"node {state.node_name}: pods: {err}") from None
    if node.registry.refused:
        raise NodeStateError(f"node {state.node_name}: pods: {node.registry.refused[0].reason}")
    uids = node.registry.uids()
    _take_cpus(node, state)
    try:
        memory = unmarshal_memory(state.memory_state)
    except ValueError as err:
        raise NodeStateError(f"node {state.node_name}: memory state: {err}") from None
    memory_state = node.cm.memory.state
    memory_state.set_machine_state(memory.machine_state)
    memory_state.set_memory_assignments(memory.entries)
    memory_state.set_pod_memory_assignments(memory.pod_entries or {})
    try:
        node.cm.devices.restore_allocations(state.device_state, uids)
    except ValueError as err:
        raise NodeStateError(f"node {state.node_name}: device state: {err}") from None
    for stored in state.hints:
        node.cm.topology.scope.set_topology_hints(stored.pod_uid, stored.container, stored.hint)
    return node


def _take_cpus(node: NodeEmulator, state: NodeState) -> None:
    try:
        doc = json.loads(state.cpu_state)
        default = CPUSet.parse(doc["defaultCpuSet"])
        entries = {
            pod: {name: CPUSet.parse(text) for name, text in containers.items()}
            for pod, containers in _mapping(doc["entries"]).items()
        }
        pod_entries = {uid: CPUSet.parse(text) for uid, text in _mapping(doc["podEntries"]).items()}
        policy = doc["policyName"]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise NodeStateError(f"node {state.node_name}: cpu state: {err}") from None
    manager = node.cm.cpus
    if policy != manager.policy.name:
        raise NodeStateError(
            f"node {state.node_name}: cpu state: policy {policy!r} differs from the configuration's "
            f"{manager.policy.name!r}"
        )
    cpus = manager.state
    cpus.set_default_cpu_set(default)
    cpus.set_cpu_assignments(entries)
    cpus.set_pod_cpu_assignments(pod_entries)
    if isinstance(manager.policy, StaticPolicy):
        manager.policy.update_metrics_from_state(cpus)


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


def hint_mask(hint: TopologyHint) -> list[int] | None:
    """The hint's NUMA nodes, None for the nil mask ("any node")."""
    return None if hint.affinity is None else hint.affinity.bits()


def hint_of(nodes: list[int] | None, preferred: bool) -> TopologyHint:
    return TopologyHint(None if nodes is None else BitMask.of(*nodes), preferred)
