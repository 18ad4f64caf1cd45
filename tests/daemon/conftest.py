"""Fixtures that start the real daemon against the bundled sample topology (2 NUMA nodes, 16 CPUs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hostprobe.sample import write_sample_tree
from tests.daemon.daemon_process import DaemonProcess

# single-numa-node + static CPU and memory managers; 1 CPU and 512Mi kube-reserved; one device on node 1.
CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: {policy}
topologyManagerScope: {scope}
cpuManagerPolicy: static
memoryManagerPolicy: Static
kubeReserved: {{cpu: "1", memory: 512Mi}}
reservedMemory:
- numaNode: 0
  limits: {{memory: 612Mi}}
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
devices:
- resourceName: example.com/dev
  devices:
  - {{id: dev0, numaNodes: [1]}}
  - {{id: dev1, numaNodes: [1]}}
"""


def write_config(path: Path, policy: str = "single-numa-node", scope: str = "container") -> Path:
    path.write_text(CONFIG.format(policy=policy, scope=scope))
    return path


@pytest.fixture(scope="session")
def sample_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    sys_root, proc_root = write_sample_tree(tmp_path_factory.mktemp("sample"))
    return Path(sys_root), Path(proc_root)


@pytest.fixture
def make_daemon(tmp_path: Path, sample_tree: tuple[Path, Path]) -> Iterator[type[DaemonProcess]]:
    started: list[DaemonProcess] = []

    def factory(policy: str = "single-numa-node", scope: str = "container", **kw: object) -> DaemonProcess:
        config = write_config(tmp_path / "config.yaml", policy, scope)
        # Unix socket paths are limited to 107 bytes: keep the socket in a short directory.
        daemon = DaemonProcess(
            config=config,
            state_dir=tmp_path / "state",
            socket=tmp_path / "k.sock",
            sysfs_root=sample_tree[0],
            procfs_root=sample_tree[1],
            log=tmp_path / "daemon.log",
        )
        started.append(daemon)
        return daemon.start()

    yield factory  # type: ignore[misc]
    for daemon in started:
        daemon.stop()
