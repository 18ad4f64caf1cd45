"""What an operator can do to a running daemon's files, through the real daemon: a checkpoint deleted on
its own, the state directory replaced by a regular file, and a start under umask 000 (issue 40, rows 5, 7
and 8)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.daemon.conftest import sample_config, write_config
from tests.daemon.daemon_process import DaemonProcess
from tests.daemon.test_daemon_admission import admit, pod_yaml
from tests.daemon.test_degraded_state_dir import WatchedDaemon
from tests.daemon.test_metrics import free_port

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
CHECKPOINTS = ["cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint"]
REBUILDS = "kubeletemu_state_directory_rebuilds_total"


@pytest.fixture
def watched(tmp_path: Path, sample_tree: tuple[Path, Path]) -> Iterator[WatchedDaemon]:
    """A daemon with metrics (not started), on the sample configuration with two devices."""
    daemon = WatchedDaemon.in_dir(
        tmp_path, "", sample_tree, ["--metrics-address", f"127.0.0.1:{free_port()}"]
    )
    write_config(daemon.config)
    yield daemon
    daemon.stop()


def _pods(daemon: DaemonProcess) -> dict[str, object]:
    return {p.uid: p for p in daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods}


def _until(done: Callable[[], bool], what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


# ---- row 5: a checkpoint deleted while the daemon runs ------------------------------------------------


@pytest.mark.parametrize("checkpoint", CHECKPOINTS)
def test_a_deleted_checkpoint_is_written_back_from_memory(watched: WatchedDaemon, checkpoint: str) -> None:
    daemon = watched.start(timeout=60)
    for name in ("a", "b"):
        assert admit(daemon, pod_yaml(name, dev=1)).admitted
    target = daemon.state_dir / checkpoint
    saved = target.read_bytes()
    acknowledged = _pods(daemon)
    # Found by the next Admit, which answers only once the checkpoint is back.
    target.unlink()
    assert admit(daemon, pod_yaml("c")).admitted
    assert target.is_file()
    assert daemon.metric(REBUILDS) == "1.0"
    acknowledged = _pods(daemon)
    # Found by the periodic check while nothing is asked.
    saved = target.read_bytes()
    target.unlink()
    _until(target.is_file, f"{target} not written back by the periodic check")
    assert target.read_bytes() == saved
    assert daemon.metric(REBUILDS) == "2.0"
    # Deleted just before a clean stop: the stop writes it back, and the next start is not refused.
    target.unlink()
    assert daemon.stop(signal.SIGTERM) == 0
    assert target.read_bytes() == saved
    daemon.start(timeout=60)
    assert _pods(daemon) == acknowledged


def test_health_is_not_serving_while_a_checkpoint_cannot_be_written_back(watched: WatchedDaemon) -> None:
    """A directory where the checkpoint was: it cannot be written back until that goes."""
    daemon = watched.start(timeout=60)
    assert admit(daemon, pod_yaml("a")).admitted
    target = daemon.state_dir / "cpu_manager_state"
    saved = target.read_bytes()
    target.unlink()
    target.mkdir()
    _until(lambda: daemon.admission_health() == NOT_SERVING, "health still SERVING")
    with pytest.raises(grpc.RpcError) as refused:
        admit(daemon, pod_yaml("b"))
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert str(target) in str(refused.value.details()), refused.value.details()
    assert daemon.metric("kubeletemu_state_directory_writable") == "0.0"
    target.rmdir()
    _until(lambda: daemon.admission_health() == SERVING, "health not SERVING once the file can be written")
    assert target.read_bytes() == saved
    assert admit(daemon, pod_yaml("b")).admitted


# ---- row 7: the state directory replaced by a regular file --------------------------------------------


def test_a_state_directory_that_is_a_file_is_named_as_such(
    make_daemon: Callable[..., DaemonProcess], tmp_path: Path, sample_tree: tuple[Path, Path]
) -> None:
    # At start-up: exit 2 (the operator's path is wrong), one line saying what is in the way.
    (tmp_path / "s").mkdir()
    starting = DaemonProcess.in_dir(tmp_path / "s", sample_config(), sample_tree)
    starting.state_dir.write_text("not a directory")
    with pytest.raises(RuntimeError) as info:
        starting.start(timeout=30)
    assert "exited with 2" in str(info.value)
    [line] = [line for line in str(info.value).splitlines() if line.startswith("kubeletemu: ")]
    what = "is not a directory: a regular file is in its place"
    assert line == f"kubeletemu: the state directory {starting.state_dir} {what}"
    # While running: the refusal says so too, not "File exists" as if another daemon held it.
    daemon = make_daemon()
    assert admit(daemon, pod_yaml("a")).admitted
    shutil.rmtree(daemon.state_dir)
    daemon.state_dir.write_text("in the way")
    with pytest.raises(grpc.RpcError) as refused:
        admit(daemon, pod_yaml("b"))
    details = str(refused.value.details())
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert (
        f"the state directory {daemon.state_dir} is not a directory: a regular file is in its place"
        in details
    )
    assert "File exists" not in details and "StateDirInUseError" not in details, details
    # Once the file goes, the node is written back whole.
    daemon.state_dir.unlink()
    assert admit(daemon, pod_yaml("b")).admitted
    assert {p.name for p in (daemon.state_dir / "pods").iterdir()} == {"uid-a.json", "uid-b.json"}


# ---- row 8: modes whatever the umask ------------------------------------------------------------------


def _created(root: Path) -> dict[str, int]:
    """Every path under ``root`` (itself included) with its permission bits."""
    out = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in sorted(root.rglob("*")):
        out[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return out


def test_everything_the_daemon_creates_has_its_mode_under_umask_000(
    tmp_path: Path, sample_tree: tuple[Path, Path]
) -> None:
    """On a 0755 state directory, the sockets in directories the daemon makes; with devices, so that
    device-plugins/ is made too."""
    daemon = WatchedDaemon.in_dir(tmp_path, "", sample_tree)
    write_config(daemon.config)
    daemon.prefix = ["sh", "-c", 'umask 000 && exec "$@"', "sh"]
    daemon.state_dir.mkdir(mode=0o755)
    os.chmod(daemon.state_dir, 0o755)
    daemon.socket = tmp_path / "run" / "a" / "k.sock"
    daemon.podresources_socket = tmp_path / "run" / "b" / "p.sock"
    daemon.start(timeout=60)
    try:
        assert admit(daemon, pod_yaml("a", dev=1)).admitted
        state, run = _created(daemon.state_dir), _created(tmp_path / "run")
    finally:
        assert daemon.stop() == 0
    assert state == {
        ".": 0o755,  # the operator's, kept
        "cpu_manager_state": 0o644,
        "device-plugins": 0o750,
        "device-plugins/kubelet_internal_checkpoint": 0o644,
        "kubeletemu.lock": 0o600,
        "memory_manager_state": 0o644,
        "pods": 0o750,
        "pods/uid-a.json": 0o600,
    }
    assert run == {".": 0o750, "a": 0o750, "a/k.sock": 0o660, "b": 0o750, "b/p.sock": 0o660}
