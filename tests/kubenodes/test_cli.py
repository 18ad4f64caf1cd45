"""``kubeletemu nodes`` refusing to start, as a user meets it: one line on standard error and a non-zero
exit, before any node is built. (With a control plane, tests/e2e/test_nodes.py.)"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kubeletemu.daemon.state_lock import StateDirLock
from tests.kubenodes.test_spec import NODES, write

pytestmark = pytest.mark.slow  # starts processes

KUBELETEMU = [sys.executable, "-m", "kubeletemu.cli"]


def nodes(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBELETEMU, "nodes", "--state-dir", str(tmp_path / "state"), *args],
        capture_output=True, text=True, check=False, timeout=120, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def kubeconfig(tmp_path: Path, server: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def one_line(result: subprocess.CompletedProcess[str], status: int, *parts: str) -> None:
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kubeletemu: "), result.stderr
    assert result.returncode == status
    for part in parts:
        assert part in lines[0], lines[0]


def test_no_server_listening(tmp_path: Path) -> None:
    server = f"https://127.0.0.1:{closed_port()}"
    result = nodes(
        tmp_path, "-f", str(write(tmp_path, NODES)), "--kubeconfig", str(kubeconfig(tmp_path, server))
    )
    one_line(result, 3, "cannot reach the API server", server, "Connection refused")


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), ("clusters: [", "not YAML"), ("{}", "no 'clusters' entry")],
)
def test_a_kubeconfig_that_is_no_kubeconfig(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    result = nodes(tmp_path, "-f", str(write(tmp_path, NODES)), "--kubeconfig", str(path))
    one_line(result, 2, f"--kubeconfig: {path}", message)


def test_a_bad_nodes_file(tmp_path: Path) -> None:
    result = nodes(
        tmp_path, "-f", str(write(tmp_path, NODES.replace("count: 3", "count: 0"))), "--kubeconfig", "x"
    )
    one_line(result, 2, "nodeGroups[0].count: must be at least 1")


def test_a_state_directory_in_use(tmp_path: Path) -> None:
    lock = StateDirLock(tmp_path / "state")
    lock.acquire("pid 1, another kubeletemu nodes")
    try:
        server = f"https://127.0.0.1:{closed_port()}"
        config = kubeconfig(tmp_path, server)
        result = nodes(tmp_path, "-f", str(write(tmp_path, NODES)), "--kubeconfig", str(config))
        one_line(result, 2, "--state-dir:", "another kubeletemu nodes")
    finally:
        lock.release()
