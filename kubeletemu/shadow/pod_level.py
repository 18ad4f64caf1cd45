"""A pod-level pod (``PodLevelResourceManagers``, KEP-5526) rebuilt from what its kubelet recorded.

The kubelet gives such a pod one CPU set and one memory block per type (its "bubble": the CPU checkpoint's
pod entries, V3 ``podEntries`` or V4 ``data``; the memory checkpoint's ``podEntries``; from master also
``PodResources.cpu_ids`` / ``memory`` in the podresources ``List``), then carves it among the containers
(``cpumanager/policy_static.go`` and ``memorymanager/policy_static.go`` ``AllocatePod``, as
:mod:`kubeletemu.cpumanager.policy_static` and :mod:`kubeletemu.memorymanager.pod_level` mirror them):

* a container that is "equivalent Guaranteed" (CPU and memory requests non-zero and equal to limits) gets
  its own slice: its integral CPUs and its memory of each type;
* every other app container and sidecar gets the shared remainder: the bubble minus the exclusive slices
  of sidecars and app containers (CPUs and each memory type alike), so those containers hold identical
  sets;
* a regular init container with requests gets its own slice of the bubble minus the sidecars started
  before it; one without gets that whole pool.

So the pod's requests are its bubble: ``cpu`` = the number of its CPUs, ``memory`` and ``hugepages-<size>``
= its blocks' sizes (requests = limits: only a Guaranteed pod gets a bubble). A container is taken as
exclusive for CPUs unless it holds the shared remainder, which is found as the one CPU set held by a
reported container (sidecar or app) that equals the bubble minus every other reported container's CPUs;
likewise per memory type. An exclusive container asks for what it holds; a container exclusive in memory
but shared in CPUs had a fractional CPU request (``1m`` stands for it); a shared one asks for nothing. A
remainder held by one container alone cannot be told from an exclusive slice once the slices cover the
bubble exactly; every such reading is kept (the last container's first, as its slice is the remainder
either way), and the replay takes the one that carves the kubelet's slices.

A bubble resource the kubelet did not record (a CPU policy ``none`` or a fractional pod CPU request: no CPU
set; Memory Manager ``None``: no blocks) is unknown: ``cpu: 1m`` / ``memory: 1`` keep the pod Guaranteed,
and the guess is named.

The ``List`` does not tell sidecars from app containers (both are listed, sidecars first), and a listed
container allocates as an app container, save for one thing: a sidecar started before a regular init
container shrinks that container's pool. A listed container whose CPUs are exactly what a regular init
container's set lacks of the bubble is therefore rebuilt as a sidecar before the init containers (the pool
less those sidecars is then the init container's set); every other listed container as an app container.
Not exact, and noted: a regular init container with CPUs of its own beside other listed exclusive
containers (one of them may be a sidecar started before it; its slice then came from a smaller pool).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from kubeletemu.pod import RESTART_POLICY_ALWAYS, Container, ResourceRequirements
from kubeletemu.quantity import Quantity
from kubeletemu.shadow.assignments import Assignment, MemoryBlockKey

PLACEHOLDER_CPU = Quantity.parse("1m")
PLACEHOLDER_MEMORY = Quantity(1)


@dataclass(frozen=True)
class PodLevelHoldings:
    """A pod's bubble as the kubelet recorded it: its CPUs and its memory blocks."""

    cpus: tuple[int, ...] = ()
    memory: tuple[MemoryBlockKey, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.cpus or self.memory)

    def memory_by_type(self) -> dict[str, int]:
        return Assignment(memory=self.memory).memory_by_type()


@dataclass(frozen=True)
class PodLevelPod:
    """The rebuilt requests: the pod's own, its init and app containers', and what had to be guessed."""

    resources: ResourceRequirements
    init_containers: tuple[Container, ...]
    containers: tuple[Container, ...]
    placeholders: tuple[str, ...]
    note: str = ""


def _cpu_readings(bubble: frozenset[int], reported: Sequence[Assignment]) -> list[frozenset[int]]:
    """Which reported containers (by index) hold the shared CPU remainder, each possible reading once,
    the likeliest first. A set held by two or more containers that is the bubble minus the others' CPUs
    is the remainder, beyond doubt. Held by one container only, any container's set is "the bubble minus
    the others" once the slices cover the bubble exactly, and the carving order decides which readings
    give the same slices: every single holder is a reading, the last container (in carving order) first,
    as its slice is the remainder whether it was exclusive or shared."""
    if not bubble:
        return [frozenset()]
    holders: dict[frozenset[int], list[int]] = {}
    for index, assignment in enumerate(reported):
        if assignment.cpus:
            holders.setdefault(frozenset(assignment.cpus), []).append(index)

    def remainder(candidate: frozenset[int]) -> bool:
        others = frozenset(cpu for held, _ in holders.items() if held != candidate for cpu in held)
        return candidate == bubble - others

    for held, indices in holders.items():
        if len(indices) > 1 and remainder(held):
            return [frozenset(indices)]
    singles = [indices[0] for held, indices in holders.items() if len(indices) == 1 and remainder(held)]
    if not singles:
        return [frozenset()]
    return [frozenset({index}) for index in sorted(singles, reverse=True)]


def _sidecars_before(
    bubble: frozenset[int], init: Sequence[tuple[str, Assignment]], reported: Sequence[Assignment]
) -> frozenset[int]:
    """The reported containers (by index) that are sidecars started before the regular init containers:
    those whose CPU slices are exactly what a regular init container's set lacks of the bubble (a regular
    init container without requests runs on the bubble less the sidecars started before it)."""
    found: set[int] = set()
    for _, held in init:
        missing = bubble - frozenset(held.cpus)
        if not held.cpus or not missing:
            continue
        inside = {i for i, a in enumerate(reported) if a.cpus and frozenset(a.cpus) <= missing}
        if inside and frozenset(cpu for i in inside for cpu in reported[i].cpus) == missing:
            found |= inside
    return frozenset(found)


def _memory_of(assignment: Assignment) -> tuple[MemoryBlockKey, ...]:
    return assignment.memory


def _memory_shared(
    totals: Mapping[str, int], reported: Sequence[Assignment], cpu_shared: frozenset[int]
) -> frozenset[int]:
    """Among the containers sharing CPUs (all containers when no CPU set was recorded), those that share
    the memory remainder too: a group holding identical blocks, else the last one whose blocks are the
    pod's total minus everyone else's. The others asked for memory (a fractional CPU request), and any
    reading of them carves the same blocks: blocks are sizes over the pod's NUMA nodes, with no order."""
    if not totals:
        return cpu_shared
    groups: dict[tuple[MemoryBlockKey, ...], list[int]] = {}
    for index in sorted(cpu_shared):
        groups.setdefault(_memory_of(reported[index]), []).append(index)
    for indices in groups.values():
        if len(indices) > 1:
            return frozenset(indices)
    everyone = Assignment(memory=tuple(b for a in reported for b in a.memory)).memory_by_type()
    for index in sorted(cpu_shared, reverse=True):
        own = reported[index].memory_by_type()
        if own and all(size == totals.get(kind, 0) - (everyone[kind] - size) for kind, size in own.items()):
            return frozenset({index})
    return frozenset()


def _container(
    name: str,
    assignment: Assignment,
    cpu_shared: bool,
    memory_shared: bool,
    cpu_known: bool,
    memory_known: bool,
    placeholders: list[str],
) -> Container:
    resources: dict[str, Quantity] = {}
    exclusive = not (cpu_shared and memory_shared)
    if exclusive:
        # An equivalent-Guaranteed container: both CPU and memory, requests = limits.
        if cpu_shared or not assignment.cpus:
            resources["cpu"] = PLACEHOLDER_CPU
            why = "it shares the pod's CPUs: fractional" if cpu_known else "no CPU set recorded"
            placeholders.append(f"{name}: cpu unknown ({why}), 1m assumed")
        else:
            resources["cpu"] = Quantity(len(assignment.cpus))
        for kind, size in assignment.memory_by_type().items():
            resources[kind] = Quantity(size)
        if "memory" not in resources:
            resources["memory"] = PLACEHOLDER_MEMORY
            placeholders.append(f"{name}: memory unknown (no memory blocks), 1 byte assumed")
    for resource, ids in assignment.devices:
        resources[resource] = Quantity(len(ids))
    frozen = MappingProxyType(resources)
    return Container(name, requests=frozen, limits=frozen)


def build_pod_level(
    holdings: PodLevelHoldings,
    init: Sequence[tuple[str, Assignment]],
    reported: Sequence[tuple[str, Assignment]],
) -> list[PodLevelPod]:
    """The pod's possible readings from its bubble and its containers' slices, the likeliest first (see
    the module docstring). ``init``: the regular init containers in their rebuilt order; ``reported``:
    the listed containers."""
    pod_placeholders: list[str] = []
    pod_resources: dict[str, Quantity] = {}
    if holdings.cpus:
        pod_resources["cpu"] = Quantity(len(holdings.cpus))
    else:
        pod_resources["cpu"] = PLACEHOLDER_CPU
        pod_placeholders.append("pod: cpu unknown (no pod CPU set recorded), 1m assumed")
    totals = holdings.memory_by_type()
    for kind, size in totals.items():
        pod_resources[kind] = Quantity(size)
    if "memory" not in pod_resources:
        pod_resources["memory"] = PLACEHOLDER_MEMORY
        pod_placeholders.append("pod: memory unknown (no pod memory blocks), 1 byte assumed")
    frozen = MappingProxyType(pod_resources)
    bubble = frozenset(holdings.cpus)
    listed = [a for _, a in reported]
    cpu_known, memory_known = bool(bubble), bool(totals)
    sidecars = _sidecars_before(bubble, init, listed)
    # The pool a regular init container without requests runs on: the bubble less those sidecars.
    pool_cpus = bubble - frozenset(cpu for i in sidecars for cpu in listed[i].cpus)
    sidecar_memory = Assignment(memory=tuple(b for i in sidecars for b in listed[i].memory)).memory_by_type()
    pool_memory = {kind: size - sidecar_memory.get(kind, 0) for kind, size in totals.items()}
    note = ""
    if (
        cpu_known
        and any(frozenset(held.cpus) != pool_cpus for _, held in init)
        and any(a.cpus for i, a in enumerate(listed) if i not in sidecars)
    ):
        note = (
            "has a regular init container with CPUs of its own: rebuilt as if no sidecar started before it "
            "(the List does not tell sidecars from app containers), so its replay may diverge"
        )
    readings = []
    for cpu_shared in _cpu_readings(bubble, listed) if cpu_known else [frozenset(range(len(listed)))]:
        memory_shared = _memory_shared(totals, listed, cpu_shared)
        placeholders = list(pod_placeholders)
        built = [
            _container(name, held, i in cpu_shared, i in memory_shared, cpu_known, memory_known, placeholders)
            for i, (name, held) in enumerate(reported)
        ]
        regular_init = [
            _container(
                name,
                held,
                not cpu_known or frozenset(held.cpus) == pool_cpus,
                not memory_known or held.memory_by_type() == {k: v for k, v in pool_memory.items() if v > 0},
                cpu_known,
                memory_known,
                placeholders,
            )
            for name, held in init
        ]
        before = [replace(built[i], restart_policy=RESTART_POLICY_ALWAYS) for i in sorted(sidecars)]
        readings.append(
            PodLevelPod(
                ResourceRequirements(requests=frozen, limits=frozen),
                (*before, *regular_init),
                tuple(c for i, c in enumerate(built) if i not in sidecars),
                tuple(placeholders),
                note,
            )
        )
    return readings


__all__ = ["PodLevelHoldings", "PodLevelPod", "build_pod_level"]
