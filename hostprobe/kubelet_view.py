"""What a kubelet would see on this host: cadvisor ``GetNodesInfo`` + the kubelet's ``topology.Discover``.

Mirrors, deliberately including their quirks (``shared/spec/hostprobe.md`` §2.1-2.2):

* cadvisor globs ``node*[0-9]`` and ``nodeN/cpu*[0-9]``; Go's glob sorts names, so nodes and CPUs come in
  lexicographic order (node10 before node2, cpu46 before cpu6). Offline CPUs are skipped through
  ``cpu/online`` only (a missing file means all online). Cores are keyed by (core_id, physical_package_id).
* A node without CPUs (memory-only) is still a topology node; the Topology Manager counts it.
* Caches come from the first thread of each core. A level > 2 cache shared by exactly the node's
  threads (cores × threads of this core) is a node cache; any other level > 2 cache, smaller (AMD CCX)
  or larger (SNC), is an uncore cache of the core. A cache without ``id`` makes cadvisor give up on the
  node's remaining caches.
* ``Discover``: CoreID = lowest thread id; UncoreCacheID = first uncore cache id, else the socket id.
* Distances are cadvisor's positional rows; the kubelet indexes them by node id.

Two deliberate departures, both as the fixtures' ground truth does and each recorded in a warning:
trimmed captures without ``nodeN/cpuM`` links (cadvisor would see no CPUs there) fall back to the node's
cpulist, and ``node_level_l3`` reports the sharing test even where cadvisor cannot read cache ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from hostprobe import parse
from hostprobe.cpus import CpuFacts
from hostprobe.model import (
    DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
    MAX_BITMASK_NODE_ID,
    CacheInfo,
    KubeletCore,
    KubeletCpu,
    KubeletNode,
    KubeletView,
)
from hostprobe.numa import NodeFacts


@dataclass(frozen=True)
class _CadvisorCache:
    id: int
    size_kib: int
    level: int
    type: str
    cpus: int


def build_kubelet_view(
    cpus: Sequence[CpuFacts],
    nodes: Sequence[NodeFacts],
    *,
    online_file: Sequence[int] | None,
    cpuinfo: str | None,
    memory_capacity_bytes: int | None,
) -> KubeletView:
    by_id = {cpu.id: cpu for cpu in cpus}
    # cadvisor's IsCPUOnline reads cpu/online only; without it every CPU counts as online.
    online = set(online_file) if online_file is not None else set(by_id)
    issues: dict[str, list[int]] = {}  # kind -> node ids, one warning per kind
    cadvisor_errors: list[str] = []

    if nodes:
        kube_nodes = [
            _build_node(node, by_id, online, issues) for node in sorted(nodes, key=lambda n: f"node{n.id}")
        ]
        num_cpus = sum(n.num_threads for n in kube_nodes)
    else:
        # No node directories: cadvisor makes one pseudo-node per physical package.
        kube_nodes, num_cpus = _package_pseudo_nodes(cpus, online, issues)
        if not cpus:
            cadvisor_errors.append("no CPU is available")

    kube_cpus: dict[int, KubeletCpu] = {}
    for knode in kube_nodes:
        for core in knode.cores:
            uncore = core.uncore_cache_ids[0] if core.uncore_cache_ids else core.socket_id
            for thread in core.threads:
                kube_cpus[thread] = KubeletCpu(
                    cpu_id=thread,
                    core_id=min(core.threads),
                    socket_id=core.socket_id,
                    numa_node_id=knode.id,
                    uncore_cache_id=uncore,
                )

    view = KubeletView(
        nodes=tuple(kube_nodes),
        cpus=tuple(kube_cpus[c] for c in sorted(kube_cpus)),
        num_cpus=num_cpus,
        num_cores=sum(n.num_cores for n in kube_nodes),
        num_sockets=_num_sockets(cpuinfo, cpus, online),
        num_physical_cores=_num_physical_cores(cpuinfo, cpus, online),
        num_numa_nodes=len({c.numa_node_id for c in kube_cpus.values()}),
        num_uncore_caches=len({c.uncore_cache_id for c in kube_cpus.values()}),
        memory_capacity_bytes=memory_capacity_bytes,
        cadvisor_errors=tuple(cadvisor_errors),
    )
    warnings = [_ISSUES[kind].format(_nodes_phrase(ids)) for kind, ids in issues.items()]
    if not nodes:
        warnings.append("no NUMA node directories: cadvisor reports one pseudo-node per physical package")
    unseen = sorted(c.id for c in cpus if c.online and c.id not in kube_cpus)
    if unseen and nodes:
        warnings.append(
            f"online CPUs {parse.format_cpulist(unseen)} are in no online NUMA node (or lack topology): "
            "the kubelet does not see them"
        )
    warnings.extend(_topology_warnings(view))
    return replace(view, warnings=tuple(warnings))


_ISSUES = {
    "no_links": "{} no cpuM links (trimmed capture): cadvisor would see no CPUs there; the node cpulist "
    "is used instead",
    "no_meminfo": "{} no meminfo: cadvisor reports memory 0",
    "no_caches": "{} CPUs whose caches cadvisor cannot read (no cache 'id' or incomplete cache dir): the "
    "kubelet's uncore cache ids fall back to socket ids",
}


def _build_node(
    node: NodeFacts, cpus: Mapping[int, CpuFacts], online: set[int], issues: dict[str, list[int]]
) -> KubeletNode:
    candidates = node.linked_cpus
    if not candidates and node.listed_cpus:
        candidates = node.listed_cpus
        issues.setdefault("no_links", []).append(node.id)
    cores = _group_cores(sorted(candidates, key=lambda c: f"cpu{c}"), cpus, online)
    caches = _assign_caches(cores, cpus)
    if not caches.readable:
        issues.setdefault("no_caches", []).append(node.id)
    if not node.memory.meminfo_present:
        issues.setdefault("no_meminfo", []).append(node.id)
    hugepages = tuple(
        (size, pool.total)
        for size, pool in sorted(node.memory.hugepages.items(), key=lambda kv: f"hugepages-{kv[0]}kB")
    )
    return KubeletNode(
        id=node.id,
        memory_bytes=(node.memory.total_kib or 0) * 1024,
        hugepages=hugepages,
        cores=tuple(
            KubeletCore(
                core_id=core_id, socket_id=socket, threads=tuple(threads), uncore_cache_ids=caches.uncore[i]
            )
            for i, ((core_id, socket), threads) in enumerate(cores)
        ),
        node_level_l3=caches.node_level_l3,
        distances=node.distance_row,
        caches_readable=caches.readable,
    )


def _group_cores(
    ordered_cpus: Sequence[int], cpus: Mapping[int, CpuFacts], online: set[int]
) -> list[tuple[tuple[int, int], list[int]]]:
    """cadvisor ``getCoresInfo``: online CPUs with core_id and package id, grouped in first-seen order."""
    cores: dict[tuple[int, int], list[int]] = {}
    for cpu_id in ordered_cpus:
        facts = cpus.get(cpu_id)
        if cpu_id not in online or facts is None or facts.core_id is None or facts.socket_id is None:
            continue
        cores.setdefault((facts.core_id, facts.socket_id), []).append(cpu_id)
    return list(cores.items())


def _cadvisor_caches(facts: CpuFacts | None) -> list[_CadvisorCache] | None:
    """``GetCacheInfo`` for one thread; ``None`` where cadvisor's read fails (no cache dir, no ``id``…)."""
    if facts is None or not facts.caches:
        return None
    result = []
    for cache in sorted(facts.caches, key=lambda c: f"index{c.index}"):
        if not _complete(cache):
            return None
        assert cache.id is not None and cache.size_kib is not None and cache.level is not None
        assert cache.type is not None and cache.shared_cpus is not None
        result.append(
            _CadvisorCache(cache.id, cache.size_kib, cache.level, cache.type, len(cache.shared_cpus))
        )
    return result


def _complete(cache: CacheInfo) -> bool:
    return None not in (cache.id, cache.size_kib, cache.level, cache.type, cache.shared_cpus)


@dataclass(frozen=True)
class _CacheAssignment:
    uncore: list[tuple[int, ...]]  # per core: ids of cadvisor's UncoreCaches
    node_level_l3: bool
    readable: bool


def _assign_caches(
    cores: Sequence[tuple[tuple[int, int], list[int]]], cpus: Mapping[int, CpuFacts]
) -> _CacheAssignment:
    """cadvisor ``addCacheInfo``: per-core uncore cache ids, plus the node-level L3 test on sharing alone."""
    uncore: list[tuple[int, ...]] = [() for _ in cores]
    node_level = False
    readable = True
    for i, (_, threads) in enumerate(cores):
        per_node = len(cores) * len(threads)
        first = cpus.get(threads[0])
        if first is not None and any(
            (c.level or 0) > 2 and c.shared_cpus is not None and len(c.shared_cpus) == per_node
            for c in first.caches
        ):
            node_level = True
        if not readable:
            continue
        caches = _cadvisor_caches(first)
        if caches is None:
            # cadvisor returns on the first failure; earlier cores keep what they got.
            readable = False
            continue
        found: list[_CadvisorCache] = []
        for cache in caches:
            if cache.level > 2 and cache.cpus != per_node and cache not in found:
                found.append(cache)
        uncore[i] = tuple(c.id for c in found)
    return _CacheAssignment(uncore=uncore, node_level_l3=node_level, readable=readable)


def _package_pseudo_nodes(
    cpus: Sequence[CpuFacts], online: set[int], issues: dict[str, list[int]]
) -> tuple[list[KubeletNode], int]:
    packages: dict[int, list[int]] = {}
    ordered = sorted(cpus, key=lambda c: f"cpu{c.id}")
    for cpu in ordered:
        if cpu.socket_id is not None:
            packages.setdefault(cpu.socket_id, []).append(cpu.id)
    by_id = {cpu.id: cpu for cpu in cpus}
    nodes = []
    for package in sorted(packages):
        cores = _group_cores(packages[package], by_id, online)
        caches = _assign_caches(cores, by_id)
        if not caches.readable:
            issues.setdefault("no_caches", []).append(package)
        nodes.append(
            KubeletNode(
                id=package,
                memory_bytes=0,
                hugepages=(),
                cores=tuple(
                    KubeletCore(core_id=c, socket_id=s, threads=tuple(t), uncore_cache_ids=caches.uncore[i])
                    for i, ((c, s), t) in enumerate(cores)
                ),
                node_level_l3=caches.node_level_l3,
                distances=None,
                caches_readable=caches.readable,
            )
        )
    # cadvisor counts every cpuN directory here, offline ones included.
    return nodes, len(cpus)


def _num_sockets(cpuinfo: str | None, cpus: Sequence[CpuFacts], online: set[int]) -> int:
    """``GetSockets``: distinct ``physical id`` in /proc/cpuinfo, else distinct package ids in sysfs."""
    count = parse.count_cpuinfo_distinct(cpuinfo, "physical id") if cpuinfo else 0
    if count:
        return count
    return len({c.socket_id for c in cpus if c.id in online and c.socket_id is not None})


def _num_physical_cores(cpuinfo: str | None, cpus: Sequence[CpuFacts], online: set[int]) -> int:
    """``GetPhysicalCores``: distinct ``core id`` values machine-wide (so 20, not 40, on 2 × 20 cores),
    else distinct (core_id, package) pairs in sysfs."""
    count = parse.count_cpuinfo_distinct(cpuinfo, "core id") if cpuinfo else 0
    if count:
        return count
    return len({(c.core_id, c.socket_id) for c in cpus if c.id in online and c.core_id is not None})


def _topology_warnings(view: KubeletView) -> list[str]:
    warnings = []
    memory_only = [n.id for n in view.nodes if not n.cores]
    if memory_only:
        warnings.append(
            f"{_nodes_phrase(memory_only)} no CPUs yet count as cadvisor topology nodes: the Topology "
            f"Manager counts them ({view.num_topology_nodes} nodes in all) and may offer them in hints"
        )
    if view.topology_manager_default_limit_exceeded:
        warnings.append(
            f"{view.num_topology_nodes} topology nodes > {DEFAULT_MAX_ALLOWABLE_NUMA_NODES}: a kubelet with "
            "a topology manager policy other than none refuses to start unless the max-allowable-numa-nodes "
            f"policy option is at least {view.num_topology_nodes}"
        )
    if view.node_ids_over_63:
        warnings.append(
            f"node ids {parse.format_cpulist(view.node_ids_over_63)} exceed {MAX_BITMASK_NODE_ID}: the "
            "kubelet's NUMA bitmask rejects them ('bit number must be in range 0-63'), so NUMA alignment "
            "involving these nodes is broken"
        )
    if view.distances_indexed_by_id_mismatch and any(n.distances for n in view.nodes):
        warnings.append(
            "node ids are not 0..N-1: with prefer-closest-numa-nodes the kubelet indexes cadvisor's "
            "positional distance rows by node id and reads wrong distances (or indexes out of range)"
        )
    return warnings


def _nodes_phrase(ids: Sequence[int]) -> str:
    return f"node {ids[0]} has" if len(ids) == 1 else f"nodes {parse.format_cpulist(ids)} have"
