"""hostprobe: a node's NUMA topology from sysfs and procfs, live or from a captured tree.

``probe(sysfs_root="/sys", procfs_root="/proc")`` returns a ``HostTopology``; ``python -m hostprobe``
prints it. See ``shared/API.md`` §1 for the contract and ``shared/spec/hostprobe.md`` for the kernel,
cadvisor and kubelet behaviour mirrored here.
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# The public names, each imported from its module on first use: a client that only formats a cpuset
# (``hostprobe.parse``, the kubeletemu CLI's tables) does not load the probe, its models and psutil.
_EXPORTS = {
    "LiveCrossCheck": "hostprobe.crosscheck",
    "psutil_cross_check": "hostprobe.crosscheck",
    "ProbeError": "hostprobe.errors",
    **dict.fromkeys(
        (
            "CacheInfo",
            "Cpu",
            "HostTopology",
            "HugePagePool",
            "KubeletCore",
            "KubeletCpu",
            "KubeletNode",
            "KubeletView",
            "NetInterface",
            "NumaNode",
            "PciDevice",
            "SystemMemory",
        ),
        "hostprobe.model",
    ),
    "probe": "hostprobe.probe",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


class _Package(types.ModuleType):
    """The submodule ``hostprobe.probe`` and the function ``hostprobe.probe`` share a name. Importing a
    submodule binds it on its package, which would hide the function once anything imports the module
    (eagerly, the function was bound after the module and won); here the function always wins."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "probe" and isinstance(value, types.ModuleType):
            value = value.probe
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

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
