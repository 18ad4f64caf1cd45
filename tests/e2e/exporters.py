"""resource-topology-exporter and nfd-topology-updater on a kubeletemu daemon, publishing to a real API
server.

Each exporter reads what it reads on a node, from the daemon instead of a kubelet:

* the podresources socket (``--podresources-socket`` / ``-podresources-socket``, a ``unix://`` URL);
* the kubelet configuration: the KubeletConfiguration document of the daemon's configuration, as the kubelet's
  own config file (RTE ``--kubelet-config-file``, nfd ``-kubelet-config-uri file://``), which both read with a
  plain YAML unmarshal for the Topology Manager policy and scope;
* the kubelet state directory: the daemon's, with ``cpu_manager_state``, ``memory_manager_state`` and
  ``device-plugins/kubelet_internal_checkpoint`` in the kubelet's format (nfd ``-kubelet-state-dir``
  watches them with fsnotify and scans when they change);
* sysfs at ``/sys``: each runs in a mount namespace of its own (``unshare --mount``, which needs root) where
  ``/sys`` is a copy of the synthetic tree the daemon runs on, as its pod would see the node's.

Nothing else: the API server through the test's kubeconfig, RTE's metrics and pod-readiness condition off. The
only listener is nfd's healthz/metrics server, which has no address flag: ``-port=0`` puts it on a free port.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubeletemu.quantity import Quantity

RTE = "resource-topology-exporter"
NFD = "nfd-topology-updater"
EXPORTERS = (RTE, NFD)
# Both scan on this timer; RTE's rate limiter allows one scan a second.
SCAN_INTERVAL = "1s"
KUBELET_KIND = "KubeletConfiguration"
ATTRIBUTE_FINGERPRINT = "nodeTopologyPodsFingerprint"
# The CLI of this checkout, whatever is on PATH.
KUBELETEMU = (sys.executable, "-m", "kubeletemu.cli")


@dataclass(frozen=True)
class NodeFiles:
    """What an exporter on the daemon's node reads."""

    node_name: str
    podresources_socket: Path
    state_dir: Path
    kubelet_config: Path
    sysfs_root: Path


def write_kubelet_config(config_text: str, path: Path) -> Path:
    """The KubeletConfiguration of a kubeletemu configuration, alone, as the kubelet's config file."""
    docs = yaml.safe_load_all(config_text)
    kubelet = [d for d in docs if isinstance(d, dict) and d.get("kind") == KUBELET_KIND]
    path.write_text(yaml.safe_dump_all(kubelet, sort_keys=False))
    return path


def node_sysfs(sysfs_root: Path, target: Path) -> Path:
    """A copy of the node's sysfs tree with the ``bus/node/devices/node<N>`` links a real sysfs has
    (``../../../devices/system/node/node<N>``), which nfd-topology-updater reads memory from. A copy, not
    links out of the tree: RTE refuses a sysfs path that resolves outside ``/sys``."""
    shutil.copytree(sysfs_root, target, symlinks=True)
    devices = target / "bus" / "node" / "devices"
    devices.mkdir(parents=True, exist_ok=True)
    for node in sorted((target / "devices" / "system" / "node").glob("node[0-9]*")):
        (devices / node.name).symlink_to(Path("../../../devices/system/node") / node.name)
    return target


def in_node_mounts(sysfs: Path, argv: Sequence[str]) -> list[str]:
    """``argv`` in a mount namespace of its own where ``/sys`` is the node's sysfs, as in the exporter's pod.
    RTE reads memory and hugepage capacities from ``/sys/devices/system/node`` whatever ``--sysfs`` says
    (``sysinfo.Handle{}`` in ``updateNodeCapacity``), nfd-topology-updater all of sysfs from
    ``/sys``: outside a namespace both would read this machine's."""
    mount = 'mount --bind "$0" /sys && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(sysfs), *argv]


@dataclass
class Exporter:
    """One exporter process; its output goes to ``log``."""

    name: str
    argv: list[str]
    cwd: Path
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> Exporter:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **self.env}
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.argv, cwd=self.cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)


def rte(binary: Path, node: NodeFiles, kubeconfig: Path, workdir: Path, method: str) -> Exporter:
    """RTE with its defaults but for where things are, the scan period, the fingerprint method, and the two
    features that need a pod of its own (the pod-readiness condition, its metrics endpoint). Its config tree
    root (the positional argument) is an empty ``$HOME/.rte``, one of the roots it accepts, with ``HOME`` the
    work directory, so no ``/etc/rte`` file is read."""
    config_root = workdir / ".rte"
    config_root.mkdir(parents=True, exist_ok=True)
    argv = [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--podresources-socket=unix://{node.podresources_socket}",
        "--sysfs=/sys",
        f"--kubelet-config-file={node.kubelet_config}",
        f"--hostname={node.node_name}",
        f"--sleep-interval={SCAN_INTERVAL}",
        f"--pods-fingerprint-method={method}",
        "--podreadiness=false",
        "--metrics-mode=disabled",
        str(config_root),
    ]
    sysfs = node_sysfs(node.sysfs_root, workdir / "rte-sys")
    return Exporter(RTE, in_node_mounts(sysfs, argv), workdir, workdir / "rte.log", {"HOME": str(workdir)})


def nfd(binary: Path, node: NodeFiles, kubeconfig: Path, workdir: Path) -> Exporter:
    """nfd-topology-updater with its defaults but for where things are and the scan period; its node name
    and namespace (the NRT's owner) come from the environment, as in its DaemonSet."""
    argv = [
        str(binary),
        f"-kubeconfig={kubeconfig}",
        f"-podresources-socket=unix://{node.podresources_socket}",
        f"-kubelet-config-uri=file://{node.kubelet_config}",
        f"-kubelet-state-dir={node.state_dir}",
        f"-sleep-interval={SCAN_INTERVAL}",
        f"-config={workdir / 'nfd-topology-updater.conf'}",
        "-port=0",
    ]
    env = {"NODE_NAME": node.node_name, "KUBERNETES_NAMESPACE": "default"}
    sysfs = node_sysfs(node.sysfs_root, workdir / "nfd-sys")
    return Exporter(NFD, in_node_mounts(sysfs, argv), workdir, workdir / "nfd.log", env)


# ---- the comparison --------------------------------------------------------------------------------------


def _amount(value: object) -> int:
    """A resource.Quantity as written (``"2k"``, ``"8589934592"``) or an int, as an exact integer."""
    amount = Quantity.parse(str(value)).amount
    if amount.denominator != 1:
        raise ValueError(f"quantity {value!r} is not whole")
    return int(amount)


def normalized(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The fields an exporter decides, in a form where Go map order does not count: zones, their costs and
    resources keyed by name (the exporters emit map order), attributes in order, the annotations,
    ``topologyPolicies``."""
    zones: dict[str, Any] = {}
    for zone in obj.get("zones") or []:
        zones[zone["name"]] = {
            "type": zone.get("type"),
            "costs": {c["name"]: int(c["value"]) for c in zone.get("costs") or []},
            "attributes": [(a["name"], a["value"]) for a in zone.get("attributes") or []],
            "resources": {
                r["name"]: {k: _amount(r[k]) for k in ("capacity", "allocatable", "available")}
                for r in zone.get("resources") or []
            },
        }
    metadata = obj.get("metadata") or {}
    return {
        "name": metadata.get("name"),
        "annotations": dict(metadata.get("annotations") or {}),
        "topologyPolicies": list(obj.get("topologyPolicies") or []),
        "attributes": [(a["name"], a["value"]) for a in obj.get("attributes") or []],
        "zones": zones,
    }


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Field by field: ``path: expected X, exporter wrote Y``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[str] = []
        for key in sorted(set(expected) | set(actual), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                out.append(f"{where}: expected {expected[key]!r}, missing in the exporter's object")
            elif key not in expected:
                out.append(f"{where}: not expected, the exporter wrote {actual[key]!r}")
            else:
                out.extend(differences(expected[key], actual[key], where))
        return out
    if expected != actual:
        return [f"{path}: expected {expected!r}, the exporter wrote {actual!r}"]
    return []


def wait_equal(
    expected: Mapping[str, Any],
    read: Callable[[], Mapping[str, Any] | None],
    timeout: float,
    exporter: Exporter,
) -> None:
    """Until the exporter's object equals ``expected`` (normalised); on timeout an AssertionError listing
    every difference left and the exporter's log tail."""
    want = normalized(expected)
    deadline = time.monotonic() + timeout
    got: dict[str, Any] | None = None
    while True:
        current = read()
        got = None if current is None else normalized(current)
        if got == want:
            return
        if not exporter.running():
            raise AssertionError(f"{exporter.name} exited:\n{exporter.tail()}")
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    diff = ["no object written"] if got is None else differences(want, got)
    raise AssertionError(
        f"{exporter.name}'s NodeResourceTopology differs from kubeletemu nrt's after {timeout:.0f} s:\n  "
        + "\n  ".join(diff)
        + f"\n{exporter.name} log:\n{exporter.tail()}"
    )


def with_kept_fingerprint(expected: dict[str, Any], kept: str) -> dict[str, Any]:
    """nfd-topology-updater updates attributes by name and publishes no fingerprint for an empty List, so
    the object keeps the last one it wrote (``kept``; empty when none was)."""
    attributes = expected.get("attributes") or []
    if kept and not any(a["name"] == ATTRIBUTE_FINGERPRINT for a in attributes):
        expected = {**expected, "attributes": [*attributes, {"name": ATTRIBUTE_FINGERPRINT, "value": kept}]}
    return expected


def fingerprint_of(obj: Mapping[str, Any]) -> str:
    return next((a["value"] for a in obj.get("attributes") or [] if a["name"] == ATTRIBUTE_FINGERPRINT), "")


def kubeletemu_nrt(socket: Path, flavour: str, method: str | None = None) -> dict[str, Any]:
    """``kubeletemu nrt -o json`` for the daemon on ``socket``."""
    argv = [*KUBELETEMU, "nrt", "--socket", str(socket), "-o", "json", "--flavour", flavour]
    if method is not None:
        argv += ["--method", method]
    result = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def kubeletemu_cli(socket: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBELETEMU, *args, "--socket", str(socket)],
        input=input,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )


def pod_manifests(pods: Sequence[Mapping[str, Any]], node_name: str) -> str:
    """The pods as the API server gets them: bound to the node (no scheduler), no uid (the server sets it)."""
    docs = []
    for pod in pods:
        metadata = {k: v for k, v in pod["metadata"].items() if k != "uid"}
        docs.append({**pod, "metadata": metadata, "spec": {**pod["spec"], "nodeName": node_name}})
    return yaml.safe_dump_all(docs, sort_keys=False)
