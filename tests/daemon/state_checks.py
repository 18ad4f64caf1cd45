"""What a state directory must hold whatever happened to the daemon: checkpoints the kubelet's readers
accept (checksums verified by the project's own readers, which mirror the kubelet's), nothing given
twice, and exactly the pods the daemon lists."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.state.checkpoint import load_checkpoint
from kubeletemu.devicemanager.checkpoint import KUBELET_DEVICE_MANAGER_CHECKPOINT
from kubeletemu.devicemanager.checkpoint import unmarshal as unmarshal_devices
from kubeletemu.memorymanager.state.checkpoint import unmarshal as unmarshal_memory

# A pod as the daemon answered it: per container, its exclusive CPUs, memory blocks and devices.
Held = tuple[tuple[str, tuple[int, ...], tuple[tuple[str, int, tuple[int, ...]], ...], tuple[str, ...]], ...]


def held(pod: pb.AdmittedPod | pb.AdmitResponse) -> Held:
    return tuple(
        (
            c.name,
            tuple(sorted(c.cpu_ids)) if c.exclusive_cpus else (),
            tuple(sorted((b.memory_type, b.size, tuple(b.numa_nodes)) for b in c.memory)),
            tuple(sorted(f"{d.resource_name}/{i}" for d in c.devices for i in d.device_ids)),
        )
        for c in pod.containers
    )


def file_hashes(state_dir: Path) -> dict[str, str]:
    """Every file of the state directory (the lock file aside, which names the daemon's pid), hashed."""
    return {
        str(path.relative_to(state_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(state_dir.rglob("*"))
        if path.is_file() and path.name != "kubeletemu.lock"
    }


def _disjoint(groups: Iterable[Iterable[object]], what: str) -> None:
    seen: dict[object, int] = {}
    for n, group in enumerate(groups):
        for item in group:
            assert item not in seen, f"{what} {item} given twice"
            seen[item] = n


def assert_consistent(state_dir: Path, pods: Iterable[pb.AdmittedPod], all_cpus: int) -> None:
    """The checkpoints pass their checksums, agree with the listed pods container by container, and
    give no CPU, memory or device twice; ``pods/`` holds one file per listed pod."""
    listed = {p.uid: p for p in pods}
    assert {p.stem for p in (state_dir / "pods").glob("*.json")} == set(listed)

    cpu = load_checkpoint((state_dir / "cpu_manager_state").read_bytes())
    assigned = {
        (uid, name): CPUSet.parse(text)
        for uid, ctrs in (cpu.entries or {}).items()
        for name, text in (ctrs or {}).items()
    }
    default = CPUSet.parse(cpu.default_cpu_set)
    _disjoint([default, *assigned.values()], "CPU")
    assert default.union(*assigned.values()) == CPUSet(range(all_cpus))
    exclusive = {
        (uid, c.name): tuple(sorted(c.cpu_ids))
        for uid, p in listed.items()
        for c in p.containers
        if c.exclusive_cpus
    }
    assert {ref: tuple(sorted(cpus)) for ref, cpus in assigned.items()} == exclusive

    memory = unmarshal_memory((state_dir / "memory_manager_state").read_bytes())
    blocks = {
        (uid, name, b.type, b.size, tuple(b.numa_affinity))
        for uid, ctrs in memory.entries.items()
        for name, bs in ctrs.items()
        for b in bs
    }
    assert blocks == {
        (uid, c.name, b.memory_type, b.size, tuple(b.numa_nodes))
        for uid, p in listed.items()
        for c in p.containers
        for b in c.memory
    }
    # Each byte reserved once: what the blocks hold is what the NUMA nodes have reserved.
    for kind in {t for node in memory.machine_state.values() for t in node.memory_map}:
        tables = [node.memory_map[kind] for node in memory.machine_state.values() if kind in node.memory_map]
        assert all(t.reserved + t.free == t.allocatable for t in tables), kind
        assert sum(t.reserved for t in tables) == sum(size for _, _, t, size, _ in blocks if t == kind), kind

    checkpoint = state_dir / "device-plugins" / KUBELET_DEVICE_MANAGER_CHECKPOINT
    entries = unmarshal_devices(checkpoint.read_bytes()).entries or [] if checkpoint.exists() else []
    given = {
        (e.pod_uid, e.container_name): [
            f"{e.resource_name}/{i}" for ids in e.device_ids.values() for i in ids
        ]
        for e in entries
    }
    _disjoint(given.values(), "device")
    assert {ref: tuple(sorted(ids)) for ref, ids in given.items()} == {
        (uid, c.name): devices
        for uid, p in listed.items()
        for c, (*_, devices) in zip(p.containers, held(p), strict=True)
        if devices
    }
