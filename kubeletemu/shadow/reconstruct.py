"""The kubelet's pods, rebuilt from what a node-local reader can see.

The podresources ``List`` names the active pods (namespace, name) and their reported containers
(restartable init containers, then app containers) with what each holds; it has no pod UIDs and no
resource requests. The checkpoints are keyed by pod UID and container name. So:

* **UID**: a listed pod takes the checkpoint UID whose containers hold exactly what the pod's listed
  containers hold (same exclusive CPUs, memory blocks and devices, container by container). Exclusive CPUs
  and devices belong to one container at a time, so a pod holding any of them matches at most one UID. A
  pod holding only memory blocks can match several UIDs with identical blocks: the lowest UID is taken and
  the match is reported as ambiguous (swapping such UIDs changes nothing in the state). A pod holding
  nothing exclusive has no checkpoint entry; its UID is derived from its namespace and name (a UUIDv5,
  stable across refreshes, not the real UID).
* **Containers**: the listed containers, in List order, become app containers (a restartable init
  container allocates as an app container does). Checkpoint containers the List does not report are the
  pod's ordinary init containers (podresources never lists those); they go first, ordered by their lowest
  CPU id, then name.
* **Requests** (requests = limits): ``cpu`` = the number of exclusive CPUs; ``memory`` and
  ``hugepages-<size>`` = the size of the container's blocks of that type; a device resource = its number of
  devices. Exclusive CPUs or memory blocks are only ever given to Guaranteed pods, so a pod holding any keeps
  Guaranteed QoS: a container of it without exclusive CPUs gets ``cpu: 1m`` (its real, fractional request
  is unknown) and, without memory blocks (Memory Manager ``None``), ``memory: 1`` (one byte; unknown).
  The static Memory Manager shrinks a regular init container's blocks by what later containers reuse
  (``updateInitContainersMemoryBlocks``), so an init container's memory of a type is taken as its block
  plus what the containers after it hold of that type on the same NUMA nodes (exact when its block is not
  used up; an upper bound otherwise).
  Everything else about a pod (requests of Burstable and BestEffort pods, overhead) is unknown and left
  empty.
* **Pod-level resources** (``PodLevelResourceManagers``): a pod the kubelet gave a pod-level CPU set or
  memory blocks (the checkpoints' pod entries; from 1.37 also the pod's own ``cpu_ids`` / ``memory`` in
  the List) gets ``spec.resources`` equal to them and container requests read from how its set was carved
  (:mod:`kubeletemu.shadow.pod_level`); a pod-level pod with regular init containers is noted, as its
  sidecars' place among them cannot be known. A 1.37 kubelet lists no CPUs (memory) for the containers
  sharing such a pod's pool (kubernetes#138738), so their List entries cannot match the checkpoint's: the
  pod is matched by its own pod-level fields against the checkpoints' pod entries instead, and its
  containers' holdings are taken from the checkpoints.

Checkpoint UIDs that no listed pod matches are pods the kubelet no longer runs: its next stale-state sweep
drops them, and so does the mirror.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.pod import Container, Pod, derived_uid
from kubeletemu.quantity import Quantity
from kubeletemu.shadow.assignments import EMPTY, Assignment, KubeletAssignments, from_podresources
from kubeletemu.shadow.pod_level import PodLevelHoldings, build_pod_level

UID_FROM_CHECKPOINT = "checkpoint"
UID_DERIVED = "derived"
PLACEHOLDER_CPU = Quantity.parse("1m")
PLACEHOLDER_MEMORY = Quantity(1)
RUNNING = "Running"


@dataclass(frozen=True)
class ListedPod:
    """One ``List`` entry: the pod's reported containers and what each holds."""

    namespace: str
    name: str
    containers: tuple[tuple[str, Assignment], ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def holds_anything(self) -> bool:
        return any(a for _, a in self.containers)


@dataclass(frozen=True)
class MirroredPod:
    pod: Pod
    uid_source: str  # UID_FROM_CHECKPOINT or UID_DERIVED
    # What the kubelet's checkpoints say each container holds (containers holding nothing are absent).
    kubelet: Mapping[str, Assignment]
    # Other checkpoint UIDs the pod matched as well (memory-only pods with identical blocks).
    ambiguous_with: tuple[str, ...] = ()
    # Requests the reconstruction had to guess, one line each.
    placeholders: tuple[str, ...] = ()
    # Other readings of the same holdings (a pod-level pod whose slices more than one reading explains):
    # the replay takes the first that carves what the kubelet carved.
    alternatives: tuple[Pod, ...] = ()

    @property
    def readings(self) -> tuple[Pod, ...]:
        return (self.pod, *self.alternatives)

    @property
    def key(self) -> str:
        return f"{self.pod.namespace}/{self.pod.name}"


@dataclass(frozen=True)
class Reconstruction:
    pods: tuple[MirroredPod, ...]  # in List order
    stale_uids: tuple[str, ...]  # checkpoint UIDs no listed pod matched
    # Listed pods that hold something exclusive the checkpoints do not record (a read between writes).
    unmatched: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())


def listed_pods(listing: v1.ListPodResourcesResponse) -> list[ListedPod]:
    return [
        ListedPod(pod.namespace, pod.name, tuple((c.name, from_podresources(c)) for c in pod.containers))
        for pod in listing.pod_resources
    ]


def _consistent(listed: ListedPod, held: Mapping[str, Assignment], pod_pool: bool = False) -> bool:
    """Every listed container holds what the checkpoint UID says it holds (nothing when absent there).

    ``pod_pool``: the pod is a pod-level one listed by a 1.37 kubelet, whose containers sharing the pod's
    pool list no CPUs, or no memory, of their own (``ResourceIsolationPod``): an empty part is consistent
    with whatever the checkpoint holds there."""
    for name, assignment in listed.containers:
        theirs = held.get(name, EMPTY)
        if assignment == theirs:
            continue
        if not pod_pool or assignment.devices != theirs.devices:
            return False
        if assignment.cpus not in ((), theirs.cpus) or assignment.memory not in ((), theirs.memory):
            return False
    return True


def match_uids(
    listed: Sequence[ListedPod],
    kubelet: KubeletAssignments,
    pod_pools: Mapping[str, PodLevelHoldings] | None = None,
    listed_pools: Mapping[str, PodLevelHoldings] | None = None,
) -> tuple[list[tuple[str | None, tuple[str, ...]]], list[str]]:
    """Per listed pod, the matched checkpoint UID (None: none) and the other candidates; and the UIDs
    left over.

    ``pod_pools`` (checkpoint pod-level holdings by UID) and ``listed_pools`` (the List's own pod-level
    fields by namespace/name) are given for a 1.37 kubelet, which hides its pod-level pods' shared
    containers: such a pod is matched by its pod-level holdings, the UIDs whose checkpoint holds the
    same bubble, and its containers checked as :func:`_consistent` allows."""
    index: dict[tuple[str, Assignment], set[str]] = {}
    for uid, containers in kubelet.items():
        for name, assignment in containers.items():
            index.setdefault((name, assignment), set()).add(uid)
    by_pool: dict[PodLevelHoldings, set[str]] = {}
    for uid, holdings in (pod_pools or {}).items():
        by_pool.setdefault(holdings, set()).add(uid)
    taken: set[str] = set()
    matches: list[tuple[str | None, tuple[str, ...]]] = []
    for pod in listed:
        pool = (listed_pools or {}).get(pod.key)
        if pool:
            candidates = by_pool.get(pool, set()) - taken
            ordered = sorted(
                uid for uid in candidates if _consistent(pod, kubelet.get(uid, {}), pod_pool=True)
            )
            if ordered:
                taken.add(ordered[0])
                matches.append((ordered[0], tuple(ordered[1:])))
                continue
        evidence = [(name, a) for name, a in pod.containers if a]
        if not evidence:
            matches.append((None, ()))
            continue
        candidates = set.intersection(*(index.get(key, set()) for key in evidence)) - taken
        ordered = sorted(uid for uid in candidates if _consistent(pod, kubelet[uid]))
        if not ordered:
            matches.append((None, ()))
            continue
        taken.add(ordered[0])
        matches.append((ordered[0], tuple(ordered[1:])))
    return matches, sorted(set(kubelet) - taken)


def _resources(
    name: str,
    assignment: Assignment,
    guaranteed: bool,
    reused: Mapping[str, int],
    placeholders: list[str],
) -> MappingProxyType[str, Quantity]:
    resources: dict[str, Quantity] = {}
    if assignment.cpus:
        resources["cpu"] = Quantity(len(assignment.cpus))
    for kind, size in assignment.memory_by_type().items():
        total = size + reused.get(kind, 0)
        if total:
            resources[kind] = Quantity(total)
        if reused.get(kind):
            placeholders.append(
                f"{name}: {kind} {total} assumed: its block of {size} plus what the containers after it hold "
                "on the same NUMA nodes (the Memory Manager shrinks an init container's blocks by what later "
                "containers reuse)"
            )
    for resource, ids in assignment.devices:
        resources[resource] = Quantity(len(ids))
    if guaranteed:
        if "cpu" not in resources:
            resources["cpu"] = PLACEHOLDER_CPU
            placeholders.append(f"{name}: cpu unknown (no exclusive CPUs: fractional), 1m assumed")
        if "memory" not in resources:
            resources["memory"] = PLACEHOLDER_MEMORY
            placeholders.append(f"{name}: memory unknown (no memory blocks), 1 byte assumed")
    return MappingProxyType(resources)


def _init_order(item: tuple[str, Assignment]) -> tuple[int, str]:
    name, assignment = item
    return (assignment.cpus[0] if assignment.cpus else 1 << 30, name)


def _reused_by_later(sequence: Sequence[tuple[str, Assignment]], index: int) -> dict[str, int]:
    """Per memory type, what the containers after ``sequence[index]`` hold on its NUMA nodes: the most
    they can have reused of it."""
    _, assignment = sequence[index]
    reused: dict[str, int] = {}
    for kind, _size, nodes in assignment.memory:
        later = sum(
            size
            for _, other in sequence[index + 1 :]
            for other_kind, size, other_nodes in other.memory
            if other_kind == kind and other_nodes == nodes
        )
        reused[kind] = reused.get(kind, 0) + later
    return reused


def build_pod(
    listed: ListedPod,
    uid: str,
    held: Mapping[str, Assignment],
    pod_level: PodLevelHoldings | None = None,
) -> tuple[list[Pod], tuple[str, ...], str]:
    """The pod with the requests its assignments imply (a pod-level pod: each possible reading, the
    likeliest first), the lines naming what was guessed, and a note when the rebuilt requests may not be
    the pod's."""
    reported = {name for name, _ in listed.containers}
    init = sorted(((n, a) for n, a in held.items() if n not in reported), key=_init_order)
    app = [(name, held.get(name, EMPTY)) for name, _ in listed.containers]
    if pod_level:
        readings = build_pod_level(pod_level, init, app)
        pods = [
            Pod(
                name=listed.name,
                namespace=listed.namespace,
                uid=uid,
                containers=reading.containers,
                init_containers=reading.init_containers,
                phase=RUNNING,
                resources=reading.resources,
            )
            for reading in readings
        ]
        return pods, readings[0].placeholders, readings[0].note
    sequence = [*init, *app]
    # Only Guaranteed pods get exclusive CPUs (static CPU policy) or memory blocks (static Memory Manager).
    guaranteed = any(a.cpus or a.memory for _, a in sequence)
    placeholders: list[str] = []
    containers = []
    for index, (name, assignment) in enumerate(sequence):
        # A regular init container's blocks shrink by what later containers reuse: add that back.
        reused = _reused_by_later(sequence, index) if index < len(init) else {}
        resources = _resources(name, assignment, guaranteed, reused, placeholders)
        containers.append(Container(name, requests=resources, limits=resources))
    pod = Pod(
        name=listed.name,
        namespace=listed.namespace,
        uid=uid,
        containers=tuple(containers[len(init) :]),
        init_containers=tuple(containers[: len(init)]),
        phase=RUNNING,
    )
    return [pod], tuple(placeholders), ""


def listed_pod_level(listing: v1.ListPodResourcesResponse) -> dict[str, PodLevelHoldings]:
    """The pods' own ``cpu_ids`` / ``memory`` a master kubelet lists (KEP-5526), by namespace/name."""
    out: dict[str, PodLevelHoldings] = {}
    for pod in listing.pod_resources:
        if pod.cpu_ids or pod.memory:
            blocks = ((m.memory_type, m.size, tuple(n.ID for n in m.topology.nodes)) for m in pod.memory)
            out[f"{pod.namespace}/{pod.name}"] = PodLevelHoldings(
                tuple(sorted(set(pod.cpu_ids))), tuple(sorted(blocks))
            )
    return out


def reconstruct(
    listing: v1.ListPodResourcesResponse,
    kubelet: KubeletAssignments,
    pod_level: Mapping[str, PodLevelHoldings] | None = None,
    *,
    hides_pod_pool: bool = False,
) -> Reconstruction:
    """The kubelet's listed pods with UIDs and requests; see the module docstring for the rules.
    ``pod_level``: per pod UID, the pod-level CPU set and memory blocks the checkpoints hold; the List's
    own pod-level fields (1.37 on) complete them. ``hides_pod_pool``: the kubelet lists no CPUs or memory
    for the containers sharing a pod-level pod's pool (1.37, kubernetes#138738)."""
    from_checkpoints = pod_level or {}
    from_listing = listed_pod_level(listing)
    listed = listed_pods(listing)
    if hides_pod_pool:
        matches, leftover = match_uids(listed, kubelet, from_checkpoints, from_listing)
    else:
        matches, leftover = match_uids(listed, kubelet)
    pods: list[MirroredPod] = []
    unmatched: list[str] = []
    notes: list[str] = []
    seen: set[str] = set()
    for entry, (uid, others) in zip(listed, matches, strict=True):
        if entry.key in seen:
            # The kubelet's pod manager keys pods by full name: a second entry is a List between updates.
            notes.append(f"{entry.key}: listed twice; the first entry is mirrored")
            continue
        seen.add(entry.key)
        if uid is None:
            if entry.holds_anything:
                unmatched.append(entry.key)
            uid = derived_uid(entry.namespace, entry.name)
            held = {name: a for name, a in entry.containers if a}
            source = UID_DERIVED
        else:
            held = kubelet[uid]
            source = UID_FROM_CHECKPOINT
        holdings = _holdings(from_checkpoints.get(uid), from_listing.get(entry.key))
        readings, placeholders, note = build_pod(entry, uid, held, holdings)
        if note:
            notes.append(f"{entry.key}: {note}")
        pods.append(
            MirroredPod(
                readings[0], source, MappingProxyType(dict(held)), others, placeholders, tuple(readings[1:])
            )
        )
    return Reconstruction(tuple(pods), tuple(leftover), tuple(unmatched), tuple(notes))


def _holdings(
    checkpoint: PodLevelHoldings | None, listed: PodLevelHoldings | None
) -> PodLevelHoldings | None:
    """The checkpoints' record of a pod's bubble, each part completed by the List's when absent."""
    if not checkpoint:
        return listed
    if not listed:
        return checkpoint
    return PodLevelHoldings(checkpoint.cpus or listed.cpus, checkpoint.memory or listed.memory)
