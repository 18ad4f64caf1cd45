"""Fixtures: a fake kubelet (root directory + podresources answers) and the mirror built from it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import hostprobe
from hostprobe.synthetic import write_tree
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.config import Config, parse_config
from kubeletemu.machine import Machine
from kubeletemu.shadow import KubeletPaths, Mirror, build_mirror, take_snapshot
from tests.shadow.kubelet_double import HOST, PODS, SHADOW_OWN_CONFIG, FakeKubelet


class DirectSource:
    """The fake kubelet's podresources answers without a socket (the in-process tests)."""

    def __init__(self, kubelet: FakeKubelet) -> None:
        self.kubelet = kubelet
        self.calls = 0

    def list(self) -> v1.ListPodResourcesResponse:
        self.calls += 1
        return self.kubelet.listing

    def allocatable(self) -> v1.AllocatableResourcesResponse:
        return self.kubelet.allocatable


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes; other users (unprivileged daemons) may enter it.
    directory = Path(tempfile.mkdtemp(prefix="sh-", dir="/tmp"))
    os.chmod(directory, 0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def host(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The synthetic host every fake kubelet runs on (written once: it takes most of a fixture's time)."""
    base = tmp_path_factory.mktemp("shadow-host")
    os.chmod(base, 0o755)
    return write_tree(base, HOST)


@pytest.fixture
def kubelet(short_dir: Path, host: tuple[Path, Path]) -> FakeKubelet:
    """A kubelet with the node of ``PODS`` admitted."""
    fake = FakeKubelet(short_dir, host=host)
    fake.admit(PODS)
    return fake


@pytest.fixture
def empty_kubelet(short_dir: Path, host: tuple[Path, Path]) -> FakeKubelet:
    return FakeKubelet(short_dir, host=host)


def own_config() -> Config:
    return parse_config(SHADOW_OWN_CONFIG, "own.yaml")


def machine_of(kubelet: FakeKubelet) -> Machine:
    return Machine.from_host(hostprobe.probe(str(kubelet.sys_root), str(kubelet.proc_root)))


def mirror_of(kubelet: FakeKubelet) -> Mirror:
    snapshot = take_snapshot(KubeletPaths.resolve(kubelet.root), DirectSource(kubelet))
    return build_mirror(own_config(), machine_of(kubelet), snapshot)
