"""Fixtures: short socket directories, and the real daemon on the general test host."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hostprobe.synthetic import write_tree
from tests.daemon.daemon_process import DaemonProcess
from tests.podresources.nodes import GENERAL_HOST, general_config

StartDaemon = Callable[..., DaemonProcess]


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="pr-", dir="/tmp") as directory:
        yield Path(directory)


@pytest.fixture(scope="session")
def general_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_tree(tmp_path_factory.mktemp("general-host"), GENERAL_HOST)


@pytest.fixture
def start_daemon(short_dir: Path, general_tree: tuple[Path, Path]) -> Iterator[StartDaemon]:
    """``start_daemon(config_text=...)``: the real ``kubeletemu serve`` on the general host."""
    started: list[DaemonProcess] = []

    def start(config_text: str | None = None) -> DaemonProcess:
        text = config_text or general_config(policy="single-numa-node")
        daemon = DaemonProcess.in_dir(short_dir, text, general_tree)
        started.append(daemon)
        return daemon.start()

    yield start
    for daemon in started:
        daemon.stop()
