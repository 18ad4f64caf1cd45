"""``EmulatorConfiguration`` (``kubeletemu.io/v1alpha1``): what the emulator needs beyond the kubelet's own
configuration. Unlike ``KubeletConfiguration`` this format is ours, so an unknown field is an error (a typo
would otherwise silently fall back to a default).

```yaml
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
devices:                      # device-plugin resources the emulated kubelet offers
- resourceName: example.com/dev
  devices:                    # a static list: ids and NUMA nodes (none = no topology)
  - {id: dev0, numaNodes: [1]}
- resourceName: intel.com/sriov_vf
  pciSelector: {vendors: ["8086"], devices: ["154c"]}   # or PCI functions found on the host
sysfsRoot: /sys               # where hostprobe reads the topology (a snapshot directory in tests)
procfsRoot: /proc
stateDir: /var/lib/kubeletemu # checkpoints: cpu_manager_state, memory_manager_state, ...
socket: /run/kubeletemu/kubeletemu.sock                # the admission gRPC service
podResourcesSocket: /run/kubeletemu/podresources.sock  # the kubelet podresources API; "": beside socket
nodeName: worker-1            # the node's name in NodeResourceTopology objects; "": the host name
metricsAddress: ""            # host:port for /metrics; empty = no HTTP listener
kubeletRootDir: /var/lib/kubelet  # read-only: the real kubelet's checkpoints, for shadow mode
shadow: false                 # mirror the real kubelet of this node instead of emulating one
kubeletConfig: ""             # the kubelet's config file; "": <kubeletRootDir>/config.yaml
kubeletPodResourcesSocket: "" # "": <kubeletRootDir>/pod-resources/kubelet.sock
shadowRefreshPeriod: 10s      # re-read the kubelet's state at least this often (besides inotify); 0s: never
shutdownGracePeriod: 10s      # in-flight RPCs get this long on SIGTERM (keep TimeoutStopSec above it)
logLevel: info                # debug | info | warning | error
kubeletVersion: master        # the kubelet to be exact to: 1.33, 1.34, 1.35, 1.36, 1.37 or master
kubeletBinary: /usr/bin/kubelet  # shadow mode: its --version picks kubeletVersion; "": use the setting
feedAddress: ""               # host:port of the node feed (mutual TLS); empty = no feed
feedCertFile: ""              # the feed's server certificate (PEM); required with feedAddress
feedKeyFile: ""               # its private key (PEM)
feedClientCAFile: ""          # the CA client certificates must chain to (PEM)
feedHeartbeatPeriod: 5s       # a Heartbeat on every feed stream this often
```

The command line (``--socket``, ``--state-dir``, ...) overrides the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeletemu.config import fields
from kubeletemu.config.fields import Where
from kubeletemu.config.pci_selector import parse_pci_selector
from kubeletemu.config.validation import is_extended_resource_name
from kubeletemu.devicemanager.pci_selector import PCISelector
from kubeletemu.versions.version import DEFAULT_VERSION, SUPPORTED, parse_version

API_VERSION = "kubeletemu.io/v1alpha1"
KIND = "EmulatorConfiguration"
LOG_LEVELS = ("debug", "info", "warning", "error")

# RFC 1123 subdomain: what an object name (here the NodeResourceTopology's) must be.
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_KEYS = (
    "apiVersion",
    "kind",
    "devices",
    "sysfsRoot",
    "procfsRoot",
    "stateDir",
    "socket",
    "podResourcesSocket",
    "nodeName",
    "metricsAddress",
    "kubeletRootDir",
    "shadow",
    "kubeletConfig",
    "kubeletPodResourcesSocket",
    "shadowRefreshPeriod",
    "shutdownGracePeriod",
    "logLevel",
    "kubeletVersion",
    "kubeletBinary",
    "feedAddress",
    "feedCertFile",
    "feedKeyFile",
    "feedClientCAFile",
    "feedHeartbeatPeriod",
)
_FEED_FILES = ("feedCertFile", "feedKeyFile", "feedClientCAFile")


@dataclass(frozen=True)
class StaticDevice:
    """One device of a static list: its id and the NUMA nodes of its ``TopologyInfo`` (empty: none)."""

    id: str
    numa_nodes: tuple[int, ...] = ()


@dataclass(frozen=True)
class DeviceResource:
    """A device-plugin resource: exactly one of a static device list or a PCI selector."""

    resource_name: str
    devices: tuple[StaticDevice, ...] = ()
    pci_selector: PCISelector | None = None


@dataclass(frozen=True)
class EmulatorConfiguration:
    devices: tuple[DeviceResource, ...] = ()
    sysfs_root: str = "/sys"
    procfs_root: str = "/proc"
    state_dir: str = "/var/lib/kubeletemu"
    socket: str = "/run/kubeletemu/kubeletemu.sock"
    # None: ``podresources.sock`` in the admission socket's directory.
    pod_resources_socket: str | None = None
    # None: the host name, lowercased (the kubelet's default node name).
    node_name: str | None = None
    metrics_address: str | None = None
    kubelet_root_dir: str = "/var/lib/kubelet"
    # Shadow mode: mirror the real kubelet (its config, checkpoints and podresources) read-only.
    shadow: bool = False
    # None: ``config.yaml`` in ``kubelet_root_dir`` (kubeadm's location).
    kubelet_config: str | None = None
    # None: ``pod-resources/kubelet.sock`` in ``kubelet_root_dir``.
    kubelet_pod_resources_socket: str | None = None
    shadow_refresh_period: float = 10.0  # seconds; 0 disables the periodic refresh
    shutdown_grace_period: float = 10.0  # seconds
    log_level: str = "info"
    # The kubelet version emulated (issue 16): one of ``kubeletemu.versions.SUPPORTED``.
    kubelet_version: str = DEFAULT_VERSION
    # Shadow mode: the real kubelet's binary, run with --version to pick the version emulated (None: use
    # ``kubelet_version``).
    kubelet_binary: str | None = "/usr/bin/kubelet"
    # The node feed (kubeletemu.feed): a TCP listener with mutual TLS; None: no feed.
    feed_address: str | None = None
    feed_cert_file: str | None = None
    feed_key_file: str | None = None
    feed_client_ca_file: str | None = None
    feed_heartbeat_period: float = 5.0  # seconds


def parse_duration(text: str) -> float:
    """A Go ``time.Duration`` string (``10s``, ``1m30s``, ``500ms``) in seconds; ``ValueError`` otherwise."""
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not text or pos != len(text):
        raise ValueError(f"invalid duration {text!r}: expected e.g. 10s, 1m30s or 500ms")
    return total


def parse_emulator_configuration(doc: Mapping[str, Any], where: Where) -> EmulatorConfiguration:
    # apiVersion and kind were checked by the document's reader; the fields named are the settings.
    fields.known_fields(where, "", {k: v for k, v in doc.items() if k not in _KEYS[:2]}, _KEYS[2:])
    defaults = EmulatorConfiguration()

    def path_setting(key: str, default: str) -> str:
        value = doc.get(key)
        if value is None:
            return default
        text = fields.string(where, key, value)
        if not text:
            raise where.error(key, "must not be empty")
        return text

    # Both: empty or absent means the derived default.
    pod_resources = doc.get("podResourcesSocket")
    pod_resources_socket = (
        None if pod_resources in (None, "") else fields.string(where, "podResourcesSocket", pod_resources)
    )
    node_name = None
    if doc.get("nodeName") not in (None, ""):
        node_name = fields.string(where, "nodeName", doc["nodeName"])
        if len(node_name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(node_name):
            raise where.error(
                "nodeName",
                f"{node_name!r} is not a valid node name: lowercase letters, digits, '-' and '.', "
                "starting and ending with a letter or digit, at most 253 characters",
            )

    metrics_address = doc.get("metricsAddress")
    metrics = (
        None if metrics_address in (None, "") else fields.string(where, "metricsAddress", metrics_address)
    )
    grace = _duration_setting(doc, where, "shutdownGracePeriod", defaults.shutdown_grace_period)
    refresh = _duration_setting(doc, where, "shadowRefreshPeriod", defaults.shadow_refresh_period)
    shadow = defaults.shadow if doc.get("shadow") is None else fields.boolean(where, "shadow", doc["shadow"])
    log_level = defaults.log_level
    if doc.get("logLevel") is not None:
        log_level = fields.string(where, "logLevel", doc["logLevel"])
        if log_level not in LOG_LEVELS:
            raise where.error("logLevel", f"{log_level!r} is not one of {', '.join(LOG_LEVELS)}")

    kubelet_version = defaults.kubelet_version
    if doc.get("kubeletVersion") is not None:
        raw_version = fields.scalar_text(where, "kubeletVersion", doc["kubeletVersion"])
        try:
            kubelet_version = parse_version(raw_version)
        except ValueError:
            raise where.error(
                "kubeletVersion", f"{raw_version!r} is not a supported version: {', '.join(SUPPORTED)}"
            ) from None

    feed_address = _optional_path(doc, where, "feedAddress")
    feed_files = {key: _optional_path(doc, where, key) for key in _FEED_FILES}
    if feed_address is not None:
        for key, value in feed_files.items():
            if value is None:
                raise where.error(key, "required with feedAddress (the feed serves mutual TLS only)")
    heartbeat = _duration_setting(doc, where, "feedHeartbeatPeriod", defaults.feed_heartbeat_period)
    if heartbeat <= 0:
        raise where.error("feedHeartbeatPeriod", "must be positive")

    return EmulatorConfiguration(
        devices=_device_resources(doc.get("devices"), where),
        sysfs_root=path_setting("sysfsRoot", defaults.sysfs_root),
        procfs_root=path_setting("procfsRoot", defaults.procfs_root),
        state_dir=path_setting("stateDir", defaults.state_dir),
        socket=path_setting("socket", defaults.socket),
        pod_resources_socket=pod_resources_socket,
        node_name=node_name,
        metrics_address=metrics,
        kubelet_root_dir=path_setting("kubeletRootDir", defaults.kubelet_root_dir),
        shadow=shadow,
        kubelet_config=_optional_path(doc, where, "kubeletConfig"),
        kubelet_pod_resources_socket=_optional_path(doc, where, "kubeletPodResourcesSocket"),
        shadow_refresh_period=refresh,
        shutdown_grace_period=grace,
        log_level=log_level,
        kubelet_version=kubelet_version,
        kubelet_binary=defaults.kubelet_binary
        if doc.get("kubeletBinary") is None
        else (fields.string(where, "kubeletBinary", doc["kubeletBinary"]) or None),
        feed_address=feed_address,
        feed_cert_file=feed_files["feedCertFile"],
        feed_key_file=feed_files["feedKeyFile"],
        feed_client_ca_file=feed_files["feedClientCAFile"],
        feed_heartbeat_period=heartbeat,
    )


def _duration_setting(doc: Mapping[str, Any], where: Where, key: str, default: float) -> float:
    if doc.get(key) is None:
        return default
    text = fields.string(where, key, doc[key])
    try:
        return parse_duration(text)
    except ValueError as err:
        raise where.error(key, str(err)) from None


def _optional_path(doc: Mapping[str, Any], where: Where, key: str) -> str | None:
    """A path whose empty or absent value means "derived from another setting"."""
    value = doc.get(key)
    return None if value in (None, "") else fields.string(where, key, value)


def _device_resources(value: Any, where: Where) -> tuple[DeviceResource, ...]:
    resources: list[DeviceResource] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(fields.sequence(where, "devices", value)):
        path = f"devices[{index}]"
        entry = fields.mapping(where, path, raw)
        fields.known_fields(where, path, entry, ("resourceName", "devices", "pciSelector"))
        if entry.get("resourceName") is None:
            raise where.error(f"{path}.resourceName", "required")
        name = fields.string(where, f"{path}.resourceName", entry["resourceName"])
        if not is_extended_resource_name(name):
            raise where.error(
                f"{path}.resourceName",
                f"{name!r} is not an extended resource name (<domain>/<name>, outside kubernetes.io)",
            )
        if name in seen:
            raise where.error(f"{path}.resourceName", f"{name!r} is already defined by devices[{seen[name]}]")
        seen[name] = index
        has_list, has_selector = entry.get("devices") is not None, entry.get("pciSelector") is not None
        if has_list == has_selector:
            raise where.error(path, "give exactly one of devices (a static list) or pciSelector")
        if has_selector:
            selector = parse_pci_selector(where, f"{path}.pciSelector", entry["pciSelector"])
            resources.append(DeviceResource(name, pci_selector=selector))
        else:
            resources.append(DeviceResource(name, devices=_static_devices(entry["devices"], where, path)))
    return tuple(resources)


def _static_devices(value: Any, where: Where, path: str) -> tuple[StaticDevice, ...]:
    items = fields.sequence(where, f"{path}.devices", value)
    if not items:
        raise where.error(f"{path}.devices", "a static list needs at least one device")
    devices: list[StaticDevice] = []
    ids: set[str] = set()
    for index, raw in enumerate(items):
        device_path = f"{path}.devices[{index}]"
        entry = fields.mapping(where, device_path, raw)
        fields.known_fields(where, device_path, entry, ("id", "numaNodes"))
        if entry.get("id") is None:
            raise where.error(f"{device_path}.id", "required")
        device_id = fields.scalar_text(where, f"{device_path}.id", entry["id"])
        if not device_id:
            raise where.error(f"{device_path}.id", "must not be empty")
        if device_id in ids:
            raise where.error(f"{device_path}.id", f"duplicate device id {device_id!r}")
        ids.add(device_id)
        nodes: list[int] = []
        for node_index, node in enumerate(
            fields.sequence(where, f"{device_path}.numaNodes", entry.get("numaNodes"))
        ):
            node_path = f"{device_path}.numaNodes[{node_index}]"
            node_id = fields.integer(where, node_path, node)
            if node_id < 0:
                raise where.error(node_path, f"NUMA node ids are non-negative, got {node_id}")
            nodes.append(node_id)
        devices.append(StaticDevice(device_id, tuple(sorted(set(nodes)))))
    return tuple(devices)
