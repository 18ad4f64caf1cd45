"""The kubelet's start-up checks of ``topologyManagerPolicyOptions`` per version (issue 26), through the real
daemon (``kubeletemu serve --kubelet-version V``) and ``kubeletemu would-admit --kubelet-version V``.

Read at v1.33.13 / v1.34.9 / v1.35.6 / v1.36.3 (openshift/microshift release-4.20 @ 78a3953430, release-4.21
@ 473c3de15d, release-4.22 @ 5019821e0e, release-4.23 @ ab25d11482, ``deps/github.com/openshift/kubernetes``):

* ``cmd/kubelet/app/server.go`` ``run``: options given (a non-nil map) while ``TopologyManagerPolicyOptions``
  is off: ``topology manager policy options %v require feature gates %q enabled``, before the container
  manager, whatever the policy; ``%v`` of a ``map[string]string`` is ``map[k:v ...]`` with the keys sorted.
  From 1.36 the gate is locked on and turning it off is refused first.
* ``pkg/kubelet/cm/topologymanager/policy_options.go``: only ``prefer-closest-numa-nodes`` and
  ``max-allowable-numa-nodes`` exist; anything else is ``unknown Topology Manager Policy option: %q``. The
  KEP-6007 options are known at ``master`` only (the emulator's what-if of the KEP's target).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hostprobe.sample import write_sample_tree
from kubeletemu.topologymanager.policy_options import (
    KEP_6007_OPTIONS,
    NUMA_ALLOCATION_STRATEGY,
    NUMA_SCORE_WEIGHTS,
    PREFER_MOST_ALLOCATED_NUMA_NODE,
    option_levels,
)
from kubeletemu.versions import SUPPORTED
from kubeletemu.versions.behaviours import in_effect
from tests.daemon.daemon_process import REPO, DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

GATE_SETTABLE = ("1.33", "1.34", "1.35")  # GA and on by default, but not yet locked
GATE_LOCKED = ("1.36", "1.37", "master")
RELEASED = ("1.33", "1.34", "1.35", "1.36")
OFF = "featureGates: {TopologyManagerPolicyOptions: false}\n"
ALPHA_ON = "featureGates: {TopologyManagerPolicyAlphaOptions: true}\n"
POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, uid: uid-p}\n"
    'spec: {containers: [{name: c, resources: {limits: {cpu: "2", memory: 1Gi}}}]}\n'
)


def config(policy: str, extra: str) -> str:
    return (
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        f"topologyManagerPolicy: {policy}\ncpuManagerPolicy: static\n"
        'kubeReserved: {cpu: "1", memory: 512Mi}\n' + extra
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    sys_root, proc_root = write_sample_tree(tmp_path_factory.mktemp("sample"))
    return Path(sys_root), Path(proc_root)


@pytest.fixture
def daemons(tmp_path: Path, tree: tuple[Path, Path]) -> Iterator[list[DaemonProcess]]:
    started: list[DaemonProcess] = []
    yield started
    for daemon in started:
        daemon.stop()


def serve_refused(tmp_path: Path, tree: tuple[Path, Path], text: str, version: str) -> str:
    """``kubeletemu serve --kubelet-version version`` on ``text``: it must stop with exit status 2 and
    one line on stderr, serving nothing; that line is returned."""
    daemon = DaemonProcess.in_dir(tmp_path, text, tree, ["--kubelet-version", version])
    out = subprocess.run(
        daemon.argv(), capture_output=True, text=True, env=daemon.env(), timeout=60, check=False
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("kubeletemu: "), out.stderr
    assert not daemon.socket.exists()
    return out.stderr.removeprefix("kubeletemu: ").rstrip("\n")


def would_admit(daemon: DaemonProcess, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pod.yaml").write_text(POD)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("KUBELETEMU_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "would-admit", "-f", str(tmp_path / "pod.yaml"),
         "--socket", str(daemon.socket), "-o", "json", *args],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip


# ---- item 3: options with the TopologyManagerPolicyOptions gate off ----------------------------------


@pytest.mark.parametrize("version", GATE_SETTABLE)
@pytest.mark.parametrize("policy", ["none", "single-numa-node"])
def test_options_with_the_gate_off_stop_the_kubelet(
    tmp_path: Path, tree: tuple[Path, Path], version: str, policy: str
) -> None:
    # Listed out of order: Go's fmt prints the map with its keys sorted. Policy none too: the check
    # comes before the Topology Manager (which would ignore the options under none).
    options = (
        'topologyManagerPolicyOptions: {prefer-closest-numa-nodes: "true", max-allowable-numa-nodes: "8"}\n'
    )
    line = serve_refused(tmp_path, tree, config(policy, options + OFF), version)
    assert line == (
        f"{tmp_path / 'config.yaml'}: topologyManagerPolicyOptions: topology manager policy options "
        "map[max-allowable-numa-nodes:8 prefer-closest-numa-nodes:true] require feature gates "
        f'"TopologyManagerPolicyOptions" enabled (kubeletVersion {version})'
    )


def test_an_empty_options_map_is_given_too(tmp_path: Path, tree: tuple[Path, Path]) -> None:
    """``{}`` decodes to a non-nil empty map, which the kubelet prints as ``map[]``."""
    line = serve_refused(tmp_path, tree, config("none", "topologyManagerPolicyOptions: {}\n" + OFF), "1.34")
    assert line.endswith(
        'topology manager policy options map[] require feature gates "TopologyManagerPolicyOptions" enabled '
        "(kubeletVersion 1.34)"
    )


@pytest.mark.parametrize("version", GATE_LOCKED)
def test_from_1_36_the_locked_gate_is_refused_first(
    tmp_path: Path, tree: tuple[Path, Path], version: str
) -> None:
    options = 'topologyManagerPolicyOptions: {prefer-closest-numa-nodes: "true"}\n'
    line = serve_refused(tmp_path, tree, config("none", options + OFF), version)
    assert line == (
        f"{tmp_path / 'config.yaml'}: featureGates: cannot set feature gate TopologyManagerPolicyOptions to "
        f"false, feature is locked to true (kubeletVersion {version})"
    )


@pytest.mark.slow
def test_gate_off_without_options_starts_and_what_if_options_are_refused(
    tmp_path: Path, tree: tuple[Path, Path], daemons: list[DaemonProcess]
) -> None:
    """``null`` is a nil map: the 1.35 kubelet starts. A what-if adding options asks a kubelet that
    would not start; the same what-if at 1.36 (gate locked) is refused for the gate itself."""
    text = config("single-numa-node", "topologyManagerPolicyOptions: null\n" + OFF)
    daemon = DaemonProcess.in_dir(tmp_path, text, tree, ["--kubelet-version", "1.35"]).start()
    daemons.append(daemon)
    plain = would_admit(daemon, tmp_path)
    assert plain.returncode == 0, plain.stderr
    what_if = would_admit(daemon, tmp_path, "--policy-option", "prefer-closest-numa-nodes=true")
    assert what_if.returncode == 2
    assert what_if.stderr.count("\n") == 1
    assert what_if.stderr.endswith(
        "topology manager policy options map[prefer-closest-numa-nodes:true] require feature gates "
        '"TopologyManagerPolicyOptions" enabled\n'
    ), what_if.stderr
    upgrade = would_admit(daemon, tmp_path, "--kubelet-version", "1.36")
    assert upgrade.returncode == 2
    assert "cannot set feature gate TopologyManagerPolicyOptions to false, feature is locked to true" in (
        upgrade.stderr
    )


def test_options_with_the_gate_on_start(
    tmp_path: Path, tree: tuple[Path, Path], daemons: list[DaemonProcess]
) -> None:
    """The other side: the same options with the gate at its default (on) start the 1.35 kubelet."""
    options = (
        'topologyManagerPolicyOptions: {prefer-closest-numa-nodes: "true", max-allowable-numa-nodes: "8"}\n'
    )
    text = config("single-numa-node", options)
    daemon = DaemonProcess.in_dir(tmp_path, text, tree, ["--kubelet-version", "1.35"]).start()
    daemons.append(daemon)
    assert would_admit(daemon, tmp_path).returncode == 0


# ---- item 4: the KEP-6007 options before master ----------------------------------------------------


def test_kep6007_options_exist_at_master_only() -> None:
    for version in SUPPORTED:
        levels = option_levels(version)
        known = [name for name in KEP_6007_OPTIONS if name in levels]
        assert known == (list(KEP_6007_OPTIONS) if version == "master" else []), version
        assert in_effect("topologymanager.kep6007-options", version) == (version == "master")


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASED)
@pytest.mark.parametrize(
    "option", [f"{NUMA_ALLOCATION_STRATEGY}: most-allocated", f'{PREFER_MOST_ALLOCATED_NUMA_NODE}: "true"']
)
def test_released_kubelets_refuse_kep6007_options_as_unknown(
    tmp_path: Path, tree: tuple[Path, Path], version: str, option: str
) -> None:
    text = config("single-numa-node", f"topologyManagerPolicyOptions: {{{option}}}\n" + ALPHA_ON)
    name = option.split(":")[0]
    assert serve_refused(tmp_path, tree, text, version) == (
        f"{tmp_path / 'config.yaml'}: topologyManagerPolicyOptions: unknown Topology Manager Policy "
        f'option: "{name}" (kubeletVersion {version})'
    )


def test_the_first_option_listed_is_the_one_reported(tmp_path: Path, tree: tuple[Path, Path]) -> None:
    """The kubelet ranges over its map in random order; the emulator reports the first one listed."""
    text = config(
        "single-numa-node",
        f'topologyManagerPolicyOptions: {{{NUMA_SCORE_WEIGHTS}: "cpu=2", {NUMA_ALLOCATION_STRATEGY}: '
        "least-allocated}\n" + ALPHA_ON,
    )
    assert serve_refused(tmp_path, tree, text, "1.36").endswith(
        f'unknown Topology Manager Policy option: "{NUMA_SCORE_WEIGHTS}" (kubeletVersion 1.36)'
    )


@pytest.mark.slow
def test_master_runs_the_strategy_and_an_older_kubelet_refuses_it(
    tmp_path: Path, tree: tuple[Path, Path], daemons: list[DaemonProcess]
) -> None:
    """The what-if "my node with KEP-6007" is master; asking the same node as 1.36 is refused."""
    options = f"topologyManagerPolicyOptions: {{{NUMA_ALLOCATION_STRATEGY}: most-allocated}}\n"
    text = config("single-numa-node", options + ALPHA_ON)
    daemon = DaemonProcess.in_dir(tmp_path, text, tree, ["--kubelet-version", "master"]).start()
    daemons.append(daemon)
    assert would_admit(daemon, tmp_path).returncode == 0
    older = would_admit(daemon, tmp_path, "--kubelet-version", "1.36")
    assert older.returncode == 2
    assert older.stderr.count("\n") == 1
    assert older.stderr.endswith(
        f'kubeletVersion 1.36: unknown Topology Manager Policy option: "{NUMA_ALLOCATION_STRATEGY}"\n'
    ), older.stderr
