"""EmulatorConfiguration: device resources, PCI selectors, daemon settings."""

from __future__ import annotations

import pytest

from kubeletemu.config import (
    ConfigError,
    DeviceResource,
    EmulatorConfiguration,
    StaticDevice,
    parse_config,
)
from kubeletemu.config.emulator_config import parse_duration
from kubeletemu.devicemanager import PCISelector

E = "emu.yaml: "
HEADER = "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n"


def emulator(body: str) -> EmulatorConfiguration:
    return parse_config(HEADER + body, "emu.yaml").emulator


def test_api_md_example() -> None:
    config = emulator(
        """\
devices:                       # device-plugin resources the emulated kubelet offers
- resourceName: example.com/dev
  devices:                     # a static list...
  - {id: dev0, numaNodes: [1]}
  - {id: dev1, numaNodes: [1]}
- resourceName: intel.com/sriov_vf
  pciSelector: {vendors: ["8086"], devices: ["154c"]}   # ...or PCI functions found by hostprobe
"""
    )
    assert config.devices == (
        DeviceResource("example.com/dev", devices=(StaticDevice("dev0", (1,)), StaticDevice("dev1", (1,)))),
        DeviceResource("intel.com/sriov_vf", pci_selector=PCISelector(vendors=("8086",), devices=("154c",))),
    )


def test_settings_and_defaults() -> None:
    assert emulator("") == EmulatorConfiguration()
    config = emulator(
        "sysfsRoot: /snap/sys\nprocfsRoot: /snap/proc\nstateDir: /tmp/state\nsocket: /tmp/k.sock\n"
        "podResourcesSocket: /tmp/p.sock\nmetricsAddress: 127.0.0.1:10255\nkubeletRootDir: /srv/kubelet\n"
        "shutdownGracePeriod: 1m30s\nlogLevel: debug\nnodeName: worker-1.example.com\n"
    )
    assert config == EmulatorConfiguration(
        sysfs_root="/snap/sys",
        procfs_root="/snap/proc",
        state_dir="/tmp/state",
        socket="/tmp/k.sock",
        pod_resources_socket="/tmp/p.sock",
        node_name="worker-1.example.com",
        metrics_address="127.0.0.1:10255",
        kubelet_root_dir="/srv/kubelet",
        shutdown_grace_period=90.0,
        log_level="debug",
    )
    assert emulator('metricsAddress: ""\n').metrics_address is None
    # Unset: podresources.sock beside the admission socket, and the host name.
    assert EmulatorConfiguration().pod_resources_socket is None
    assert EmulatorConfiguration().node_name is None
    assert emulator('podResourcesSocket: ""\nnodeName: ""\n') == EmulatorConfiguration()


def test_static_devices_without_topology_and_numeric_ids() -> None:
    [resource] = emulator(
        "devices:\n- resourceName: vendor.io/fpga\n  devices: [{id: 7}, {id: b, numaNodes: [3, 1, 3]}]\n"
    ).devices
    assert resource.devices == (StaticDevice("7", ()), StaticDevice("b", (1, 3)))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0), ("1.5s", 1.5), ("250us", 0.00025)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "s", "10 s", "1x", "-1s"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            "socket_path: /x\n",
            E + "socket_path: unknown field: expected one of devices,",
            id="unknown",
        ),
        pytest.param("stateDir: ''\n", E + "stateDir: must not be empty", id="empty_path"),
        pytest.param("socket: 5\n", E + "socket: expected a string, got an integer", id="path_type"),
        pytest.param(
            "logLevel: trace\n",
            E + "logLevel: 'trace' is not one of debug, info, warning, error",
            id="log_level",
        ),
        pytest.param(
            "shutdownGracePeriod: 10\n",
            E + "shutdownGracePeriod: expected a string, got an integer",
            id="grace_type",
        ),
        pytest.param(
            "shutdownGracePeriod: ten seconds\n",
            E + "shutdownGracePeriod: invalid duration 'ten seconds'",
            id="grace",
        ),
        pytest.param(
            "nodeName: Worker_1\n",
            E + "nodeName: 'Worker_1' is not a valid node name",
            id="node_name",
        ),
        pytest.param(
            "nodeName: -a.b\n", E + "nodeName: '-a.b' is not a valid node name", id="node_name_dash"
        ),
        pytest.param("nodeName: 7\n", E + "nodeName: expected a string, got an integer", id="node_name_type"),
        pytest.param("devices: {}\n", E + "devices: expected a list, got a mapping", id="devices_type"),
        pytest.param(
            "devices: [{devices: [{id: a}]}]\n",
            E + "devices[0].resourceName: required",
            id="resource_missing",
        ),
        pytest.param(
            "devices: [{resourceName: gpu, devices: [{id: a}]}]\n",
            E + "devices[0].resourceName: 'gpu' is not an extended resource name",
            id="resource_unqualified",
        ),
        pytest.param(
            "devices: [{resourceName: kubernetes.io/gpu, devices: [{id: a}]}]\n",
            E + "devices[0].resourceName: 'kubernetes.io/gpu' is not an extended resource name",
            id="resource_native",
        ),
        pytest.param(
            "devices:\n- {resourceName: a.io/x, devices: [{id: a}]}\n"
            "- {resourceName: a.io/x, devices: [{id: b}]}\n",
            E + "devices[1].resourceName: 'a.io/x' is already defined by devices[0]",
            id="resource_duplicate",
        ),
        pytest.param(
            "devices: [{resourceName: a.io/x}]\n",
            E + "devices[0]: give exactly one of devices (a static list) or pciSelector",
            id="neither",
        ),
        pytest.param(
            "devices: [{resourceName: a.io/x, devices: [{id: a}], pciSelector: {vendors: ['8086']}}]\n",
            E + "devices[0]: give exactly one of devices (a static list) or pciSelector",
            id="both",
        ),
        pytest.param(
            "devices: [{resourceName: a.io/x, devices: []}]\n",
            E + "devices[0].devices: a static list needs at least one device",
            id="empty_list",
        ),
        pytest.param(
            "devices: [{resourceName: a.io/x, devices: [{id: a}, {id: a}]}]\n",
            E + "devices[0].devices[1].id: duplicate device id 'a'",
            id="duplicate_id",
        ),
        pytest.param(
            "devices: [{resourceName: a.io/x, devices: [{numaNodes: [0]}]}]\n",
            E + "devices[0].devices[0].id: required",
            id="id_missing",
        ),
        pytest.param(
            "devices: [{resourceName: a.io/x, devices: [{id: a, numaNodes: [-1]}]}]\n",
            E + "devices[0].devices[0].numaNodes[0]: NUMA node ids are non-negative, got -1",
            id="numa_negative",
        ),
        pytest.param(
            "devices: [{resourceName: a.io/x, devices: [{id: a, numa: [0]}]}]\n",
            E + "devices[0].devices[0].numa: unknown field: expected one of id, numaNodes",
            id="device_unknown_field",
        ),
    ],
)
def test_validation(body: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        emulator(body)
    assert str(err.value).startswith(message)
