"""``kubeletVersion`` in the EmulatorConfiguration and ``--kubelet-version`` on ``serve`` (issue 16)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubeletemu.config import ConfigError, load_config, parse_config
from kubeletemu.daemon.server import ServeOptions, StartupError, resolve

REPO = Path(__file__).resolve().parents[2]
RANGE = "1.33, 1.34, 1.35, 1.36, 1.37, master"
KUBELET = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
EMULATOR = "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n"


def config_text(version: str | None = None, gates: str = "") -> str:
    kubelet = KUBELET + (f"featureGates:\n{gates}" if gates else "")
    emulator = EMULATOR + (f"kubeletVersion: {version}\n" if version is not None else "")
    return f"{kubelet}---\n{emulator}"


def test_default_is_master() -> None:
    assert parse_config(config_text()).emulator.kubelet_version == "master"


@pytest.mark.parametrize(
    ("written", "version"), [('"1.34"', "1.34"), ("1.34", "1.34"), ("v1.35.2", "1.35"), ("master", "master")]
)
def test_setting_read(written: str, version: str) -> None:
    assert parse_config(config_text(written)).emulator.kubelet_version == version


@pytest.mark.parametrize(
    ("written", "shown"), [('"1.29"', "'1.29'"), ("latest", "'latest'"), ("1.3", "'1.3'")]
)
def test_bad_setting_names_the_field_and_the_range(written: str, shown: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(config_text(written), "c.yaml")
    assert (
        str(err.value) == f"c.yaml (document 2): kubeletVersion: {shown} is not a supported version: {RANGE}"
    )


def test_feature_gates_checked_as_the_chosen_kubelet() -> None:
    # MemoryManager: locked on in 1.35, gone in 1.36.
    gates = "  MemoryManager: true\n"
    assert parse_config(config_text('"1.35"', gates)).kubelet.feature_gates == {"MemoryManager": True}
    with pytest.raises(ConfigError) as err:
        parse_config(config_text(None, gates), "c.yaml")
    assert str(err.value) == (
        "c.yaml (document 1): featureGates: unrecognized feature gate: MemoryManager (kubeletVersion master)"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(config_text('"1.35"', "  MemoryManager: false\n"), "c.yaml")
    assert str(err.value) == (
        "c.yaml (document 1): featureGates: cannot set feature gate MemoryManager to false, feature is "
        "locked to true (kubeletVersion 1.35)"
    )


def test_load_config_version_override_wins_and_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(config_text(None, "  MemoryManager: true\n"))
    assert load_config([str(path)], "1.35").emulator.kubelet_version == "1.35"
    with pytest.raises(ConfigError, match="unrecognized feature gate: MemoryManager"):
        load_config([str(path)])


def test_resolve_flag_wins_and_rechecks_the_gates() -> None:
    config = parse_config(config_text('"1.35"', "  MemoryManager: true\n"))
    assert resolve(ServeOptions(), config).config.emulator.kubelet_version == "1.35"
    assert resolve(ServeOptions(kubelet_version="1.34"), config).config.emulator.kubelet_version == "1.34"
    with pytest.raises(
        StartupError, match=r"unrecognized feature gate: MemoryManager \(kubeletVersion 1.36\)"
    ):
        resolve(ServeOptions(kubelet_version="1.36"), config)


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for name in ("KUBELETEMU_SOCKET", "KUBELETEMU_CONFIG"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "serve", "--socket", str(tmp_path / "s.sock"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_serve_refuses_a_bad_version_in_one_line(tmp_path: Path) -> None:
    out = serve(tmp_path, "--kubelet-version", "1.29")
    assert out.returncode == 2
    assert out.stderr == f'kubeletemu: --kubelet-version: kubeletVersion "1.29": supported: {RANGE}\n'
    assert not (tmp_path / "s.sock").exists()


def test_serve_refuses_gates_the_chosen_kubelet_refuses_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(config_text('"1.35"', "  MemoryManager: true\n"))
    out = serve(tmp_path, "--config", str(config), "--kubelet-version", "v1.36.1")
    assert out.returncode == 2
    assert out.stderr == (
        f"kubeletemu: {config} (document 1): featureGates: unrecognized feature gate: MemoryManager "
        "(kubeletVersion 1.36)\n"
    )


def test_simulation_feature_gates_checked_as_the_configured_kubelet() -> None:
    from kubeletemu.simulate.errors import SimulationError
    from kubeletemu.simulate.spec import parse_simulation

    text = (
        "apiVersion: kubeletemu.io/v1alpha1\nkind: Simulation\nmatrix: {policies: [best-effort]}\n"
        "featureGates: {Nope: true}\n"
    )
    with pytest.raises(SimulationError) as err:
        parse_simulation(text, "sim.yaml")
    assert str(err.value) == "sim.yaml: featureGates: unrecognized feature gate: Nope (kubeletVersion master)"
