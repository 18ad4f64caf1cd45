"""Nothing acknowledged is lost, and no single request stalls the node: the real daemon and real clients
against the faults of issue 25 — identifiers past the API server's limits, a per-file write error, the
state directory removed while the daemon runs, a checkpoint removed while it is stopped, bytes that are no
request, and a corrupt device checkpoint."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.daemon.server import ADMISSION_SERVICE
from kubeletemu.daemon.state_lock import LOCK_NAME
from kubeletemu.registry import file_name
from tests.daemon.conftest import write_config
from tests.daemon.daemon_process import DaemonProcess
from tests.daemon.state_checks import held
from tests.daemon.test_daemon_admission import admit, pod_yaml
from tests.daemon.test_degraded_state_dir import WatchedDaemon
from tests.daemon.test_grpcurl_and_cli import cli
from tests.daemon.test_metrics import free_port

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]
SERVING = health_pb2.HealthCheckResponse.SERVING
# "no message over a few hundred characters": the longest refusal these tests provoke stays under this.
SHORT = 600


def _refusal(call: Callable[[], object], code: grpc.StatusCode) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == code, (info.value.code(), info.value.details())
    return str(info.value.details())


def _health(daemon: DaemonProcess) -> int:
    with daemon.channel() as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=ADMISSION_SERVICE), timeout=10
        )
    return int(reply.status)


def _pods(daemon: DaemonProcess) -> dict[str, tuple[object, ...]]:
    """UID -> what each admitted pod holds, as the daemon lists it."""
    return {p.uid: held(p) for p in daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods}


def _admit(daemon: DaemonProcess, manifest: str) -> pb.AdmitResponse:
    reply = admit(daemon, manifest)
    assert reply.admitted, reply.message
    return reply


# ---- 1. one bad pod stalls nothing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "manifest"),
    [
        ("metadata.uid", pod_yaml("long-uid", uid="u" * 300)),
        ("metadata.name", pod_yaml("n" * 16_000)),
        ("metadata.namespace", pod_yaml("web").replace("namespace: default", "namespace: " + "s" * 64)),
        ("spec.containers[0].name", pod_yaml("web").replace("name: app", "name: App_1")),
        (
            "metadata.labels",
            pod_yaml("web").replace(
                "namespace: default", "namespace: default, labels: {app: " + "v" * 64 + "}"
            ),
        ),
    ],
)
def test_identifiers_past_their_limits_are_refused_and_the_next_pod_is_admitted(
    make_daemon: MakeDaemon, field: str, manifest: str
) -> None:
    daemon = make_daemon()
    before = _pods(daemon)
    request = pb.AdmitRequest(pod=pb.PodSource(manifest=manifest))
    details = _refusal(lambda: daemon.stub().Admit(request, timeout=10), grpc.StatusCode.INVALID_ARGUMENT)
    assert f": {field}: " in details, details
    assert len(details) < SHORT, len(details)
    assert _pods(daemon) == before
    # The node is not stalled: an ordinary pod goes in, and the admission service is healthy.
    assert _admit(daemon, pod_yaml("ordinary")).admitted
    assert _health(daemon) == SERVING


def test_annotations_over_256_kib_are_refused_without_echoing_them(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    big = "a" * (256 * 1024)
    manifest = pod_yaml("web").replace("namespace: default", f"namespace: default, annotations: {{x: {big}}}")
    details = _refusal(
        lambda: daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert details.endswith("metadata.annotations: Too long: may not be more than 262144 bytes"), details
    # 1 byte under the limit (key "x" + value): accepted.
    ok = pod_yaml("web").replace("namespace: default", f"namespace: default, annotations: {{x: {big[:-1]}}}")
    assert _admit(daemon, ok).admitted


def test_a_uid_of_any_characters_within_the_limit_names_a_writable_file(make_daemon: MakeDaemon) -> None:
    """128 characters, each four bytes in UTF-8: a name no filesystem takes as is; its file is hashed."""
    daemon = make_daemon()
    uid = "\U0001f600" * 128
    manifest = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "emoji", "namespace": "default", "uid": uid},
            "spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]},
        }
    )
    reply = _admit(daemon, manifest)
    assert reply.uid == uid
    path = daemon.state_dir / "pods" / file_name(uid)
    assert path.is_file() and len(path.name) < 100
    before = _pods(daemon)
    assert daemon.stop() == 0
    daemon.start()
    assert _pods(daemon) == before
    daemon.stub().RemovePod(pb.RemovePodRequest(uid=uid), timeout=10)
    assert not path.exists()


def test_a_per_file_write_error_refuses_that_call_and_leaves_the_node_writable(
    make_daemon: MakeDaemon,
) -> None:
    """A directory where the pod's file would go: its write fails for that path only (EISDIR). That call
    is undone and refused; the daemon is not degraded, and the next admission goes through."""
    daemon = make_daemon()
    first = _admit(daemon, pod_yaml("first"))
    blocker = daemon.state_dir / "pods" / file_name("uid-blocked")
    blocker.mkdir()
    details = _refusal(lambda: admit(daemon, pod_yaml("blocked")), grpc.StatusCode.UNAVAILABLE)
    assert details.startswith("state not saved, the call was undone: cannot write"), details
    assert str(blocker) in details
    assert set(_pods(daemon)) == {first.uid}
    assert _health(daemon) == SERVING
    assert _admit(daemon, pod_yaml("second")).admitted
    # A restart is not stopped by what it did not write.
    expected = _pods(daemon)
    assert daemon.stop() == 0
    daemon.start()
    assert _pods(daemon) == expected
    assert blocker.is_dir()


# ---- 2. the state directory removed while the daemon runs ---------------------------------------------


def test_state_directory_removed_while_running_is_rebuilt_before_the_next_answer(
    make_daemon: MakeDaemon, tmp_path: Path
) -> None:
    daemon = make_daemon()
    for name in ("a", "b", "c"):
        _admit(daemon, pod_yaml(name, dev=1 if name == "a" else 0))
    shutil.rmtree(daemon.state_dir)
    _admit(daemon, pod_yaml("d"))  # answered only once the whole node is back on disk
    acknowledged = _pods(daemon)
    assert len(acknowledged) == 4
    assert (daemon.state_dir / LOCK_NAME).is_file()
    assert {p.name for p in (daemon.state_dir / "pods").iterdir()} == {f"uid-{n}.json" for n in "abcd"}
    # The directory is this daemon's again: a second daemon on it is refused.
    (tmp_path / "x").mkdir()
    other = DaemonProcess.in_dir(
        tmp_path / "x", daemon.config.read_text(), (daemon.sysfs_root, daemon.procfs_root)
    )
    other.state_dir = daemon.state_dir
    with pytest.raises(RuntimeError, match="in use by another kubeletemu"):
        other.start(timeout=20)
    # Nothing acknowledged is lost to a kill -9.
    assert daemon.process is not None
    daemon.process.kill()
    daemon.process.wait(10)
    daemon.start()
    assert _pods(daemon) == acknowledged


def test_pods_directory_removed_alone_is_rebuilt(make_daemon: MakeDaemon) -> None:
    """``pods/`` appears with the first admission, after start-up: it is watched from then on too."""
    daemon = make_daemon()
    for name in ("a", "b"):
        _admit(daemon, pod_yaml(name))
    shutil.rmtree(daemon.state_dir / "pods")
    _admit(daemon, pod_yaml("c"))
    assert {p.name for p in (daemon.state_dir / "pods").iterdir()} == {f"uid-{n}.json" for n in "abc"}
    acknowledged = _pods(daemon)
    assert daemon.process is not None
    daemon.process.kill()
    daemon.process.wait(10)
    daemon.start()
    assert _pods(daemon) == acknowledged


def test_state_directory_removed_while_idle_is_rebuilt_by_the_periodic_check(
    tmp_path: Path, sample_tree: tuple[Path, Path]
) -> None:
    port = free_port()
    daemon = WatchedDaemon.in_dir(tmp_path, "", sample_tree, ["--metrics-address", f"127.0.0.1:{port}"])
    write_config(daemon.config)
    daemon.start()
    try:
        for name in ("a", "b"):
            _admit(daemon, pod_yaml(name))
        acknowledged = _pods(daemon)
        shutil.rmtree(daemon.state_dir)
        deadline = time.monotonic() + 15
        while not (daemon.state_dir / "pods" / "uid-b.json").exists():
            assert time.monotonic() < deadline, "not rebuilt within the periodic check"
            time.sleep(0.2)
        assert daemon.metric("kubeletemu_state_directory_rebuilds_total") == "1.0"
        assert (daemon.state_dir / "cpu_manager_state").is_file()
        assert daemon.process is not None
        daemon.process.kill()
        daemon.process.wait(10)
        daemon.start()
        assert _pods(daemon) == acknowledged
    finally:
        daemon.stop()


def _locked_by_another(lock: Path) -> bool:
    """Whether some other open file description holds an exclusive flock on ``lock``."""
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_the_lock_file_removed_alone_is_taken_again(tmp_path: Path, sample_tree: tuple[Path, Path]) -> None:
    """Without its lock file a second daemon could start on the directory: the next call re-takes it."""
    port = free_port()
    daemon = WatchedDaemon.in_dir(tmp_path, "", sample_tree, ["--metrics-address", f"127.0.0.1:{port}"])
    write_config(daemon.config)
    daemon.start()
    try:
        _admit(daemon, pod_yaml("a"))
        lock = daemon.state_dir / LOCK_NAME
        assert _locked_by_another(lock)
        lock.unlink()
        _admit(daemon, pod_yaml("b"))
        assert lock.is_file() and _locked_by_another(lock)
        assert daemon.metric("kubeletemu_state_directory_rebuilds_total") == "1.0"
        assert set(_pods(daemon)) == {"uid-a", "uid-b"}
    finally:
        daemon.stop()


def test_state_directory_replaced_by_a_stale_copy_is_overwritten_with_the_node(
    make_daemon: MakeDaemon, tmp_path: Path
) -> None:
    """A backup restored over a running daemon: the node in memory wins, and pod files the node does not
    have (removed since the backup) are removed, or a restart would bring them back."""
    daemon = make_daemon()
    _admit(daemon, pod_yaml("kept"))
    _admit(daemon, pod_yaml("gone"))
    backup = tmp_path / "backup"
    shutil.copytree(daemon.state_dir, backup)
    daemon.stub().RemovePod(pb.RemovePodRequest(uid="uid-gone"), timeout=10)
    _admit(daemon, pod_yaml("new"))
    acknowledged = _pods(daemon)
    shutil.rmtree(daemon.state_dir)
    shutil.copytree(backup, daemon.state_dir)
    _admit(daemon, pod_yaml("after"))
    acknowledged = _pods(daemon)
    assert set(acknowledged) == {"uid-kept", "uid-new", "uid-after"}
    assert {p.name for p in (daemon.state_dir / "pods").iterdir()} == {
        "uid-kept.json",
        "uid-new.json",
        "uid-after.json",
    }
    assert daemon.process is not None
    daemon.process.kill()
    daemon.process.wait(10)
    daemon.start()
    assert _pods(daemon) == acknowledged


# ---- 3. a missing checkpoint never empties the node ----------------------------------------------------


@pytest.mark.parametrize(
    ("checkpoint", "what"),
    [
        ("cpu_manager_state", "exclusive CPUs"),
        ("memory_manager_state", "memory blocks"),
        ("device-plugins/kubelet_internal_checkpoint", "devices"),
    ],
)
def test_a_removed_checkpoint_stops_startup_and_loses_nothing(
    make_daemon: MakeDaemon, checkpoint: str, what: str, tmp_path: Path
) -> None:
    daemon = make_daemon()
    for name in ("a", "b"):
        _admit(daemon, pod_yaml(name, dev=1))
    acknowledged = _pods(daemon)
    assert daemon.stop() == 0
    pod_files = sorted((daemon.state_dir / "pods").iterdir())
    contents = {p: p.read_bytes() for p in pod_files}
    target = daemon.state_dir / checkpoint
    saved = tmp_path / "saved-checkpoint"
    shutil.move(target, saved)
    with pytest.raises(RuntimeError) as info:
        daemon.start(timeout=15)
    log = str(info.value)
    assert "exited with 2" in log
    [line] = [line for line in log.splitlines() if line.startswith("kubeletemu: ")]
    assert str(target) in line and f"2 admitted pod(s) hold {what}" in line, line
    assert "put the file back" in line
    # Nothing deleted: every pod file is as it was.
    assert {p: p.read_bytes() for p in sorted((daemon.state_dir / "pods").iterdir())} == contents
    shutil.move(saved, target)
    daemon.start()
    assert _pods(daemon) == acknowledged


def test_a_removed_checkpoint_no_pod_depends_on_is_written_afresh(make_daemon: MakeDaemon) -> None:
    """BestEffort pods hold nothing the CPU Manager records: its checkpoint may go, as on the kubelet."""
    daemon = make_daemon()
    best_effort = pod_yaml("be").replace('limits: {cpu: "2", memory: 1Gi}', "{}")
    _admit(daemon, best_effort)
    acknowledged = _pods(daemon)
    assert daemon.stop() == 0
    (daemon.state_dir / "cpu_manager_state").unlink()
    daemon.start()
    assert _pods(daemon) == acknowledged
    assert (daemon.state_dir / "cpu_manager_state").is_file()


# ---- 4. bad bytes are INVALID_ARGUMENT with one line ---------------------------------------------------


def _nested(depth: int) -> str:
    return '{"apiVersion": "v1", "kind": "Pod", "x": ' + "[" * depth + "]" * depth + "}"


def test_deeply_nested_json_is_invalid_argument(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    daemon = make_daemon()
    for method, request in (
        ("Admit", pb.AdmitRequest(pod=pb.PodSource(manifest=_nested(1000)))),
        ("WouldAdmit", pb.WouldAdmitRequest(pod=pb.PodSource(manifest=_nested(100_000)))),
    ):
        details = _refusal(
            lambda m=method, r=request: getattr(daemon.stub(), m)(r, timeout=10),  # type: ignore[misc]
            grpc.StatusCode.INVALID_ARGUMENT,
        )
        assert details == "request: invalid JSON: nested more than 512 levels deep", details
    manifest = tmp_path / "deep.json"
    manifest.write_text(_nested(1000))
    out = cli(daemon, "admit", "-f", str(manifest))
    assert out.returncode == 2, out
    assert out.stderr.count("\n") == 1 and "nested more than 512 levels deep" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_a_refusal_echoes_a_16000_character_name_clipped(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    name = "n" * 16_000
    request = pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml(name)))
    details = _refusal(lambda: daemon.stub().Admit(request, timeout=10), grpc.StatusCode.INVALID_ARGUMENT)
    assert "(15936 more characters)" in details and len(details) < SHORT, details
    assert "must be no more than 253 characters" in details


def test_bytes_that_are_no_request_are_invalid_argument(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    with daemon.channel() as channel:
        raw = channel.unary_unary(
            "/kubeletemu.v1.Admission/Admit",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        # Field 1 (pod) as a length-delimited value whose length runs past the end.
        details = _refusal(lambda: raw(b"\x0a\xff\x01garbage", timeout=10), grpc.StatusCode.INVALID_ARGUMENT)
    assert details.startswith("the request is not a valid kubeletemu.v1.AdmitRequest: "), details
    assert _admit(daemon, pod_yaml("after")).admitted


# ---- 5. every start-up refusal names its file ----------------------------------------------------------


@pytest.mark.parametrize("damage", ["invalid-json", "checksum"])
def test_a_corrupt_device_checkpoint_stops_startup_naming_the_file(
    make_daemon: MakeDaemon, damage: str
) -> None:
    daemon = make_daemon()
    _admit(daemon, pod_yaml("a", dev=1))
    assert daemon.stop() == 0
    target = daemon.state_dir / "device-plugins" / "kubelet_internal_checkpoint"
    if damage == "invalid-json":
        target.write_text(target.read_text()[:-5])
    else:
        document = json.loads(target.read_text())
        document["Checksum"] = (document["Checksum"] + 1) % (1 << 32)
        target.write_text(json.dumps(document))
    with pytest.raises(RuntimeError) as info:
        daemon.start(timeout=15)
    [line] = [line for line in str(info.value).splitlines() if line.startswith("kubeletemu: ")]
    assert f"{target}: " in line, line
    expected = "invalid JSON in device manager checkpoint" if damage == "invalid-json" else "corrupted"
    assert expected in line, line


def test_sigterm_after_a_rebuild_releases_the_new_lock(make_daemon: MakeDaemon) -> None:
    """The re-taken lock is the one released at exit: the next daemon starts on the directory."""
    daemon = make_daemon()
    _admit(daemon, pod_yaml("a"))
    shutil.rmtree(daemon.state_dir)
    _admit(daemon, pod_yaml("b"))
    assert daemon.stop(signal.SIGTERM) == 0
    daemon.start()
    assert set(_pods(daemon)) == {"uid-a", "uid-b"}
