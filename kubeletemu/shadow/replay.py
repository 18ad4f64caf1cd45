"""The self-check: would the emulator have assigned what the kubelet assigned?

Every pod the checkpoints hold something for is admitted again through the emulator's resource allocator
(the Topology Manager with the device, CPU and memory managers) and each container's result is compared with
the kubelet's checkpoint entry. A container whose exclusive CPUs, memory blocks or device placement differ,
or whose pod the emulator would refuse, is a :class:`Divergence`.

**Order.** Checkpoints carry no admission order, and the podresources List comes in Go map order. The replay
therefore looks for an order that explains the kubelet's decisions. Pods are tried in a default order: by
where the pod's first exclusive CPU sits in a packed static CPU policy's walk (NUMA node, core, CPU id),
then its lowest device id, then namespace and name. Going forward from the node without any of them, the
next pod is the first one (of at most ``MAX_CANDIDATES``, within a budget of ``TRIES_PER_POD`` tries per pod)
that the emulator places where the kubelet did;
when none does, the default order's next pod is taken with its differences, and the kubelet's own assignment
goes into the state. If that leaves divergences, the same search runs backwards from the node as it is (the
last pod is one the emulator places where the kubelet did on the state without it), and the order with fewer
divergent containers is reported. Both are greedy: a real history with deletions can be out of reach of
either, and then the pods whose placement only that history explains are reported as divergences.

**Each pod against the kubelet's own state.** A pod is admitted on the mirrored state with itself and the
pods after it released (the kubelet's ``RemoveContainer`` on each manager): it sees exactly what the kubelet
had assigned to the pods before it, not the emulator's own earlier choices, so a divergence never cascades
into other pods. Each try costs one in-memory clone of the container manager and one admission.

**Readings.** A pod-level pod whose container slices more than one set of requests explains
(:mod:`kubeletemu.shadow.pod_level`) is admitted in each reading until one carves what the kubelet carved.

**Devices.** The kubelet picks among equally placed devices in Go map order (random), so devices are
compared by placement: per resource, the NUMA nodes of each device. Devices that differ only by id are
counted as interchangeable, not as a divergence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubeletemu.containermanager import AllocationResult, ContainerManager
from kubeletemu.cpumanager.topology import CPUInfo
from kubeletemu.shadow.assignments import EMPTY, Assignment, device_numa_nodes, from_allocation
from kubeletemu.shadow.mirror import Mirror
from kubeletemu.shadow.reconstruct import UID_FROM_CHECKPOINT, MirroredPod
from kubeletemu.topologymanager import TopologyHint

RESOURCE_CPUS = "cpus"
RESOURCE_MEMORY = "memory"
RESOURCE_DEVICES = "devices"
RESOURCE_ADMISSION = "admission"
RESOURCES = (RESOURCE_CPUS, RESOURCE_MEMORY, RESOURCE_DEVICES, RESOURCE_ADMISSION)
# Pods tried at each step of a search for the order, and tries per pod for a whole search: past that
# budget each step takes the default order's next pod (a node whose history cannot be explained costs
# O(pods) admissions, not O(pods²)).
MAX_CANDIDATES = 32
TRIES_PER_POD = 8
_LAST = 1 << 30
# (resource, device id) -> the device's NUMA nodes
DeviceNodes = Mapping[tuple[str, str], tuple[int, ...]]


@dataclass(frozen=True)
class Divergence:
    namespace: str
    name: str
    uid: str
    container: str
    resource: str  # one of RESOURCES
    kubelet: str  # what the kubelet assigned
    emulator: str  # what the emulator assigns in its place
    position: int  # 1-based place in the replay order
    detail: str = ""

    def line(self) -> str:
        text = (
            f"{self.namespace}/{self.name} container {self.container}: {self.resource} "
            f"kubelet={self.kubelet} kubeletemu={self.emulator}"
        )
        return f"{text} ({self.detail})" if self.detail else text


@dataclass(frozen=True)
class ReplayResult:
    order: tuple[str, ...]  # namespace/name, replay order
    containers_checked: int
    divergences: tuple[Divergence, ...]
    interchangeable_devices: tuple[str, ...] = ()
    # The merged hint per container of each pod that agreed (what GetAffinity can answer for it).
    affinity: Mapping[str, Mapping[str, TopologyHint]] = field(default_factory=dict)

    @property
    def containers_agreeing(self) -> int:
        return self.containers_checked - len({(d.uid, d.container) for d in self.divergences})


def order_key(
    pod: MirroredPod, cpus: Mapping[int, CPUInfo] | None = None
) -> tuple[int, int, int, str, str, str]:
    """The default replay order: where the pod's first exclusive CPU sits in a packed policy's walk (NUMA
    node, core, CPU: a core's threads together, so a sibling thread comes with its core), then its lowest
    device id, then namespace and name. Pods without CPUs come after those with."""
    held = [cpu for a in pod.kubelet.values() for cpu in a.cpus]
    devices = [device for a in pod.kubelet.values() for _, ids in a.devices for device in ids]

    def place(cpu: int) -> tuple[int, int, int]:
        info = (cpus or {}).get(cpu)
        return (info.numa_node_id, info.core_id, cpu) if info is not None else (_LAST, cpu, cpu)

    first = min((place(cpu) for cpu in held), default=(_LAST, _LAST, _LAST))
    return (*first, min(devices, default="\U0010ffff"), pod.pod.namespace, pod.pod.name)


def replay_order(pods: Sequence[MirroredPod], cpus: Mapping[int, CPUInfo] | None = None) -> list[MirroredPod]:
    """The pods the checkpoints hold something for, in the default order."""
    return sorted(
        (p for p in pods if p.uid_source == UID_FROM_CHECKPOINT and p.kubelet),
        key=lambda p: order_key(p, cpus),
    )


def _cpus(cpus: Sequence[int]) -> str:
    return ",".join(map(str, cpus)) or "none"


def _memory(assignment: Assignment) -> str:
    return (
        "; ".join(f"{kind} {size} on NUMA {list(nodes)}" for kind, size, nodes in assignment.memory) or "none"
    )


def _placement(assignment: Assignment, nodes_of: DeviceNodes) -> dict[str, list[tuple[int, ...]]]:
    return {
        resource: sorted(nodes_of.get((resource, device), ()) for device in ids)
        for resource, ids in assignment.devices
    }


def _devices(assignment: Assignment, nodes_of: DeviceNodes) -> str:
    parts = []
    for resource, ids in assignment.devices:
        placed = [f"{d}@{list(nodes_of.get((resource, d), ()))}" for d in ids]
        parts.append(f"{resource} {','.join(placed)}")
    return "; ".join(parts) or "none"


@dataclass
class _Comparison:
    divergences: list[Divergence] = field(default_factory=list)
    interchangeable: list[str] = field(default_factory=list)


def compare_pod(
    mirrored: MirroredPod,
    position: int,
    allocation: AllocationResult,
    nodes_of: DeviceNodes,
    out: _Comparison,
) -> bool:
    """Record each container's differences; True when the pod agrees entirely."""
    pod = mirrored.pod

    def diverge(container: str, resource: str, kubelet: str, emulator: str, detail: str = "") -> None:
        out.divergences.append(
            Divergence(
                pod.namespace, pod.name, pod.uid, container, resource, kubelet, emulator, position, detail
            )
        )

    before = len(out.divergences)
    if not allocation.result.admit:
        result = allocation.result
        for name, held in mirrored.kubelet.items():
            summary = "; ".join(
                part
                for part in (
                    f"cpus {_cpus(held.cpus)}" if held.cpus else "",
                    f"memory {_memory(held)}" if held.memory else "",
                    f"devices {_devices(held, nodes_of)}" if held.devices else "",
                )
                if part
            )
            diverge(name, RESOURCE_ADMISSION, summary, "rejected", f"{result.reason}: {result.message}")
        return False
    replayed = {c.name: from_allocation(c) for c in allocation.containers}
    for container in pod.all_containers():
        name = container.name
        kubelet = mirrored.kubelet.get(name, EMPTY)
        ours = replayed.get(name, EMPTY)
        if kubelet.cpus != ours.cpus:
            diverge(name, RESOURCE_CPUS, _cpus(kubelet.cpus), _cpus(ours.cpus))
        if kubelet.memory != ours.memory:
            diverge(name, RESOURCE_MEMORY, _memory(kubelet), _memory(ours))
        if _placement(kubelet, nodes_of) != _placement(ours, nodes_of):
            diverge(name, RESOURCE_DEVICES, _devices(kubelet, nodes_of), _devices(ours, nodes_of))
        elif kubelet.devices != ours.devices:
            out.interchangeable.append(
                f"{pod.namespace}/{pod.name} container {name}: kubelet {_devices(kubelet, nodes_of)}, "
                f"kubeletemu {_devices(ours, nodes_of)}"
            )
    return len(out.divergences) == before


def _reproduces(mirrored: MirroredPod, allocation: AllocationResult, nodes_of: DeviceNodes) -> bool:
    return compare_pod(mirrored, 0, allocation, nodes_of, _Comparison())


def _exact(mirrored: MirroredPod, allocation: AllocationResult) -> bool:
    """The emulator's allocation is the kubelet's to the device id (so its state can stand for the
    kubelet's)."""
    replayed = {c.name: from_allocation(c) for c in allocation.containers}
    names = set(replayed) | set(mirrored.kubelet)
    return all(replayed.get(n, EMPTY) == mirrored.kubelet.get(n, EMPTY) for n in names)


# A replay order: each pod with what the emulator allocated it at its place.
Trace = list[tuple[MirroredPod, AllocationResult]]


def _allocate(
    fresh: ContainerManager, mirrored: MirroredPod, nodes_of: DeviceNodes
) -> tuple[AllocationResult, ContainerManager]:
    """Admit the pod on ``fresh`` (a private copy of the state): its first reading whose allocation is the
    kubelet's, else its first reading. A pod with one reading costs one admission on ``fresh`` itself;
    each further reading (a pod-level pod read more than one way) one more copy and admission."""
    pristine = fresh.clone() if mirrored.alternatives else None
    first = (fresh.allocate(mirrored.pod), fresh)
    if pristine is None or _reproduces(mirrored, first[0], nodes_of):
        return first
    for reading in mirrored.alternatives:
        trial = pristine.clone()
        allocation = trial.allocate(reading)
        if _reproduces(mirrored, allocation, nodes_of):
            return allocation, trial
    return first


def _without(cm: ContainerManager, pods: Sequence[MirroredPod]) -> ContainerManager:
    """The kubelet's state without ``pods``: a copy of the mirrored state with them released."""
    state = cm.clone()
    for mirrored in pods:
        state.release(mirrored.pod.uid)
    return state


def _forward(
    cm: ContainerManager, pods: Sequence[MirroredPod], nodes_of: DeviceNodes, max_candidates: int
) -> Trace:
    """From the node without any of ``pods``, admit next the first pod (default order) that the emulator
    places where the kubelet did."""
    remaining = list(pods)
    work = _without(cm, remaining)
    trace: Trace = []
    budget = TRIES_PER_POD * len(pods)
    while remaining:
        chosen: tuple[MirroredPod, AllocationResult, ContainerManager] | None = None
        first: tuple[MirroredPod, AllocationResult] | None = None
        for candidate in remaining[: max_candidates if budget > 0 else 1]:
            budget -= 1
            allocation, trial = _allocate(work.clone(), candidate, nodes_of)
            first = first or (candidate, allocation)
            if _reproduces(candidate, allocation, nodes_of):
                chosen = (candidate, allocation, trial)
                break
        if chosen is not None and _exact(chosen[0], chosen[1]):
            mirrored, allocation, work = chosen
            remaining.remove(mirrored)
        else:
            # The kubelet's own assignment goes in, not the emulator's differing one.
            assert first is not None
            mirrored, allocation = (chosen[0], chosen[1]) if chosen is not None else first
            remaining.remove(mirrored)
            work = _without(cm, remaining)
        trace.append((mirrored, allocation))
    return trace


def _backward(
    cm: ContainerManager, pods: Sequence[MirroredPod], nodes_of: DeviceNodes, max_candidates: int
) -> Trace:
    """From the node as it is, take as the last-admitted pod the first (reverse default order) that the
    emulator places where the kubelet did on the state without it."""
    remaining = list(pods)
    work = cm.clone()
    peeled: Trace = []
    budget = TRIES_PER_POD * len(pods)
    while remaining:
        fallback: tuple[MirroredPod, AllocationResult] | None = None
        chosen: tuple[MirroredPod, AllocationResult] | None = None
        for candidate in list(reversed(remaining))[: max_candidates if budget > 0 else 1]:
            budget -= 1
            trial = work.clone()
            trial.release(candidate.pod.uid)
            allocation, _ = _allocate(trial, candidate, nodes_of)
            # None reproducing: the default order's last pod, the first one tried.
            fallback = fallback or (candidate, allocation)
            if _reproduces(candidate, allocation, nodes_of):
                chosen = (candidate, allocation)
                break
        taken = chosen or fallback
        assert taken is not None
        work.release(taken[0].pod.uid)
        remaining.remove(taken[0])
        peeled.append(taken)
    return list(reversed(peeled))


def _result(trace: Trace, nodes_of: DeviceNodes) -> ReplayResult:
    comparison = _Comparison()
    affinity: dict[str, dict[str, TopologyHint]] = {}
    checked = 0
    for position, (mirrored, allocation) in enumerate(trace, start=1):
        checked += sum(
            1
            for c in allocation.containers
            if mirrored.kubelet.get(c.name) or (allocation.result.admit and from_allocation(c))
        )
        if compare_pod(mirrored, position, allocation, nodes_of, comparison):
            affinity[mirrored.pod.uid] = {
                c.name: c.affinity for c in allocation.containers if c.affinity is not None
            }
    return ReplayResult(
        order=tuple(m.key for m, _ in trace),
        containers_checked=checked,
        divergences=tuple(comparison.divergences),
        interchangeable_devices=tuple(comparison.interchangeable),
        affinity=affinity,
    )


def _divergent_containers(result: ReplayResult) -> int:
    return len({(d.uid, d.container) for d in result.divergences})


def replay(mirror: Mirror, max_candidates: int = MAX_CANDIDATES) -> ReplayResult:
    """Admit every checkpointed pod again, each against the kubelet's state before it (see the module)."""
    pods = replay_order(mirror.reconstruction.pods, mirror.emulator.machine.cpu_topology.cpu_details)
    nodes_of = _device_nodes(mirror)
    cm = mirror.emulator.cm
    forward = _result(_forward(cm, pods, nodes_of, max_candidates), nodes_of)
    if not forward.divergences:
        return forward
    backward = _result(_backward(cm, pods, nodes_of, max_candidates), nodes_of)
    return backward if _divergent_containers(backward) < _divergent_containers(forward) else forward


def _device_nodes(mirror: Mirror) -> dict[tuple[str, str], tuple[int, ...]]:
    """Each device's NUMA nodes: the mirror's device list (the kubelet's allocatable devices), completed by
    the checkpoint's record for allocated devices that are no longer reported (unhealthy)."""
    nodes = device_numa_nodes(mirror.snapshot.checkpoints)
    for resource, devices in mirror.emulator.cm.devices.all_devices.items():
        for device in devices.values():
            nodes[(resource, device.id)] = tuple(device.numa_node_ids()) if device.has_topology else ()
    return nodes
