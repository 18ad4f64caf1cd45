"""The daemon's configuration: a node's ``KubeletConfiguration`` plus our ``EmulatorConfiguration``."""

from kubeletemu.config.emulator_config import DeviceResource, EmulatorConfiguration, StaticDevice
from kubeletemu.config.errors import ConfigError
from kubeletemu.config.kubelet_config import KubeletConfiguration
from kubeletemu.config.loader import Config, load_config, parse_config

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
