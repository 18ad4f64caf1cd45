"""The daemon's configuration: a node's ``KubeletConfiguration`` plus our ``EmulatorConfiguration``.

The public names are imported from their modules on first use: reading a pod manifest needs
``kubeletemu.config.fields`` and ``validation`` only, and a CLI client that reads one should not load the
configuration loader (and through it every manager's policies).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubeletemu.config.emulator_config import DeviceResource, EmulatorConfiguration, StaticDevice
    from kubeletemu.config.errors import ConfigError
    from kubeletemu.config.kubelet_config import KubeletConfiguration
    from kubeletemu.config.loader import Config, load_config, parse_config

_EXPORTS = {
    "Config": "kubeletemu.config.loader",
    "ConfigError": "kubeletemu.config.errors",
    "DeviceResource": "kubeletemu.config.emulator_config",
    "EmulatorConfiguration": "kubeletemu.config.emulator_config",
    "KubeletConfiguration": "kubeletemu.config.kubelet_config",
    "StaticDevice": "kubeletemu.config.emulator_config",
    "load_config": "kubeletemu.config.loader",
    "parse_config": "kubeletemu.config.loader",
}

__all__ = [
    "Config",
    "ConfigError",
    "DeviceResource",
    "EmulatorConfiguration",
    "KubeletConfiguration",
    "StaticDevice",
    "load_config",
    "parse_config",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
