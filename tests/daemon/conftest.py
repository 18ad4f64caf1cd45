"""Fixtures that start the real daemon against the bundled sample topology (2 NUMA nodes, 16 CPUs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hostprobe.sample import write_sample_tree
from tests.daemon.daemon_process import DaemonProcess
from tests.nodes import kubelet_config

# Static CPU and memory managers; 1 CPU and 512Mi kube-reserved; two devices on node 1.
DEVICES = """\
devices:
- resourceName: example.com/dev
  devices:
  - {id: dev0, numaNodes: [1]}
  - {id: dev1, numaNodes: [1]}
"""


def sample_config(policy: str = "single-numa-node", scope: str = "container") -> str:
    return kubelet_config(policy, scope, emulator=DEVICES)


def write_config(path: Path, policy: str = "single-numa-node", scope: str = "container") -> Path:
    path.write_text(sample_config(policy, scope))
    return path


@pytest.fixture(scope="session")
def sample_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    sys_root, proc_root = write_sample_tree(tmp_path_factory.mktemp("sample"))
    return Path(sys_root), Path(proc_root)


@pytest.fixture
def make_daemon(tmp_path: Path, sample_tree: tuple[Path, Path]) -> Iterator[type[DaemonProcess]]:
    """``make_daemon(policy, scope)`` on :func:`sample_config`, or ``make_daemon(config_text=...)``."""
    started: list[DaemonProcess] = []

    def factory(
        policy: str = "single-numa-node", scope: str = "container", config_text: str | None = None
    ) -> DaemonProcess:
        text = sample_config(policy, scope) if config_text is None else config_text
        daemon = DaemonProcess.in_dir(tmp_path, text, sample_tree)
        started.append(daemon)
        return daemon.start()

    yield factory  # type: ignore[misc]
    for daemon in started:
        daemon.stop()


@pytest.fixture(scope="module")
def module_daemon(
    tmp_path_factory: pytest.TempPathFactory, sample_tree: tuple[Path, Path]
) -> Iterator[DaemonProcess]:
    """One daemon on :func:`sample_config` for a whole module: for tests whose calls change nothing on the
    node (refusals, what-ifs), where a daemon per test only costs its start-up."""
    daemon = DaemonProcess.in_dir(tmp_path_factory.mktemp("daemon"), sample_config(), sample_tree)
    yield daemon.start()
    daemon.stop()
