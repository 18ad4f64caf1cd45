"""A Kubernetes control plane on loopback for the e2e tests: etcd, kube-apiserver, and on demand
kube-scheduler and kube-controller-manager, each in its own process group, stopped with everything they
started. The layout follows envtest's (controller-runtime's pkg/internal/testing/controlplane): etcd on
free ports with a temporary data directory, then the API server pointed at it with credentials made for
this run, then a kubeconfig for clients.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.upstream import certs
from tests.upstream.build import Assets

SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"  # the kubernetes Service's ClusterIP: the range's first address
STARTUP_TIMEOUT = 120.0  # seconds; the API server's first start loads every API group (~10 s on an idle core)
STOP_TIMEOUT = 15.0


class StartupError(RuntimeError):
    """A component did not become healthy; the message ends with the tail of its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Process:
    """One component in a process group of its own, its output in ``log``."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int = 0  # its secure port (health and metrics), for the components that serve one

    @classmethod
    def start(cls, name: str, argv: Sequence[str | Path], log_dir: Path) -> Process:
        log = log_dir / f"{name}.log"
        with open(log, "wb") as out:
            popen = subprocess.Popen(
                [str(a) for a in argv],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return cls(name, popen, log)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM to the whole group, SIGKILL after STOP_TIMEOUT; reaps the leader."""
        if self.popen.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.popen.wait()
        self._signal(signal.SIGKILL)  # anything the leader left behind in its group

    def _signal(self, signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signum)


def _wait_healthy(process: Process, url: str, context: ssl.SSLContext | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise StartupError(f"{process.name} exited with {process.popen.returncode}:\n{process.tail()}")
        try:
            with urllib.request.urlopen(url, timeout=5, context=context) as response:
                body = response.read().decode(errors="replace")
                if response.status == 200:
                    return
                last = f"{response.status} {body}"
        except urllib.error.HTTPError as error:
            last = f"{error.code} {error.read().decode(errors='replace')[-500:]}"
        except (OSError, urllib.error.URLError) as error:
            last = str(error)
        time.sleep(0.25)
    raise StartupError(
        f"{process.name} not healthy at {url} after {timeout:.0f} s ({last}):\n{process.tail()}"
    )


def _insecure_context() -> ssl.SSLContext:
    """For the scheduler's and controller manager's /healthz: they serve it over a self-signed certificate
    of their own, and the path is in their --authorization-always-allow-paths."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def read_metrics(process: Process, timeout: float = 10.0) -> str:
    """A component's Prometheus text from its secure port (``/metrics`` must be in its
    ``--authorization-always-allow-paths``, as :data:`METRICS_OPEN` puts it)."""
    url = f"https://127.0.0.1:{process.port}/metrics"
    with urllib.request.urlopen(url, timeout=timeout, context=_insecure_context()) as response:
        text: str = response.read().decode()
        return text


# The flag that lets a scraper without credentials read a component's /metrics (and its health checks).
METRICS_OPEN = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"


@dataclass
class ControlPlane:
    """etcd and kube-apiserver running; ``kubeconfig`` reaches the API server as a cluster admin."""

    assets: Assets
    workdir: Path
    creds: certs.Credentials
    api_port: int
    kubeconfig: Path
    etcd_url: str = ""
    processes: list[Process] = field(default_factory=list)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @classmethod
    def start(cls, assets: Assets, *, timeout: float = STARTUP_TIMEOUT) -> ControlPlane:
        workdir = Path(tempfile.mkdtemp(prefix="kubeletemu-cp-"))
        creds = certs.generate(workdir, service_ip=SERVICE_IP)
        api_port = free_port()
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(_kubeconfig(f"https://127.0.0.1:{api_port}", creds))
        kubeconfig.chmod(0o600)
        plane = cls(assets, workdir, creds, api_port, kubeconfig)
        try:
            plane._start_etcd(timeout)
            plane._start_apiserver(timeout)
        except BaseException:
            plane.stop()
            raise
        return plane

    def _start_etcd(self, timeout: float) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        etcd = Process.start(
            "etcd",
            [
                self.assets.path("etcd"),
                "--name=default",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=default=http://127.0.0.1:{peer}",
                # A test cluster's data dies with it: no fsync (envtest's etcd does the same).
                "--unsafe-no-fsync=true",
            ],
            self.workdir,
        )
        self.processes.append(etcd)
        _wait_healthy(etcd, f"{self.etcd_url}/health", None, timeout)

    def _start_apiserver(self, timeout: float) -> None:
        c = self.creds
        apiserver = Process.start(
            "kube-apiserver",
            [
                self.assets.path("kube-apiserver"),
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                # The endpoint reconciler refuses a loopback address for the kubernetes Service's
                # endpoints ("may not be in the loopback range"), and nothing in the tests reaches the
                # API server through that Service.
                "--endpoint-reconciler-type=none",
                f"--secure-port={self.api_port}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={c.serving_cert}",
                f"--tls-private-key-file={c.serving_key}",
                f"--client-ca-file={c.ca_cert}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                f"--service-account-issuer=https://127.0.0.1:{self.api_port}",
                f"--service-account-key-file={c.service_account_pub}",
                f"--service-account-signing-key-file={c.service_account_key}",
                "--authorization-mode=Node,RBAC",
                "--allow-privileged=true",
            ],
            self.workdir,
        )
        self.processes.append(apiserver)
        _wait_healthy(apiserver, f"{self.server}/readyz", self.client_context(), timeout)

    def client_context(self) -> ssl.SSLContext:
        """TLS as the admin: the run's CA trusted, the admin certificate presented."""
        context = ssl.create_default_context(cafile=str(self.creds.ca_cert))
        context.load_cert_chain(str(self.creds.admin_cert), str(self.creds.admin_key))
        return context

    def start_scheduler(
        self,
        extra_args: Sequence[str] = (),
        *,
        binary: Path | None = None,
        name: str = "kube-scheduler",
        timeout: float = STARTUP_TIMEOUT,
    ) -> Process:
        """kube-scheduler (or a scheduler built on its framework, ``binary``) against this API server."""
        return self._start_component(name, binary or self.assets.path("kube-scheduler"), extra_args, timeout)

    def start_controller_manager(
        self, extra_args: Sequence[str] = (), *, timeout: float = STARTUP_TIMEOUT
    ) -> Process:
        c = self.creds
        args = [
            f"--service-account-private-key-file={c.service_account_key}",
            f"--root-ca-file={c.ca_cert}",
            f"--cluster-signing-cert-file={c.ca_cert}",
            f"--cluster-signing-key-file={c.ca_key}",
            *extra_args,
        ]
        return self._start_component(
            "kube-controller-manager", self.assets.path("kube-controller-manager"), args, timeout
        )

    def _start_component(self, name: str, binary: Path, extra_args: Sequence[str], timeout: float) -> Process:
        port = free_port()
        process = Process.start(
            name,
            [
                binary,
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.workdir / (name + '-certs')}",
                "--leader-elect=false",
                *extra_args,
            ],
            self.workdir,
        )
        process.port = port
        self.processes.append(process)
        try:
            _wait_healthy(process, f"https://127.0.0.1:{port}/healthz", _insecure_context(), timeout)
        except BaseException:
            self.stop_process(process)
            raise
        return process

    def stop_process(self, process: Process) -> None:
        process.stop()
        if process in self.processes:
            self.processes.remove(process)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.assets.path("kubectl")), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def namespace_with_account(self, namespace: str) -> None:
        """``namespace`` and its ``default`` service account (the ServiceAccount admission plugin wants the
        pods' account). Either may exist already: the controller manager's service-account controller,
        when a test of this worker started one, makes the account as soon as the namespace appears."""
        for args in (
            ("create", "namespace", namespace),
            ("-n", namespace, "create", "serviceaccount", "default"),
        ):
            result = self.kubectl(*args, check=False)
            if result.returncode != 0 and "already exists" not in result.stderr.lower():
                raise subprocess.CalledProcessError(result.returncode, args, result.stdout, result.stderr)

    def get_json(self, *args: str) -> dict[str, object]:
        result: dict[str, object] = json.loads(self.kubectl("get", "-o", "json", *args).stdout)
        return result

    def stop(self) -> None:
        """Stops every component, newest first (the API server before etcd), and removes the directory."""
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _kubeconfig(server: str, creds: certs.Credentials) -> str:
    # JSON is YAML: no YAML writer needed, and the file paths need no quoting rules.
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "e2e", "cluster": {"server": server, "certificate-authority": str(creds.ca_cert)}}
        ],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate": str(creds.admin_cert), "client-key": str(creds.admin_key)},
            }
        ],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
        "current-context": "e2e",
    }
    return json.dumps(config, indent=2) + "\n"
