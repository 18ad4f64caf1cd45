"""Logical CPUs: ``sys/devices/system/cpu`` (Documentation/ABI/stable/sysfs-devices-system-cpu,
Documentation/admin-guide/cputopology.rst) and the isolation boot parameters in ``proc/cmdline``."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from hostprobe import parse
from hostprobe.errors import ProbeError
from hostprobe.model import CacheInfo
from hostprobe.paths import HostReader

_CPU_DIR = re.compile(r"^cpu(\d+)$")
_NODE_LINK = re.compile(r"^node(\d+)$")
_CACHE_INDEX = re.compile(r"^index(\d+)$")


@dataclass(frozen=True)
class CpuFacts:
    """What ``cpuN/`` says about one CPU; the NUMA node is settled later against the node directories."""

    id: int
    online: bool
    socket_id: int | None
    die_id: int | None
    cluster_id: int | None
    core_id: int | None
    thread_siblings: tuple[int, ...]
    caches: tuple[CacheInfo, ...]
    node_links: tuple[int, ...]  # ``cpuN/nodeK`` links (may dangle when node K is offline)

    @property
    def l3(self) -> CacheInfo | None:
        """The level-3 cache (unified preferred): the kubelet's "uncore" cache."""
        level3 = [c for c in self.caches if c.level == 3]
        unified = [c for c in level3 if (c.type or "").lower() == "unified"]
        candidates = unified or level3
        return candidates[0] if candidates else None


@dataclass(frozen=True)
class CpuState:
    cpus: tuple[CpuFacts, ...]
    online_file: tuple[int, ...] | None  # ``cpu/online`` (cadvisor treats a missing file as "all online")
    isolated: tuple[int, ...]
    isolated_source: str | None
    nohz_full: tuple[int, ...]


def read_cpus(reader: HostReader) -> CpuState:
    """Read every ``cpuN`` directory.

    Online state: ``cpu/online``; without it, ``cpuN/online`` (absent for CPUs that cannot be unplugged,
    e.g. cpu0 on x86), and without that, online, as cadvisor and ghw assume.
    """
    root = reader.sys("devices", "system", "cpu")
    if not os.path.isdir(root):
        raise ProbeError(root, "not found: is the sysfs root a sysfs tree?")
    ids = sorted(int(m.group(1)) for name in reader.listdir(root) if (m := _CPU_DIR.match(name)))
    if not ids:
        raise ProbeError(root, "no cpuN directories")

    online_file = reader.cpulist(os.path.join(root, "online"))
    if online_file is None:
        reader.note(f"{root}/online absent: CPUs are online unless cpuN/online says 0 (as cadvisor and ghw)")
    online_set = set(online_file) if online_file is not None else None

    cpus = tuple(_read_cpu(reader, os.path.join(root, f"cpu{cpu_id}"), cpu_id, online_set) for cpu_id in ids)

    cmdline = _read_cmdline(reader)
    isolated = reader.cpulist(os.path.join(root, "isolated"))
    isolated_source: str | None = "sysfs" if isolated is not None else None
    if isolated is None and "isolcpus" in cmdline:
        # ghw snapshots do not copy cpu/isolated; the boot parameter is the documented fallback.
        isolated = parse.parse_cmdline_cpulist(cmdline["isolcpus"])
        isolated_source = "cmdline"
    nohz_full = reader.cpulist(os.path.join(root, "nohz_full"))
    if nohz_full is None and "nohz_full" in cmdline:
        nohz_full = parse.parse_cmdline_cpulist(cmdline["nohz_full"])
    return CpuState(
        cpus=cpus,
        online_file=online_file,
        isolated=isolated or (),
        isolated_source=isolated_source,
        nohz_full=nohz_full or (),
    )


def _read_cmdline(reader: HostReader) -> dict[str, str]:
    raw = reader.text(reader.proc("cmdline"))
    return parse.parse_cmdline(raw) if raw is not None else {}


def _read_cpu(reader: HostReader, path: str, cpu_id: int, online_set: set[int] | None) -> CpuFacts:
    entries = set(reader.listdir(path))
    if online_set is not None:
        online = cpu_id in online_set
    elif "online" in entries:
        online = reader.integer(os.path.join(path, "online")) != 0
    else:
        online = True

    socket_id = die_id = cluster_id = core_id = None
    siblings: tuple[int, ...] = ()
    if "topology" in entries:
        topo = os.path.join(path, "topology")
        names = set(reader.listdir(topo))

        def num(name: str) -> int | None:
            return reader.integer(os.path.join(topo, name)) if name in names else None

        socket_id, die_id, cluster_id, core_id = (
            num("physical_package_id"),
            num("die_id"),
            num("cluster_id"),
            num("core_id"),
        )
        siblings = _first_list(reader, topo, names, ("core_cpus_list", "thread_siblings_list"))
        if not siblings:
            siblings = _first_mask(reader, topo, names, ("core_cpus", "thread_siblings"))

    caches = _read_caches(reader, os.path.join(path, "cache")) if "cache" in entries else ()
    node_links = tuple(sorted(int(m.group(1)) for name in entries if (m := _NODE_LINK.match(name))))
    return CpuFacts(
        id=cpu_id,
        online=online,
        socket_id=socket_id,
        die_id=die_id,
        cluster_id=cluster_id,
        core_id=core_id,
        thread_siblings=siblings,
        caches=caches,
        node_links=node_links,
    )


def _first_list(
    reader: HostReader, base: str, names: set[str], candidates: tuple[str, ...]
) -> tuple[int, ...]:
    # The new names (core_cpus_list, 5.x) first, then the deprecated ones old kernels still have.
    for name in candidates:
        if name in names:
            return reader.cpulist(os.path.join(base, name)) or ()
    return ()


def _first_mask(
    reader: HostReader, base: str, names: set[str], candidates: tuple[str, ...]
) -> tuple[int, ...]:
    for name in candidates:
        if name in names:
            return reader.cpumask(os.path.join(base, name)) or ()
    return ()


def _read_caches(reader: HostReader, cache_dir: str) -> tuple[CacheInfo, ...]:
    caches = []
    # Lexicographic, as cadvisor's ReadDir returns them (index10 sorts before index2).
    for name in reader.listdir(cache_dir):
        match = _CACHE_INDEX.match(name)
        if not match:
            continue
        index_dir = os.path.join(cache_dir, name)
        files = set(reader.listdir(index_dir))
        get = functools.partial(os.path.join, index_dir)
        level = reader.integer(get("level")) if "level" in files else None
        cache_id = reader.integer(get("id")) if "id" in files else None
        size = (
            reader.parsed(get("size"), parse.parse_cache_size_kib, "cache size") if "size" in files else None
        )
        # The kernel prints both from one mask; the hand-edited hwloc capture disagrees, and its ground
        # truth follows the list.
        if "shared_cpu_list" in files:
            shared = reader.cpulist(get("shared_cpu_list"))
        elif "shared_cpu_map" in files:
            shared = reader.cpumask(get("shared_cpu_map"))
        else:
            shared = None
        caches.append(
            CacheInfo(
                index=int(match.group(1)),
                level=level,
                type=reader.word(get("type")) if "type" in files else None,
                id=cache_id,
                size_kib=size,
                shared_cpus=shared,
            )
        )
    return tuple(caches)
