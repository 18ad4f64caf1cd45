"""A bundled sample topology for dev boxes.

For ``kubeletemu serve --sysfs-root DEST/sys --procfs-root DEST/proc`` on a laptop:

2 sockets, 2 NUMA nodes, 16 CPUs (8 cores × 2 threads), 16 GiB per node, 2M and 1G huge pages, distances
10/21, and one Intel XL710 NIC per node (PF + 2 SR-IOV VFs, device ``0x154c``, each with a netdev).
Write it with ``python -m hostprobe.sample DEST``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hostprobe.synthetic import GIB_KIB, SyntheticHost, SyntheticPciFunction, write_tree


def _nic(bus: int, node: int, name: str) -> SyntheticPciFunction:
    vfs = tuple(
        SyntheticPciFunction(
            address=f"0000:{bus:02x}:02.{vf}",
            device="0x154c",
            numa_node=node,
            driver="iavf",
            netdevs=(f"{name}v{vf}",),
        )
        for vf in range(2)
    )
    return SyntheticPciFunction(
        address=f"0000:{bus:02x}:00.0",
        device="0x1583",
        numa_node=node,
        driver="i40e",
        netdevs=(name,),
        sriov_totalvfs=64,
        vfs=vfs,
    )


SAMPLE_HOST = SyntheticHost(
    sockets=2,
    cores_per_socket=4,
    threads_per_core=2,
    node_memory_kib=16 * GIB_KIB,
    hugepages={0: {2048: (512, 512), 1048576: (2, 2)}, 1: {2048: (512, 512), 1048576: (2, 2)}},
    pci_functions=(_nic(0x3B, 0, "ens1f0"), _nic(0x86, 1, "ens2f0")),
    virtual_netdevs=("lo",),
    cmdline="BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro default_hugepagesz=2M",
)


def write_sample_tree(dest: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write the sample host below ``dest``; returns (sysfs root, procfs root)."""
    return write_tree(dest, SAMPLE_HOST)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hostprobe.sample", description=__doc__.splitlines()[0])
    parser.add_argument("dest", help="directory to write sys/ and proc/ into (must not hold a tree yet)")
    args = parser.parse_args(argv)
    if (Path(args.dest) / "sys").exists():
        print(f"hostprobe.sample: error: {args.dest}/sys already exists", file=sys.stderr)
        return 2
    sys_root, proc_root = write_sample_tree(args.dest)
    print(f"--sysfs-root {sys_root} --procfs-root {proc_root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
