"""A real kubelet, standalone, over a CRI that runs no containers: what the e2e tests compare kubeletemu with.

* ``fakecri`` (``tests/upstream/fakecri/``, a Go module of ours) serves the kubelet's fake remote runtime,
  ``k8s.io/cri-client/pkg/fake`` at v0.37.2 (``pkg/kubelet/cri/remote/fake`` of older trees), as both the
  runtime and the image service. It is built and cached as the exporters are.
* The kubelet runs in a mount namespace of its own (``unshare --mount``), so nothing it does to mounts
  reaches the host:

  - a tmpfs over ``/var/lib`` with the run's root directory bound at ``/var/lib/kubelet``: the kubelet
    writes some paths whatever ``--root-dir`` says (``/var/lib/kubelet/device-plugins``,
    ``/var/lib/kubelet/pki``), and bind-mounts its root directory onto itself (``MakeRShared``);
  - a file of ours over each sysctl the container manager sets (``setupKernelTunables`` in
    pkg/kubelet/cm/container_manager_linux.go: ``vm.overcommit_memory=1``, ``kernel.panic=10``,
    ``kernel.panic_on_oops=1``, ...), which are not namespaced and would otherwise change the host's.

  With ``cgroupsPerQOS: false`` and ``enforceNodeAllocatable: []`` it creates no cgroup (checked: the
  cgroup v1 hierarchies of the test VM hold nothing new after a run).
* It is stopped with its process group; the namespace and its mounts go with it.
"""

from __future__ import annotations

import json
import shutil
import ssl
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.upstream import build, exporters
from tests.upstream.controlplane import Process, StartupError, free_port
from tests.upstream.pins import UPSTREAM_DIR

FAKECRI = exporters.ExporterPin(
    "fakecri",
    UPSTREAM_DIR / "fakecri",
    "kubeletemu.test/upstream/fakecri",
    "v0.37.2",  # the k8s.io/cri-client release it serves
    ("-s", "-w"),
)
NODE_NAME = "realkubelet"
NO_SCHEDULE_TAINT = "kubeletemu.io/real-kubelet=:NoSchedule"
# The kernel tunables the kubelet's container manager sets (their /proc/sys paths).
KERNEL_TUNABLES = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
STARTUP_TIMEOUT = 60.0
ADMISSION_TIMEOUT = 30.0
# Run inside the new mount namespace, then replaced by the kubelet: $1 the run's directory, $2 the kubelet,
# the rest its arguments.
_NAMESPACE_SCRIPT = """set -e
run=$1; kubelet=$2; shift 2
mount -t tmpfs -o mode=0755 tmpfs /var/lib
mkdir /var/lib/kubelet
mount --bind "$run/root" /var/lib/kubelet
for tunable in {tunables}; do
  mount --bind "$run/sysctl/$(echo "$tunable" | tr / .)" "/proc/sys/$tunable"
done
exec "$kubelet" "$@"
"""


def ensure_fakecri(log: Callable[[str], None] = build._stderr) -> Path:
    return exporters.ensure_exporter(FAKECRI, log)


def kubelet_configuration(
    *, topology_policy: str, port: int, healthz_port: int, runtime_socket: Path, manifests: Path
) -> dict[str, Any]:
    """A KubeletConfiguration for this VM: static CPU manager with CPU 0 reserved (so one CPU of two is
    exclusive-able), static memory manager, the given Topology Manager policy; cgroup v1 allowed and no
    cgroups of ours; the HTTPS API on loopback, open to anonymous readers (the tests read ``/pods``)."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": False,
        "enforceNodeAllocatable": [],
        "failSwapOn": False,
        "localStorageCapacityIsolation": False,
        "address": "127.0.0.1",
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "containerRuntimeEndpoint": f"unix://{runtime_socket}",
        "imageServiceEndpoint": f"unix://{runtime_socket}",
        "staticPodPath": str(manifests),
        "fileCheckFrequency": "1s",
        "syncFrequency": "1s",
        "cpuManagerPolicy": "static",
        "reservedSystemCPUs": "0",
        "memoryManagerPolicy": "Static",
        "kubeReserved": {"memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
        # kubeReserved + evictionHard memory, as the memory manager's validation demands.
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
        "topologyManagerPolicy": topology_policy,
    }


@dataclass(frozen=True)
class KubeletPod:
    """A pod as the kubelet's ``/pods`` shows it."""

    name: str
    uid: str
    phase: str
    reason: str
    message: str


@dataclass
class StandaloneKubelet:
    """The real kubelet and its fake CRI, running; static pods come from ``manifests``."""

    workdir: Path
    config_file: Path
    port: int
    startup_seconds: float
    processes: list[Process] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.workdir / "root"

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    @property
    def log(self) -> Path:
        return self.workdir / "kubelet.log"

    @classmethod
    def start(
        cls, kubelet: Path, workdir: Path, topology_policy: str, *, kubeconfig: Path | None = None
    ) -> StandaloneKubelet:
        """Standalone; with ``kubeconfig``, registered with that API server as node ``NODE_NAME``."""
        fakecri = ensure_fakecri()
        (workdir / "root" / "manifests").mkdir(parents=True)
        sysctls = workdir / "sysctl"
        sysctls.mkdir()
        for tunable in KERNEL_TUNABLES:
            # The host's values, so that the kubelet sees what it would see; its writes stay here.
            shutil.copyfile(Path("/proc/sys") / tunable, sysctls / tunable.replace("/", "."))
        runtime_socket = workdir / "cri.sock"
        port, healthz_port = free_port(), free_port()
        config = kubelet_configuration(
            topology_policy=topology_policy,
            port=port,
            healthz_port=healthz_port,
            runtime_socket=runtime_socket,
            manifests=workdir / "root" / "manifests",
        )
        config_file = workdir / "config.yaml"
        config_file.write_text(yaml.safe_dump(config, sort_keys=False))
        script = _NAMESPACE_SCRIPT.format(tunables=" ".join(KERNEL_TUNABLES))
        run = cls(workdir, config_file, port, 0.0)
        started = time.monotonic()
        try:
            cri = Process.start("fakecri", [fakecri, "--listen", runtime_socket], workdir)
            run.processes.append(cri)
            _wait_for(lambda: runtime_socket.exists(), cri, "its socket", 10.0)
            argv = [
                "unshare", "--mount", "--propagation", "private", "--",
                "sh", "-c", script, "kubelet-ns", workdir, kubelet,
                "--config", config_file,
                "--root-dir", "/var/lib/kubelet",
                "--hostname-override", NODE_NAME,
                "--v", "2",
            ]  # fmt: skip
            if kubeconfig is not None:
                # Tainted so that no scheduler of the shared control plane binds another test's pods here:
                # this node's pods name it themselves, and the kubelet's admission checks only NoExecute
                # taints (lifecycle/predicate.go).
                argv += ["--kubeconfig", kubeconfig, "--register-with-taints", f"{NO_SCHEDULE_TAINT}"]
            kubelet_process = Process.start("kubelet", argv, workdir)
            run.processes.append(kubelet_process)
            _wait_for(lambda: _healthy(healthz_port), kubelet_process, "/healthz", STARTUP_TIMEOUT)
            # Ready for pods once the podresources socket and both managers' checkpoints are there.
            socket = run.root / "pod-resources" / "kubelet.sock"
            state = (run.root / "cpu_manager_state", run.root / "memory_manager_state")
            _wait_for(
                lambda: socket.exists() and all(p.exists() for p in state), kubelet_process, "its state", 30.0
            )
        except BaseException:
            run.stop()
            raise
        run.startup_seconds = time.monotonic() - started
        return run

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()

    def tail(self, lines: int = 40) -> str:
        return "\n".join(p.tail(lines) for p in self.processes if p.name == "kubelet")

    def pods(self) -> dict[str, KubeletPod]:
        """``GET /pods`` of the kubelet's API, by pod name (a static pod's name ends in ``-<node>``)."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the kubelet's self-signed serving certificate
        with urllib.request.urlopen(
            f"https://127.0.0.1:{self.port}/pods", timeout=10, context=context
        ) as reply:
            items = json.load(reply)["items"] or []  # null while the kubelet has no pod
        pods = {}
        for item in items:
            status = item.get("status", {})
            name = item["metadata"]["name"]
            pods[name] = KubeletPod(
                name,
                item["metadata"]["uid"],
                status.get("phase", ""),
                status.get("reason", ""),
                status.get("message", ""),
            )
        return pods

    def add_static_pod(self, manifest: Mapping[str, Any]) -> KubeletPod:
        """Writes the manifest and waits for the kubelet's answer: Running (admitted; the fake runtime
        starts containers at once) or Failed (rejected)."""
        name = manifest["metadata"]["name"]
        staging = self.workdir / f".{name}.yaml"  # renamed in, so the kubelet never reads half a file
        staging.write_text(yaml.safe_dump(dict(manifest)))
        staging.rename(self.manifests / f"{name}.yaml")
        return self.wait_answered(f"{name}-{NODE_NAME}")

    def wait_answered(self, name: str) -> KubeletPod:
        """The pod Running (admitted; the fake runtime starts containers at once) or Failed (rejected)."""
        return self.wait_pod(name, lambda pod: pod is not None and pod.phase in ("Running", "Failed"))

    def remove_static_pod(self, name: str) -> None:
        (self.manifests / f"{name}.yaml").unlink()
        self.wait_pod(f"{name}-{NODE_NAME}", lambda pod: pod is None)

    def wait_pod(self, name: str, done: Callable[[KubeletPod | None], bool]) -> KubeletPod:
        deadline = time.monotonic() + ADMISSION_TIMEOUT
        pod = None
        while time.monotonic() < deadline:
            pod = self.pods().get(name)
            if done(pod):
                return pod  # type: ignore[return-value]  # None only when waiting for a removal
            time.sleep(0.2)
        raise AssertionError(f"pod {name} still {pod} after {ADMISSION_TIMEOUT:.0f} s:\n{self.tail()}")

    def cpu_assignments(self) -> dict[str, dict[str, list[int]]]:
        """The CPU manager checkpoint's exclusive CPUs: pod UID -> container -> CPU ids (a V4 file, 1.37's,
        wraps its content in ``data``; older ones hold it at the top)."""
        checkpoint = json.loads((self.root / "cpu_manager_state").read_text())
        data = json.loads(checkpoint["data"]) if "data" in checkpoint else checkpoint
        return {
            uid: {container: _cpu_list(cpus) for container, cpus in containers.items()}
            for uid, containers in data.get("entries", {}).items()
        }


def _cpu_list(text: str) -> list[int]:
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def _wait_for(ready: Callable[[], bool], process: Process, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise StartupError(f"{process.name} exited with {process.popen.returncode}:\n{process.tail()}")
        if ready():
            return
        time.sleep(0.1)
    raise StartupError(f"{process.name}: no {what} after {timeout:.0f} s:\n{process.tail()}")
