"""Runs the real daemon (``python -m kubeletemu.cli serve --shadow``) beside a fake kubelet."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import grpc

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc
from tests.daemon.daemon_process import wait_serving
from tests.shadow.kubelet_double import SHADOW_OWN_CONFIG, FakeKubelet

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class ShadowDaemon:
    kubelet: FakeKubelet
    workdir: Path  # our sockets, log and configuration (keep it short: unix socket paths)
    refresh_period: str = "1h"
    # A command that runs the daemon with other credentials (setpriv ... --).
    wrapper: Sequence[str] = ()
    metrics_port: int | None = None
    extra_args: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.workdir / "k.sock"

    @property
    def podresources_socket(self) -> Path:
        return self.workdir / "pr.sock"

    @property
    def log(self) -> Path:
        return self.workdir / "daemon.log"

    def args(self) -> list[str]:
        config = self.workdir / "own.yaml"
        config.write_text(SHADOW_OWN_CONFIG)
        args = [
            sys.executable,
            "-m",
            "kubeletemu.cli",
            "serve",
            "--shadow",
            "--config",
            str(config),
            "--socket",
            str(self.socket),
            "--podresources-socket",
            str(self.podresources_socket),
            "--sysfs-root",
            str(self.kubelet.sys_root),
            "--procfs-root",
            str(self.kubelet.proc_root),
            "--kubelet-root-dir",
            str(self.kubelet.root),
            "--shadow-refresh-period",
            self.refresh_period,
            *self.extra_args,
        ]
        if self.metrics_port is not None:
            args += ["--metrics-address", f"127.0.0.1:{self.metrics_port}"]
        return args

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
        env["PYTHONPATH"] = str(REPO)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        with open(self.log, "ab") as log:
            return subprocess.Popen(
                [*self.wrapper, *self.args()], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir
            )

    def start(self, timeout: float = 20.0) -> ShadowDaemon:
        self.process = self._spawn()
        wait_serving(self.process, self.socket, self.log, timeout)
        return self

    def run_to_failure(self, timeout: float = 20.0) -> tuple[int, str]:
        """Start a daemon that is expected to refuse to start: its exit status and output."""
        process = self._spawn()
        code = process.wait(timeout)
        return code, self.log.read_text()

    def stub(self) -> admission_pb2_grpc.AdmissionStub:
        return admission_pb2_grpc.AdmissionStub(grpc.insecure_channel(f"unix:{self.socket}"))

    def podresources_channel(self) -> grpc.Channel:
        return grpc.insecure_channel(
            f"unix:{self.podresources_socket}", options=[("grpc.max_receive_message_length", 16 << 20)]
        )

    def report(self) -> pb.ShadowReport:
        reply: pb.ShadowReport = self.stub().GetShadowReport(pb.GetShadowReportRequest(), timeout=10)
        return reply

    def stop(self, timeout: float = 15.0) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


def wait_for(probe: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.05) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {value!r})")
        time.sleep(interval)
