"""The real kubelet (over the fake CRI of tests/upstream/kubelet.py) against kubeletemu on this host.

Pods made for this machine (2 CPUs, CPU 0 reserved: one exclusive CPU; one NUMA node) go to the kubelet one
at a time, as static pods (standalone) or as API pods bound to its node (registered with the test API
server); each answer (admitted or rejected, reason, message, exclusive CPU ids) must be kubeletemu's for the
same pods in the same order, on a daemon given the kubelet's own configuration file. Then ``kubeletemu serve
--shadow`` mirrors the kubelet from its root directory and podresources socket, and its self-check must
agree with every assignment.

Static pods are critical pods to the kubelet (``IsCriticalPod``: a ``kubernetes.io/config.source``
annotation other than ``api``): one that fails the node's resource fit makes the kubelet try to preempt
(pkg/kubelet/preemption/preemption.go); with only critical pods running nothing is preemptable, and the
answer is ``UnexpectedAdmissionError`` about preemption. kubeletemu, given the annotation the kubelet gives
its static pods, answers the same; API pods get ``OutOfcpu`` from both.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeletemu.memorymanager.state.formats import MemoryCheckpointFormat
from tests.daemon.daemon_process import DaemonProcess
from tests.e2e.conftest import VERSION_ENV
from tests.upstream import build
from tests.upstream.controlplane import ControlPlane
from tests.upstream.kubelet import NODE_NAME, KubeletPod, StandaloneKubelet
from tests.upstream.pins import pin_for

pytestmark = pytest.mark.slow

API_NAMESPACE = "realkubelet"
REJECTED_PREFIX = "Pod was rejected: "  # the kubelet's rejectPod prefixes every admission message
PREEMPTION_FAILED = (
    "Unexpected error while attempting to recover from admission failure: preemption: error finding a set "
    "of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 500), ]"
)


@dataclass(frozen=True)
class Answer:
    admitted: bool
    reason: str
    message: str
    cpus: tuple[int, ...]  # exclusive CPU ids


def _pod(name: str, cpu: str, memory: str, *, guaranteed: bool = True) -> dict[str, Any]:
    """One container; Guaranteed (limits only), else Burstable with the non-empty requests."""
    amounts = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    resources = {"limits": amounts} if guaranteed else {"requests": amounts}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}]
        },
    }


# (step, pod): each pod's answer depends on those before it. Node allocatable CPU is 1 (2 minus the reserved
# CPU 0), NUMA node 0's allocatable memory ~20 GiB.
STEPS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("add", _pod("exclusive", "1", "512Mi")),  # CPU 1, the only exclusive-able one
    ("add", _pod("no-cpu-left", "1", "512Mi")),  # no CPU for the hint: TopologyAffinityError
    ("add", _pod("memory-hog", "100m", "100Gi")),  # no NUMA node has it: the memory manager's error
    ("add", _pod("three-cpus", "3", "1Gi")),  # more CPUs than the node has
    ("add", _pod("fractional", "500m", "1Gi")),  # past node allocatable: the critical-pod difference
    ("remove", _pod("exclusive", "1", "512Mi")),
    # Burstable without CPU: any CPU request would leave too little allocatable for the next one.
    ("add", _pod("burstable", "", "64Mi", guaranteed=False)),
    ("add", _pod("exclusive-again", "1", "256Mi")),  # CPU 1 again, freed by the removal
)
# What both must answer for ``fractional``: a static pod is critical (see the module docstring).
STATIC_FRACTIONAL = {"fractional": Answer(False, "UnexpectedAdmissionError", PREEMPTION_FAILED, ())}
API_FRACTIONAL = {
    "fractional": Answer(
        False,
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 500, used: 1000, capacity: 1000",
        (),
    )
}


def _kubeletemu_version() -> str:
    """The pinned kubelet's minor, which kubeletemu emulates (1.33 … 1.37; a newer one would be master)."""
    minor = pin_for(os.environ.get(VERSION_ENV)).minor
    return "master" if tuple(map(int, minor.split("."))) > (1, 37) else minor


@pytest.fixture(scope="module")
def kubelet_binary() -> Path:
    return build.ensure(os.environ.get(VERSION_ENV), ["kubelet"]).path("kubelet")


@pytest.fixture(params=["single-numa-node", "restricted"])
def real_kubelet(
    request: pytest.FixtureRequest, kubelet_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StandaloneKubelet]:
    workdir = tmp_path_factory.mktemp("kl")
    kubelet = StandaloneKubelet.start(kubelet_binary, workdir, request.param)
    try:
        yield kubelet
    finally:
        kubelet.stop()


def _cli(*args: str, socket: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args, "--socket", str(socket), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout, done.stderr
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


class StaticPods:
    """Pods through the kubelet's manifest directory; the kubelet names them ``<name>-<node>``."""

    def __init__(self, kubelet: StandaloneKubelet) -> None:
        self.kubelet = kubelet

    def as_kubelet_has_it(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Named as the kubelet names it, with the source annotation it gives a file's pods."""
        metadata = {
            **manifest["metadata"],
            "name": f"{manifest['metadata']['name']}-{NODE_NAME}",
            "annotations": {"kubernetes.io/config.source": "file"},
        }
        return {**manifest, "metadata": metadata}

    def add(self, manifest: dict[str, Any]) -> KubeletPod:
        return self.kubelet.add_static_pod(manifest)

    def remove(self, manifest: dict[str, Any]) -> None:
        self.kubelet.remove_static_pod(manifest["metadata"]["name"])


class ApiPods:
    """Pods created in the API server, bound to the kubelet's node (no scheduler), without a service account
    token to mount."""

    def __init__(
        self, kubelet: StandaloneKubelet, plane: ControlPlane, namespace: str = API_NAMESPACE
    ) -> None:
        self.kubelet, self.plane, self.namespace = kubelet, plane, namespace
        plane.namespace_with_account(namespace)

    def as_kubelet_has_it(self, manifest: dict[str, Any]) -> dict[str, Any]:
        spec = {**manifest["spec"], "nodeName": NODE_NAME, "automountServiceAccountToken": False}
        return {**manifest, "metadata": {**manifest["metadata"], "namespace": self.namespace}, "spec": spec}

    def add(self, manifest: dict[str, Any]) -> KubeletPod:
        self.plane.kubectl("create", "-f", "-", input=yaml.safe_dump(self.as_kubelet_has_it(manifest)))
        return self.kubelet.wait_answered(manifest["metadata"]["name"])

    def remove(self, manifest: dict[str, Any]) -> None:
        name = manifest["metadata"]["name"]
        self.plane.kubectl("-n", self.namespace, "delete", "pod", name, "--grace-period=0", "--force")
        self.kubelet.wait_pod(name, lambda pod: pod is None)


def _kubelet_answer(kubelet: StandaloneKubelet, pod: KubeletPod) -> Answer:
    if pod.phase == "Running":
        cpus = kubelet.cpu_assignments().get(pod.uid, {}).get("c", [])
        return Answer(True, "", "", tuple(cpus))
    assert pod.message.startswith(REJECTED_PREFIX), pod
    return Answer(False, pod.reason, pod.message.removeprefix(REJECTED_PREFIX), ())


def _kubeletemu_answer(daemon: DaemonProcess, manifest: Path) -> Answer:
    reply = _cli("admit", "-f", str(manifest), socket=daemon.socket)
    container = reply["containers"][0]
    cpus = tuple(container["cpu_ids"]) if container["exclusive_cpus"] else ()
    return Answer(reply["admitted"], reply["reason"], reply["message"], cpus)


def _daemon(workdir: Path, config: Path, *args: str) -> DaemonProcess:
    """A kubeletemu daemon on this host's topology (/sys, /proc), as the kubelet sees it."""
    daemon = DaemonProcess(
        config=config,
        state_dir=workdir / "state",
        socket=workdir / "k.sock",
        sysfs_root=Path("/sys"),
        procfs_root=Path("/proc"),
        log=workdir / "daemon.log",
        extra_args=list(args),
    )
    return daemon.start(timeout=60)


def _compare(
    kubelet: StandaloneKubelet,
    pods: StaticPods | ApiPods,
    emu_dir: Path,
    expected: dict[str, Answer],
) -> None:
    """Each step on the kubelet and on a kubeletemu daemon given its configuration file; the answers must
    be equal, and be ``expected``'s where it names the step."""
    daemon = _daemon(emu_dir, kubelet.config_file, "--kubelet-version", _kubeletemu_version())
    try:
        differences = []
        for step, manifest in STEPS:
            name = manifest["metadata"]["name"]
            emu_manifest = emu_dir / f"{name}.yaml"
            emu_manifest.write_text(yaml.safe_dump(pods.as_kubelet_has_it(manifest)))
            if step == "remove":
                pods.remove(manifest)
                assert _cli("remove", "-f", str(emu_manifest), socket=daemon.socket)
                continue
            theirs = _kubelet_answer(kubelet, pods.add(manifest))
            ours = _kubeletemu_answer(daemon, emu_manifest)
            if name in expected:
                assert theirs == expected[name], name
            if theirs != ours:
                differences.append(f"{name}: kubelet {theirs}, kubeletemu {ours}")
        assert not differences, "\n".join(differences)
    finally:
        daemon.stop()
    # The same format on both sides: the fields, in order (entries omitted when empty).
    theirs, ours = (
        json.loads((d / "memory_manager_state").read_bytes()) for d in (kubelet.root, emu_dir / "state")
    )
    assert [k for k in ours if k != "entries"] == [k for k in theirs if k != "entries"], (ours, theirs)


def test_real_kubelet_answers_as_kubeletemu_and_shadow_mode_agrees(
    real_kubelet: StandaloneKubelet, kubelet_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _compare(real_kubelet, StaticPods(real_kubelet), tmp_path_factory.mktemp("emu"), STATIC_FRACTIONAL)
    _check_shadow(real_kubelet, kubelet_binary, tmp_path_factory.mktemp("sh"))


@contextlib.contextmanager
def _registered_kubelet(
    control_plane: ControlPlane, kubelet_binary: Path, workdir: Path, namespace: str = API_NAMESPACE
) -> Iterator[StandaloneKubelet]:
    """A kubelet registered with ``control_plane``; its node and ``namespace`` are deleted afterwards."""
    kubelet = StandaloneKubelet.start(
        kubelet_binary, workdir, "single-numa-node", kubeconfig=control_plane.kubeconfig
    )
    try:
        yield kubelet
    finally:
        kubelet.stop()
        # The control plane is shared with the other e2e tests of this worker: a scheduler there must not
        # bind pods to a node whose kubelet is gone.
        control_plane.kubectl("delete", "node", NODE_NAME, "--ignore-not-found", check=False)
        # With no kubelet left to confirm, the pods would stay Terminating, bound to NODE_NAME, and be handed
        # to the next kubelet of that name: force them out.
        control_plane.kubectl(
            "-n", namespace, "delete", "pods", "--all", "--force", "--grace-period=0", check=False
        )
        control_plane.kubectl(
            "delete", "namespace", namespace, "--wait=false", "--ignore-not-found", check=False
        )


def test_registered_kubelet_admits_api_pods_exactly_as_kubeletemu(
    control_plane: ControlPlane, kubelet_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Registered with the API server, the kubelet gets API pods, which are not critical: here kubeletemu's
    answers must equal the kubelet's at every step, ``fractional``'s OutOfcpu included."""
    with _registered_kubelet(control_plane, kubelet_binary, tmp_path_factory.mktemp("kl")) as kubelet:
        _compare(kubelet, ApiPods(kubelet, control_plane), tmp_path_factory.mktemp("emu"), API_FRACTIONAL)
        _check_shadow(kubelet, kubelet_binary, tmp_path_factory.mktemp("sh"))


def test_static_pod_preempts_an_api_pod_as_in_kubeletemu(
    control_plane: ControlPlane, kubelet_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A Burstable API pod takes 600m of the 1000m allocatable; a static pod asking 600m lacks 200m, so the
    kubelet evicts the API pod (``CriticalPodAdmissionHandler``, its ``Preempting`` event) and admits the
    static one. kubeletemu, given the same two pods, reports the same eviction with the same reason and
    message. (The victim's final phase comes from its containers' exit: the fake runtime's exit 0 ends it
    ``Succeeded`` over the ``Failed`` the preemption wrote, so it is not compared.)"""
    victim = _pod("victim", "600m", "64Mi", guaranteed=False)
    critical = _pod("critical", "600m", "64Mi", guaranteed=False)
    emu_dir = tmp_path_factory.mktemp("emu")
    namespace = f"{API_NAMESPACE}-preempt"  # the other test's namespace may still be terminating
    workdir = tmp_path_factory.mktemp("kl")
    with _registered_kubelet(control_plane, kubelet_binary, workdir, namespace) as kubelet:
        api, static = ApiPods(kubelet, control_plane, namespace), StaticPods(kubelet)
        added = api.add(victim)
        assert added.phase == "Running", added
        admitted = static.add(critical)
        assert admitted.phase == "Running", admitted
        kubelet.wait_pod("victim", lambda pod: pod is not None and pod.phase in ("Failed", "Succeeded"))
        theirs = _preempting_events(control_plane, namespace)
        daemon = _daemon(emu_dir, kubelet.config_file, "--kubelet-version", _kubeletemu_version())
        try:
            replies = []
            for pods, manifest in ((api, victim), (static, critical)):
                path = emu_dir / f"{manifest['metadata']['name']}.yaml"
                path.write_text(yaml.safe_dump(pods.as_kubelet_has_it(manifest)))
                replies.append(_cli("admit", "-f", str(path), socket=daemon.socket))
        finally:
            daemon.stop()
    assert theirs == [("victim", "Preempting", "Preempted in order to admit critical pod")]
    assert [r["admitted"] for r in replies] == [True, True]
    ours = [(p["name"], p["reason"], p["message"]) for p in replies[1]["preempted"]]
    assert ours == theirs
    assert [p["phase"] for p in replies[1]["preempted"]] == ["Failed"]


def _preempting_events(plane: ControlPlane, namespace: str) -> list[tuple[str, str, str]]:
    """The kubelet's ``Preempting`` events in ``namespace``: (pod, reason, message), waited for a while
    (the recorder sends them in the background)."""
    deadline = time.monotonic() + 30
    while True:
        listed = plane.get_json("events", "-n", namespace, "--field-selector", "reason=Preempting")
        items: list[dict[str, Any]] = listed.get("items", [])  # type: ignore[assignment]
        if items or time.monotonic() > deadline:
            return [(e["involvedObject"]["name"], e["reason"], e["message"]) for e in items]
        time.sleep(0.5)


def _check_shadow(kubelet: StandaloneKubelet, kubelet_binary: Path, workdir: Path) -> None:
    own = workdir / "own.yaml"
    own.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n---\n"
        "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n"
        f"kubeletBinary: {kubelet_binary}\n"
    )
    daemon = _daemon(
        workdir,
        own,
        "--shadow",
        "--kubelet-root-dir",
        str(kubelet.root),
        "--kubelet-config",
        str(kubelet.config_file),
        "--shadow-refresh-period",
        "1s",
    )
    running = {p.name for p in kubelet.pods().values() if p.phase == "Running"}
    try:
        deadline = time.monotonic() + 30
        while True:
            report = _cli("shadow-report", socket=daemon.socket)
            if report.get("pods_listed") == len(running) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        daemon.stop()
    assert report["pods_listed"] == len(running), report
    assert report["divergences"] == [], report
    _check_memory_checkpoint(kubelet.root / "memory_manager_state")
    # Every exclusive assignment (exclusive-again's CPU 1, the memory blocks) was checked and agrees.
    assert report["containers_checked"] == report["containers_agreeing"] >= 1, report


def _check_memory_checkpoint(path: Path) -> None:
    """The real kubelet's ``memory_manager_state`` is the format kubeletemu writes and reads at its
    version (from 1.37 V3: the embedded V1, then ``data`` and ``dataChecksum``, kubernetes#139626), and
    kubeletemu reads it as that kubelet does (the shadow above mirrored it; here the content is checked)."""
    blob = path.read_bytes()
    version = _kubeletemu_version()
    fmt = MemoryCheckpointFormat.for_kubelet(version)
    doc = json.loads(blob)
    fields = [k for k in doc if k != "entries"]  # omitted when no container holds memory
    if fmt.writes_v3:
        assert fields == ["policyName", "machineState", "checksum", "data", "dataChecksum"], fields
        assert json.loads(doc["data"])["machineState"] == doc["machineState"]
    else:
        assert fields[:2] == ["policyName", "machineState"] and "data" not in fields, fields
    restored = fmt.unmarshal(blob)
    assert restored.policy_name == doc["policyName"]
    assert {str(n) for n in restored.machine_state} == set(doc["machineState"])
