"""Keeping the mirror current: rebuild on change, nothing when nothing changed, the previous mirror kept
(and the error reported) when a refresh fails, the period for pods that touch no checkpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.shadow import KubeletPaths, ShadowError, ShadowMetrics, ShadowRunner
from tests.shadow.conftest import DirectSource, machine_of, own_config
from tests.shadow.kubelet_double import FakeKubelet, write_like_kubelet

BESTEFFORT = """\
apiVersion: v1
kind: Pod
metadata: {name: late-comer, namespace: default, uid: 33333333-0000-0000-0000-000000000001}
spec:
  containers:
  - name: shell
"""


class Installed:
    def __init__(self) -> None:
        self.emulators: list[NodeEmulator] = []

    async def __call__(self, emulator: NodeEmulator) -> None:
        self.emulators.append(emulator)


def runner(kubelet: FakeKubelet, **kw: object) -> tuple[ShadowRunner, Installed, CollectorRegistry]:
    installed = Installed()
    registry = CollectorRegistry()
    made = ShadowRunner(
        own_config(),
        machine_of(kubelet),
        KubeletPaths.resolve(kubelet.root),
        DirectSource(kubelet),
        install=installed,
        metrics=ShadowMetrics(registry),
        **kw,  # type: ignore[arg-type]
    )
    return made, installed, registry


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    value: float | None = registry.get_sample_value(name, labels)
    return value


async def test_refresh_rebuilds_only_on_change(kubelet: FakeKubelet) -> None:
    shadow, installed, registry = runner(kubelet, refresh_period=0)
    first = shadow.initial()
    assert shadow.report.generation == 1
    assert sample(registry, "kubeletemu_shadow_pods", uid_source="checkpoint") == 4
    assert sample(registry, "kubeletemu_shadow_containers_checked") == 7

    assert await shadow.refresh("period")
    assert shadow.report.generation == 1 and installed.emulators == []
    assert sample(registry, "kubeletemu_shadow_refreshes_total", result="unchanged") == 1

    kubelet.tamper_cpus("11111111-0000-0000-0000-00000000000a", "c", [8, 9])
    assert await shadow.refresh("inotify")
    assert shadow.report.generation == 2 and shadow.report.trigger == "inotify"
    assert installed.emulators and installed.emulators[-1] is not first
    assert sample(registry, "kubeletemu_shadow_divergences", resource="cpus") == 1
    assert sample(registry, "kubeletemu_shadow_refreshes_total", result="rebuilt") == 2


async def test_a_failed_refresh_keeps_the_previous_mirror(kubelet: FakeKubelet) -> None:
    shadow, installed, registry = runner(kubelet, refresh_period=0)
    shadow.initial()
    state = kubelet.root / "memory_manager_state"
    good = state.read_bytes()
    write_like_kubelet(state, b"{not json")
    assert not await shadow.refresh("inotify")
    assert shadow.report.last_error.startswith(
        f"the kubelet's memory manager checkpoint {state} is not usable"
    )
    assert shadow.report.generation == 1
    assert installed.emulators == []
    assert sample(registry, "kubeletemu_shadow_refreshes_total", result="error") == 1
    write_like_kubelet(state, good)
    assert await shadow.refresh("inotify")
    # The files are as they were at the last rebuild: nothing to rebuild, and the error is gone.
    assert shadow.report.last_error == ""
    assert shadow.report.generation == 1


async def test_the_period_sees_pods_without_exclusive_resources(kubelet: FakeKubelet) -> None:
    """A BestEffort pod writes no checkpoint: no file event, only the periodic List shows it."""
    shadow, installed, _ = runner(kubelet, refresh_period=0.1)
    shadow.initial()
    await shadow.start()
    try:
        kubelet.admit(BESTEFFORT)
        for _ in range(100):
            if installed.emulators:
                break
            await asyncio.sleep(0.05)
        mirrored = [e.pod.name for e in installed.emulators[-1].registry]
        assert "late-comer" in mirrored
        assert shadow.report.trigger == "period"
    finally:
        await shadow.stop()


async def test_file_changes_trigger_a_refresh(kubelet: FakeKubelet) -> None:
    shadow, installed, _ = runner(kubelet, refresh_period=3600, debounce=0.05)
    shadow.initial()
    await shadow.start()
    try:
        assert shadow.report.watch_mode == "inotify"
        kubelet.tamper_cpus("11111111-0000-0000-0000-00000000000a", "c", [8, 9])
        for _ in range(100):
            if installed.emulators:
                break
            await asyncio.sleep(0.05)
        assert shadow.report.trigger == "inotify"
        assert len(shadow.report.divergences) == 1
    finally:
        await shadow.stop()


async def test_reconfigure(kubelet: FakeKubelet) -> None:
    shadow, installed, _ = runner(kubelet, refresh_period=0)
    shadow.initial()
    renamed = parse_config(
        "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\nnodeName: node-b\n", "own.yaml"
    )
    await shadow.reconfigure(renamed)
    assert shadow.own is renamed
    assert installed.emulators[-1].config.emulator.node_name == "node-b"
    assert shadow.report.trigger == "reload"
    with pytest.raises(ShadowError, match="devices: shadow mode takes the devices from the kubelet"):
        await shadow.reconfigure(
            parse_config(
                "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n"
                "devices: [{resourceName: example.com/x, devices: [{id: x0}]}]\n",
                "own.yaml",
            )
        )
    assert shadow.own is renamed


def test_own_settings_that_shadow_mode_would_ignore(kubelet: FakeKubelet, tmp_path: Path) -> None:
    with pytest.raises(ShadowError) as err:
        runner_with(
            kubelet, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 10\n"
        )
    assert str(err.value) == (
        f"own.yaml: shadow mode reads the kubelet's own configuration from {kubelet.root}/config.yaml; leave "
        "this KubeletConfiguration empty (apiVersion and kind only) or remove it"
    )
    # An empty one (as in the shipped config.yaml) is fine.
    runner_with(kubelet, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")


def runner_with(kubelet: FakeKubelet, text: str) -> ShadowRunner:
    async def install(emulator: NodeEmulator) -> None:
        return None

    return ShadowRunner(
        parse_config(text, "own.yaml"),
        machine_of(kubelet),
        KubeletPaths.resolve(kubelet.root),
        DirectSource(kubelet),
        install=install,
        refresh_period=0,
    )
