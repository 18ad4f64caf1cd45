"""One node, one daemon, one truth: sockets are never taken from a live daemon, a state directory serves one
daemon, a namespace/name is one pod, and start-up says what it repaired. Each through the real daemon."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as podresources
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as podresources_grpc
from kubeletemu.podresources.fingerprint import compute
from tests.daemon.conftest import write_config
from tests.daemon.daemon_process import DaemonProcess
from tests.nodes import kubelet_config

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

# No metadata.uid: the daemon derives it from namespace/name.
POD = """apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod}
spec:
  containers:
  - name: app
    resources:
      limits: {cpu: "2", memory: 1Gi}
"""

Launch = Callable[..., DaemonProcess]


@pytest.fixture
def launch(tmp_path: Path, sample_tree: tuple[Path, Path]) -> Iterator[Launch]:
    """Daemons in one short scratch directory (unix socket paths are limited to 107 bytes)."""
    started: list[DaemonProcess] = []
    config = write_config(tmp_path / "config.yaml")

    def factory(
        socket_name: str = "a.sock",
        state: str = "sa",
        podresources_name: str | None = None,
        extra: tuple[str, ...] = (),
        start: bool = True,
    ) -> DaemonProcess:
        daemon = DaemonProcess(
            config=config,
            state_dir=tmp_path / state,
            socket=tmp_path / socket_name,
            sysfs_root=sample_tree[0],
            procfs_root=sample_tree[1],
            log=tmp_path / f"{socket_name}.log",
            extra_args=list(extra),
            podresources_socket=tmp_path / (podresources_name or f"pr-{socket_name}"),
        )
        started.append(daemon)
        return daemon.start() if start else daemon

    yield factory
    for daemon in started:
        daemon.stop()


def serve_refused(daemon: DaemonProcess) -> subprocess.CompletedProcess[str]:
    """Start ``daemon`` expecting it to refuse: its exit status and its one line."""
    return subprocess.run(
        daemon.argv(), capture_output=True, text=True, timeout=60, env=daemon.env(), check=False
    )


def admit(daemon: DaemonProcess, manifest: str) -> pb.AdmitResponse:
    reply = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
    assert isinstance(reply, pb.AdmitResponse)
    return reply


def listed(daemon: DaemonProcess) -> list[tuple[str, str, str]]:
    reply = daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10)
    return [(p.namespace, p.name, p.uid) for p in reply.pods]


def one_error_line(out: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in out.stderr.splitlines() if line.startswith("kubeletemu: ")]
    assert len(lines) == 1, out.stderr
    return lines[0]


# ---- 1. sockets ---------------------------------------------------------------------------------------


def test_a_second_daemon_never_takes_a_live_daemons_socket(launch: Launch) -> None:
    first = launch()
    assert first.process is not None
    admit(first, POD)
    inode = first.socket.stat().st_ino
    # Same admission socket, its own podresources socket and state: refused, naming the path and the holder.
    second = launch(state="sb", podresources_name="b.sock", start=False)
    out = serve_refused(second)
    line = one_error_line(out)
    assert out.returncode == 1, out.stderr
    assert f"{first.socket} is served by another process (pid {first.process.pid}: " in line
    assert "kubeletemu.cli serve" in line and "--socket" in line
    # The first daemon is untouched and still reachable; the refused one left nothing behind.
    assert first.socket.stat().st_ino == inode
    assert [name for _, name, _ in listed(first)] == ["web"]
    assert not Path(str(second.podresources_socket)).exists()
    assert not (second.state_dir / "kubeletemu.lock").exists()


def test_the_podresources_socket_beside_a_live_one_is_refused_too(launch: Launch, tmp_path: Path) -> None:
    """The default podresources socket is podresources.sock beside the admission socket: two daemons whose
    sockets share a directory would collide there."""
    first = launch(podresources_name="podresources.sock")
    second = launch(socket_name="c.sock", state="sb", podresources_name="podresources.sock", start=False)
    out = serve_refused(second)
    assert out.returncode == 1
    assert f"{tmp_path / 'podresources.sock'} is served by another process" in one_error_line(out)
    assert "--podresources-socket" in one_error_line(out)
    with grpc.insecure_channel(f"unix:{first.podresources_socket}") as channel:
        stub = podresources_grpc.PodResourcesListerStub(channel)
        assert stub.List(podresources.ListPodResourcesRequest(), timeout=10).pod_resources == []


class SocketFromConfig(DaemonProcess):
    """A daemon whose sockets come from its configuration's ``socket:`` alone: no --socket, no
    --podresources-socket, no podResourcesSocket."""

    def argv(self) -> list[str]:
        argv = super().argv()
        for flag in ("--socket", "--podresources-socket"):
            at = argv.index(flag)
            del argv[at : at + 2]
        return argv


def socket_from_config(tmp_path: Path, tree: tuple[Path, Path], name: str, sock: Path) -> SocketFromConfig:
    config = tmp_path / f"{name}.yaml"
    config.write_text(kubelet_config(emulator=f"socket: {sock}\n"))
    return SocketFromConfig(
        config=config,
        state_dir=tmp_path / f"state-{name}",
        socket=sock,
        sysfs_root=tree[0],
        procfs_root=tree[1],
        log=tmp_path / f"{name}.log",
        podresources_socket=sock.parent / "podresources.sock",  # where it should be; not passed
    )


@pytest.fixture
def configured(tmp_path: Path, sample_tree: tuple[Path, Path]) -> Iterator[list[SocketFromConfig]]:
    daemons: list[SocketFromConfig] = []
    yield daemons
    for daemon in daemons:
        daemon.stop()


def test_a_second_daemon_configured_with_only_its_socket_gets_its_own_podresources_socket(
    tmp_path: Path, sample_tree: tuple[Path, Path], configured: list[SocketFromConfig]
) -> None:
    """Issue 41 item 6: the default podresources socket is podresources.sock in the directory of the
    configured ``socket:``, so two daemons whose sockets are in two directories both start."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for name in ("a", "b"):
        configured.append(socket_from_config(tmp_path, sample_tree, name, tmp_path / name / "k.sock"))
        configured[-1].start()
    for daemon in configured:
        assert daemon.process is not None and daemon.process.poll() is None
        assert Path(str(daemon.podresources_socket)).is_socket()
        with daemon.podresources_channel() as channel:
            stub = podresources_grpc.PodResourcesListerStub(channel)
            assert stub.List(podresources.ListPodResourcesRequest(), timeout=10).pod_resources == []
    # Each answers for its own node: a pod admitted on b shows in b's podresources only.
    assert admit(configured[1], POD).admitted
    for daemon, pods in zip(configured, ([], ["web"]), strict=True):
        with daemon.podresources_channel() as channel:
            stub = podresources_grpc.PodResourcesListerStub(channel)
            reply = stub.List(podresources.ListPodResourcesRequest(), timeout=10)
        assert [p.name for p in reply.pod_resources] == pods


def test_a_derived_podresources_socket_that_clashes_is_named_with_where_it_came_from(
    tmp_path: Path, sample_tree: tuple[Path, Path], configured: list[SocketFromConfig]
) -> None:
    """Two admission sockets in one directory derive one podresources socket: the refusal says which of
    the daemon's two sockets clashes, that it was derived, from what, and how to set it."""
    first = socket_from_config(tmp_path, sample_tree, "a", tmp_path / "a.sock")
    configured.append(first.start())
    assert first.process is not None
    second = socket_from_config(tmp_path, sample_tree, "b", tmp_path / "b.sock")
    out = serve_refused(second)
    assert out.returncode == 1, out.stderr
    assert one_error_line(out).startswith(
        "kubeletemu: the podresources socket (podresources.sock beside the admission socket "
        f"{second.socket}, as neither --podresources-socket nor podResourcesSocket is set): "
        f"{tmp_path / 'podresources.sock'} is served by another process (pid {first.process.pid}: "
    )
    assert not second.socket.exists()
    # The admission socket's own clash is named as such.
    third = socket_from_config(tmp_path, sample_tree, "c", first.socket)
    line = one_error_line(serve_refused(third))
    assert line.startswith(f"kubeletemu: the admission socket: {first.socket} is served by another process")


def test_stale_sockets_are_replaced_and_other_files_left_alone(launch: Launch, tmp_path: Path) -> None:
    # A socket whose server died (bound, never listened on, never removed): stale.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(tmp_path / "a.sock"))
    stale.close()
    daemon = launch()
    assert listed(daemon) == []
    daemon.stop()
    assert not daemon.socket.exists()  # ours: removed at exit
    # A regular file is nobody's socket: refused and kept.
    (tmp_path / "a.sock").write_text("not a socket")
    out = serve_refused(launch(start=False))
    assert out.returncode == 1
    assert one_error_line(out).endswith(
        f"{tmp_path / 'a.sock'} exists and is not a socket: remove it or choose another --socket"
    )
    assert (tmp_path / "a.sock").read_text() == "not a socket"


def test_a_daemon_removes_only_the_socket_it_bound(launch: Launch, tmp_path: Path) -> None:
    daemon = launch()
    # Someone else now serves at the path (e.g. an operator moved a socket there): not ours to remove.
    daemon.socket.unlink()
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(str(daemon.socket))
    other.listen(1)
    try:
        assert daemon.stop() == 0
        assert daemon.socket.exists()
        assert not Path(str(daemon.podresources_socket)).exists()  # still its own: removed
    finally:
        other.close()


# ---- 2. the state directory -----------------------------------------------------------------------------


def test_one_state_directory_serves_one_daemon(launch: Launch) -> None:
    first = launch()
    assert first.process is not None
    assert admit(first, POD).admitted
    second = launch(socket_name="c.sock", start=False)  # own sockets, the same state directory
    out = serve_refused(second)
    assert out.returncode == 1
    line = one_error_line(out)
    assert f"the state directory {first.state_dir} is in use by another kubeletemu " in line
    assert (
        f"(pid {first.process.pid}, serving {first.socket}; lock {first.state_dir / 'kubeletemu.lock'})"
        in line
    )
    assert not second.socket.exists()
    # Nothing of the first daemon's changed; a kill -9 frees the directory for the next one.
    assert [name for _, name, _ in listed(first)] == ["web"]
    first.stop(signal.SIGKILL)
    second.start()
    assert [name for _, name, _ in listed(second)] == ["web"]


def test_a_state_directory_that_cannot_be_made_is_bad_input(launch: Launch, tmp_path: Path) -> None:
    """Issue 41 item 8: a --state-dir that cannot be made or locked is the caller's input (exit 2), not
    another daemon's hold (exit 1); one line naming the path."""
    (tmp_path / "file").write_text("a file, not a directory")
    for state_dir, why in (
        ("/proc/nope", "No such file or directory"),
        (tmp_path / "file" / "s", "Not a directory"),
    ):
        daemon = launch(state=str(state_dir), start=False)
        out = serve_refused(daemon)
        assert out.returncode == 2, out.stderr
        assert one_error_line(out) == (
            f"kubeletemu: cannot lock the state directory: {state_dir}/kubeletemu.lock: {why}"
        )
        assert not daemon.socket.exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_every_pod_start_up_drops_or_releases_is_logged_and_counted(launch: Launch) -> None:
    """A crash between the files of one admission: pod b's registry file reached the disk and the
    checkpoints did not (dropped); then the other way round for pod d (its allocations are released)."""
    first = launch()
    assert admit(first, POD).admitted
    state = first.state_dir
    saved = {name: (state / name).read_bytes() for name in ("cpu_manager_state", "memory_manager_state")}
    b = admit(first, POD.replace("name: web", "name: b"))
    first.stop(signal.SIGKILL)
    for name, blob in saved.items():  # the checkpoints as they were before b
        (state / name).write_bytes(blob)
    port = free_port()
    restarted = launch(extra=("--metrics-address", f"127.0.0.1:{port}"))
    assert [name for _, name, _ in listed(restarted)] == ["web"]
    log = [json.loads(line) for line in restarted.log.read_text().splitlines() if line.startswith("{")]
    repairs = [entry for entry in log if entry["event"] == "pod not restored as saved"]
    assert [(r["action"], r["uid"], r["pod"]) for r in repairs] == [("dropped", b.uid, "prod/b")]
    assert "never answered" in repairs[0]["reason"] and repairs[0]["state_dir"] == str(state)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    assert 'kubeletemu_startup_repairs_total{action="dropped"} 1.0' in text
    assert 'kubeletemu_startup_repairs_total{action="released"} 0.0' in text

    # Checkpoints written, registry file lost: the allocation is stale and released.
    stale = admit(restarted, POD.replace("name: web", "name: d"))
    restarted.stop(signal.SIGKILL)
    (state / "pods" / f"{stale.uid}.json").unlink()
    again = launch(extra=("--metrics-address", f"127.0.0.1:{port}"))
    log = [json.loads(line) for line in again.log.read_text().splitlines() if line.startswith("{")]
    released = [e for e in log if e["event"] == "pod not restored as saved" and e["action"] == "released"]
    assert [(r["uid"], r["pod"]) for r in released] == [(stale.uid, None)]
    assert "the cpu, memory checkpoint(s) hold allocations" in released[0]["reason"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert 'kubeletemu_startup_repairs_total{action="released"} 1.0' in response.read().decode()
    # Its CPUs are free again: the next pod gets them.
    assert list(admit(again, POD.replace("name: web", "name: e")).containers[0].cpu_ids) == list(
        stale.containers[0].cpu_ids
    )


# ---- 3. pod identity ----------------------------------------------------------------------------------


def test_the_same_manifest_admitted_twice_is_one_pod(launch: Launch) -> None:
    daemon = launch()
    first = admit(daemon, POD)
    assert first.admitted
    with pytest.raises(grpc.RpcError) as err:
        admit(daemon, POD)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert err.value.details() == f'pod UID "{first.uid}" is already admitted (as prod/web)'
    # The same namespace/name under another UID: refused, naming both.
    with pytest.raises(grpc.RpcError) as err:
        admit(daemon, POD.replace("namespace: prod}", "namespace: prod, uid: other-uid}"))
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert err.value.details() == (
        f'pod prod/web is already admitted with UID "{first.uid}"; this one has UID "other-uid": remove the '
        "admitted pod first"
    )
    # One pod everywhere: ListPods, podresources List and Get, the fingerprint.
    assert listed(daemon) == [("prod", "web", first.uid)]
    with grpc.insecure_channel(f"unix:{daemon.podresources_socket}") as channel:
        stub = podresources_grpc.PodResourcesListerStub(channel)
        pods = stub.List(podresources.ListPodResourcesRequest(), timeout=10).pod_resources
        assert [(p.namespace, p.name) for p in pods] == [("prod", "web")]
        got = stub.Get(podresources.GetPodResourcesRequest(pod_name="web", pod_namespace="prod"), timeout=10)
        assert list(got.pod_resources.containers[0].cpu_ids) == list(first.containers[0].cpu_ids)
    fingerprint = daemon.stub().GetFingerprint(pb.GetFingerprintRequest(method="all"), timeout=10)
    assert fingerprint.fingerprint == compute([("prod", "web")])
    # The node booked the pod once: what it holds is what one admission took.
    topology = daemon.stub().GetNodeTopology(pb.GetNodeTopologyRequest(), timeout=10)
    free = sum(len(n.free_cpu_ids) for n in topology.numa_nodes)
    assert free == 15 - 2
