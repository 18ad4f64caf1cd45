"""hostprobe: a node's NUMA topology from sysfs and procfs, live or from a captured tree.

``probe(sysfs_root="/sys", procfs_root="/proc")`` returns a ``HostTopology``; ``python -m hostprobe``
prints it. See ``shared/API.md`` §1 for the contract and ``shared/spec/hostprobe.md`` for the kernel,
cadvisor and kubelet behaviour mirrored here.
"""

from hostprobe.crosscheck import LiveCrossCheck, psutil_cross_check
from hostprobe.errors import ProbeError
from hostprobe.model import (
    CacheInfo,
    Cpu,
    HostTopology,
    HugePagePool,
    KubeletCore,
    KubeletCpu,
    KubeletNode,
    KubeletView,
    NetInterface,
    NumaNode,
    PciDevice,
    SystemMemory,
)
from hostprobe.probe import probe

__all__ = [
    "CacheInfo",
    "Cpu",
    "HostTopology",
    "HugePagePool",
    "KubeletCore",
    "KubeletCpu",
    "KubeletNode",
    "KubeletView",
    "LiveCrossCheck",
    "NetInterface",
    "NumaNode",
    "PciDevice",
    "ProbeError",
    "SystemMemory",
    "probe",
    "psutil_cross_check",
]
