"""``kubeletemu extender`` as the CLI starts it, for the tests and benchmarks that run it beside a real
cluster: its configuration (mutual TLS with the control plane's certificates, one feed of agents) and the
process, on a port of its own that survives a restart (the scheduler's configuration names it)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.daemon.daemon_process import ignores_sigpipe
from tests.e2e.test_control_plane import _wait_for
from tests.e2e.test_extender import OPT_IN, docs_scheduler_extender
from tests.upstream import schedulers
from tests.upstream.certs import Credentials
from tests.upstream.controlplane import ControlPlane


def scheduler_config_with_extender(
    plane: ControlPlane, port: int, profile: str, *, managed: bool = True
) -> Path:
    """A kube-scheduler configuration file: ``profile`` with docs/extender.md's extenders entry pointed at
    the extender on ``127.0.0.1:port`` (the control plane's admin certificate as the scheduler's client
    one); ``managed=False`` drops ``managedResources``, so the scheduler asks about every pod."""
    entry = docs_scheduler_extender()
    if not managed:
        entry.pop("managedResources", None)
    entry["urlPrefix"] = f"https://127.0.0.1:{port}/kubeletemu"
    creds = plane.creds
    entry["tlsConfig"] = {"caFile": str(creds.ca_cert), "certFile": str(creds.admin_cert),
                          "keyFile": str(creds.admin_key)}  # fmt: skip
    config = schedulers.default_config(plane.kubeconfig, profile)
    config["extenders"] = [entry]
    path: Path = schedulers.write(config, plane.workdir / f"{profile}-{port}.config.json")
    return path


def extender_config(
    port: int, serving: Credentials, feed_port: int, feed_pki: Credentials, extra: str = ""
) -> str:
    """Serving on ``127.0.0.1:port`` with ``serving``'s certificate, clients checked against its CA (the
    scheduler's client certificate is the control plane's admin one); mirroring the agent at ``feed_port``
    with ``feed_pki``'s admin certificate; ``extra``: more top-level fields (YAML lines)."""
    return extra + (
        f"apiVersion: kubeletemu.io/v1alpha1\nkind: Extender\nlisten: 127.0.0.1:{port}\n"
        "pathPrefix: /kubeletemu\n"
        f"tls: {{certFile: {serving.serving_cert}, keyFile: {serving.serving_key}, "
        f"clientCAFile: {serving.ca_cert}}}\n"
        f"optInResources: [{OPT_IN}]\n"
        f"feeds:\n- agents: [127.0.0.1:{feed_port}]\n"
        f"  tls: {{caFile: {feed_pki.ca_cert}, certFile: {feed_pki.admin_cert}, "
        f"keyFile: {feed_pki.admin_key}}}\n"
    )


class ExtenderProcess:
    """``kubeletemu extender`` as the CLI starts it, on a port of its own that survives a restart (the
    scheduler's configuration names it)."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config, self.log = config, log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> ExtenderProcess:
        with open(self.log, "ab") as err:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "kubeletemu", "extender", "--config", str(self.config), "--announce"],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        serving = len(re.findall(r"serving https://", self.log.read_text()))
        _wait_for("the extender serving", lambda: self._serving(serving))
        assert self.popen is not None and ignores_sigpipe(self.popen.pid)
        return self

    def _serving(self, before: int) -> bool | None:
        assert self.popen is not None
        if self.popen.poll() is not None:
            code = self.popen.returncode
            raise AssertionError(f"kubeletemu extender exited {code}: {self.log.read_text()}")
        return True if len(re.findall(r"serving https://", self.log.read_text())) > before else None

    def kill(self) -> None:
        assert self.popen is not None
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(30)

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            assert self.popen.wait(30) == 0, self.log.read_text()
