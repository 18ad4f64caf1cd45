"""Shadow settings of the EmulatorConfiguration, and the configuration a mirror runs with."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.config import ConfigError, DeviceResource, EmulatorConfiguration, StaticDevice, parse_config
from kubeletemu.shadow import KubeletPaths, SourceInvalidError
from kubeletemu.shadow.config import devices_from_allocatable, parse_kubelet_config

HEAD = "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n"


def test_defaults() -> None:
    emulator = parse_config(HEAD).emulator
    assert (emulator.shadow, emulator.kubelet_config, emulator.kubelet_pod_resources_socket) == (
        False,
        None,
        None,
    )
    assert emulator.shadow_refresh_period == 10.0
    assert emulator == EmulatorConfiguration()


def test_settings() -> None:
    emulator = parse_config(
        HEAD + "shadow: true\nkubeletRootDir: /srv/kubelet\nkubeletConfig: /etc/kubernetes/kubelet.yaml\n"
        "kubeletPodResourcesSocket: /run/pr.sock\nshadowRefreshPeriod: 1m30s\n"
    ).emulator
    assert emulator.shadow is True
    assert emulator.kubelet_root_dir == "/srv/kubelet"
    assert emulator.kubelet_config == "/etc/kubernetes/kubelet.yaml"
    assert emulator.kubelet_pod_resources_socket == "/run/pr.sock"
    assert emulator.shadow_refresh_period == 90.0
    empty = parse_config(HEAD + 'kubeletConfig: ""\nkubeletPodResourcesSocket: ""\nshadowRefreshPeriod: 0s\n')
    assert (empty.emulator.kubelet_config, empty.emulator.kubelet_pod_resources_socket) == (None, None)
    assert empty.emulator.shadow_refresh_period == 0.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("shadow: yes please\n", "c.yaml: shadow: expected true or false, got a string"),
        ("shadowRefreshPeriod: 10\n", "c.yaml: shadowRefreshPeriod: expected a string, got an integer"),
        ("shadowRefreshPeriod: soon\n", "c.yaml: shadowRefreshPeriod: invalid duration 'soon'"),
        ("kubeletConfig: [a]\n", "c.yaml: kubeletConfig: expected a string, got a list"),
        ("shadowMode: true\n", "c.yaml: shadowMode: unknown field"),
    ],
)
def test_validation(body: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(HEAD + body, "c.yaml")
    assert str(err.value).startswith(message)


def test_the_kubelets_file(tmp_path: Path) -> None:
    paths = KubeletPaths.resolve(tmp_path)
    kubelet = parse_kubelet_config(
        paths,
        b"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n"
        b"cpuManagerPolicy: static\nreservedSystemCPUs: '0'\n",
    )
    assert kubelet.cpu_manager_policy == "static"
    with pytest.raises(SourceInvalidError, match=r"config.yaml: holds no KubeletConfiguration"):
        parse_kubelet_config(paths, HEAD.encode())
    with pytest.raises(SourceInvalidError, match=r"config.yaml: invalid YAML"):
        parse_kubelet_config(paths, b"kind: [")
    with pytest.raises(SourceInvalidError, match=r"config.yaml: not UTF-8 text"):
        parse_kubelet_config(paths, b"\xff\xfe")
    with pytest.raises(SourceInvalidError, match=r"config.yaml: cpuManagerPolicy"):
        parse_kubelet_config(
            paths,
            b"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: 3\n",
        )


def test_devices_from_allocatable() -> None:
    def entry(resource: str, device: str, *nodes: int) -> v1.ContainerDevices:
        msg = v1.ContainerDevices(resource_name=resource, device_ids=[device])
        if nodes:
            msg.topology.nodes.extend(v1.NUMANode(ID=n) for n in nodes)
        return msg

    allocatable = v1.AllocatableResourcesResponse(
        devices=[
            entry("example.com/nic", "nic1", 1),
            entry("example.com/gpu", "gpu0", 0),
            entry("example.com/gpu", "gpu0", 1),
            entry("example.com/nic", "nic0", 0),
            entry("example.com/fpga", "fpga0"),
        ]
    )
    assert devices_from_allocatable(allocatable) == (
        DeviceResource("example.com/nic", (StaticDevice("nic1", (1,)), StaticDevice("nic0", (0,)))),
        DeviceResource("example.com/gpu", (StaticDevice("gpu0", (0, 1)),)),
        DeviceResource("example.com/fpga", (StaticDevice("fpga0", ()),)),
    )
