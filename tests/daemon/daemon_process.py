"""Runs the real daemon (``python -m kubeletemu.cli serve``) on a temporary unix socket."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc

REPO = Path(__file__).resolve().parents[2]


@dataclass
class DaemonProcess:
    config: Path
    state_dir: Path
    socket: Path
    sysfs_root: Path
    procfs_root: Path
    log: Path
    extra_args: list[str] = field(default_factory=list)
    # None: "pr.sock" beside the admission socket (unix socket paths must stay short).
    podresources_socket: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        if self.podresources_socket is None:
            self.podresources_socket = self.socket.parent / "pr.sock"

    @classmethod
    def in_dir(
        cls, directory: Path, config_text: str, tree: tuple[Path, Path], extra_args: Sequence[str] = ()
    ) -> DaemonProcess:
        """A daemon (not started) on the sysfs and procfs roots ``tree`` whose files are in ``directory``:
        ``config.yaml`` (``config_text``), ``state``, ``k.sock`` and ``daemon.log``. Unix socket paths
        are limited to 107 bytes: keep ``directory`` short."""
        config = directory / "config.yaml"
        config.write_text(config_text)
        return cls(
            config=config,
            state_dir=directory / "state",
            socket=directory / "k.sock",
            sysfs_root=tree[0],
            procfs_root=tree[1],
            log=directory / "daemon.log",
            extra_args=list(extra_args),
        )

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "kubeletemu.cli",
            "serve",
            "--config",
            str(self.config),
            "--socket",
            str(self.socket),
            "--podresources-socket",
            str(self.podresources_socket),
            "--state-dir",
            str(self.state_dir),
            "--sysfs-root",
            str(self.sysfs_root),
            "--procfs-root",
            str(self.procfs_root),
            *self.extra_args,
        ]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
        env["PYTHONPATH"] = str(REPO)
        return env

    def start(self, timeout: float = 15.0) -> DaemonProcess:
        args, env = self.argv(), self.env()
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.wait_serving(timeout)
        assert ignores_sigpipe(self.process.pid), "a client gone mid-write would kill the daemon (SIGPIPE)"
        return self

    def wait_serving(self, timeout: float) -> None:
        assert self.process is not None
        wait_serving(self.process, self.socket, self.log, timeout)

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(f"unix:{self.socket}")

    def podresources_channel(self, max_receive: int = 16 * 1024 * 1024) -> grpc.Channel:
        """A channel as kubelet clients open it: 16 MiB receive limit."""
        return grpc.insecure_channel(
            f"unix:{self.podresources_socket}", options=[("grpc.max_receive_message_length", max_receive)]
        )

    def stub(self) -> admission_pb2_grpc.AdmissionStub:
        return admission_pb2_grpc.AdmissionStub(self.channel())

    def send(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(sig)
        return self.process.wait(timeout)


def wait_serving(process: subprocess.Popen[bytes], socket: Path, log: Path, timeout: float) -> None:
    """Until the daemon's health check answers SERVING; its log in the error when it exits or stalls."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daemon exited with {process.returncode}:\n{log.read_text()}")
        if socket.exists():
            try:
                with grpc.insecure_channel(f"unix:{socket}") as channel:
                    reply = health_pb2_grpc.HealthStub(channel).Check(
                        health_pb2.HealthCheckRequest(), timeout=1
                    )
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
        time.sleep(0.05)
    raise RuntimeError(f"daemon not serving after {timeout}s:\n{log.read_text()}")


def ignores_sigpipe(pid: int) -> bool:
    """Whether the live process ``pid`` ignores SIGPIPE (its ``SigIgn`` mask in ``/proc/<pid>/status``): a
    server must, or a peer that closes its connection mid-write ends it (killed by signal 13)."""
    status = Path(f"/proc/{pid}/status").read_text()
    [mask] = [line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")]
    return bool(int(mask, 16) >> (signal.SIGPIPE - 1) & 1)
