"""Synthetic sysfs trees for tests: the generator lives in ``hostprobe.synthetic`` (the bundled sample uses
it too); this module re-exports it and adds the hosts no real capture covers."""

from __future__ import annotations

from hostprobe.synthetic import GIB_KIB, CpuPlace, SyntheticHost, SyntheticPciFunction, write_tree

__all__ = [
    "GIB_KIB",
    "CpuPlace",
    "SyntheticHost",
    "SyntheticPciFunction",
    "gb200_like",
    "offline_cpus_host",
    "sriov_virtio_vmd_host",
    "write_tree",
]


def gb200_like() -> SyntheticHost:
    """Two Grace CPUs (72 cores, no SMT, nodes 0-1) and 34 CPU-less nodes (2-35): 36 topology nodes.

    The GPU driver's nodes come in blocks of 8 per GPU; only the first of each block (2, 10, 18, 26) holds
    GPU memory, the others stay empty until MIG partitions use them.
    """
    gpu_nodes = tuple(range(2, 36))
    memory = {0: 480 * GIB_KIB, 1: 480 * GIB_KIB} | {
        n: (186 * GIB_KIB if n in (2, 10, 18, 26) else 0) for n in gpu_nodes
    }
    distances = {(0, 1): 40} | {(cpu, gpu): 80 for cpu in (0, 1) for gpu in gpu_nodes}
    distances |= {(a, b): 120 for a in gpu_nodes for b in gpu_nodes if a < b}
    return SyntheticHost(
        sockets=2,
        cores_per_socket=72,
        threads_per_core=1,
        memory_only_node_ids=gpu_nodes,
        node_memory_kib=memory,
        hugepage_sizes_kib=(64, 2048, 524288),
        hugepages={0: {2048: (1024, 1000)}, 1: {524288: (4, 4)}},
        distances=distances,
        pci_functions=tuple(
            SyntheticPciFunction(
                address=f"000{gpu}:01:00.0",
                class_code="0x030200",
                vendor="0x10de",
                device="0x2941",
                driver="nvidia",
                numa_node=gpu // 2,
            )
            for gpu in range(4)
        ),
        isolated="",
    )


def sriov_virtio_vmd_host() -> SyntheticHost:
    """2 sockets with PF/VF links, a virtio-net function, an NVMe behind a VMD domain (``10000:``) and a
    possible-but-offline node, plus a CXL memory node with HMAT initiators."""
    vfs = tuple(
        SyntheticPciFunction(
            address=f"0000:3b:02.{i}",
            device="0x154c",
            driver="iavf",
            numa_node=0 if i < 3 else 1,  # the last VF reports another node, as in the L5640 capture
            netdevs=(f"ens1f0v{i}",),
        )
        for i in range(4)
    )
    return SyntheticHost(
        sockets=2,
        cores_per_socket=4,
        threads_per_core=2,
        memory_only_node_ids=(2,),
        offline_node_ids=(3,),
        node_memory_kib={0: 32 * GIB_KIB, 1: 32 * GIB_KIB, 2: 128 * GIB_KIB},
        hugepages={0: {2048: (256, 200)}, 1: {1048576: (4, 3)}},
        initiators={2: (1,)},
        pci_functions=(
            SyntheticPciFunction(
                address="0000:3b:00.0", netdevs=("ens1f0",), sriov_totalvfs=64, vfs=vfs, numa_node=0
            ),
            SyntheticPciFunction(
                address="0000:00:03.0",
                vendor="0x1af4",
                device="0x1041",
                driver="virtio-pci",
                numa_node=-1,
                virtio_netdevs=("eth0",),
            ),
            SyntheticPciFunction(
                address="10000:00:02.0", class_code="0x060400", driver="pcieport", numa_node=1
            ),
            SyntheticPciFunction(
                address="10000:01:00.0",
                class_code="0x010802",
                vendor="0x144d",
                device="0xa824",
                driver="nvme",
                numa_node=1,
                bridge="10000:00:02.0",
            ),
            SyntheticPciFunction(address="0000:d8:00.0", class_code="0x120000", numa_node=None, driver=None),
        ),
        virtual_netdevs=("lo", "br0"),
        isolated="2-3,10-11",
    )


def offline_cpus_host() -> SyntheticHost:
    """A kernel-consistent multi-node host with hot-unplugged CPUs (no real capture has one)."""
    return SyntheticHost(
        sockets=2,
        cores_per_socket=4,
        threads_per_core=2,
        offline_cpus=(3, 7, 11),
        new_topology_names=False,
        cache_ids=False,
        interleaved_numbering=True,
    )
