"""Reading the kubelet: one consistent snapshot, change detection blind to Go map order, and errors that
name the file."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import pytest

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.shadow import KubeletPaths, SourceInvalidError, SourceUnreadableError, take_snapshot
from kubeletemu.shadow.access import explain, socket_problem
from tests.shadow.conftest import DirectSource
from tests.shadow.kubelet_double import FakeKubelet, write_like_kubelet


def test_paths() -> None:
    paths = KubeletPaths.resolve("/var/lib/kubelet")
    assert paths.config == Path("/var/lib/kubelet/config.yaml")
    assert paths.podresources_socket == Path("/var/lib/kubelet/pod-resources/kubelet.sock")
    assert paths.files() == (
        Path("/var/lib/kubelet/config.yaml"),
        Path("/var/lib/kubelet/cpu_manager_state"),
        Path("/var/lib/kubelet/memory_manager_state"),
        Path("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"),
    )
    custom = KubeletPaths.resolve("/srv/k", "/etc/kubernetes/kubelet.conf", "/run/pr.sock")
    assert (custom.config, custom.podresources_socket) == (
        Path("/etc/kubernetes/kubelet.conf"),
        Path("/run/pr.sock"),
    )
    assert paths.inside_root("/var/lib/kubelet/x.sock")
    assert paths.inside_root("/var/lib/kubelet")
    assert not paths.inside_root("/var/lib/kubelet2/x.sock")
    assert not paths.inside_root("/run/kubeletemu/k.sock")


def test_snapshot_and_digest(kubelet: FakeKubelet) -> None:
    paths = KubeletPaths.resolve(kubelet.root)
    first = take_snapshot(paths, DirectSource(kubelet))
    assert first.warnings == ()
    assert first.checkpoints.cpu_policy == "static"
    assert first.files.config == (kubelet.root / "config.yaml").read_bytes()
    # The kubelet lists pods and devices in Go map order: a reordering is no change.
    reordered = v1.ListPodResourcesResponse(pod_resources=list(reversed(kubelet.listing.pod_resources)))
    kubelet.listing = reordered
    allocatable = v1.AllocatableResourcesResponse()
    allocatable.CopyFrom(kubelet.allocatable)
    devices = list(allocatable.devices)
    del allocatable.devices[:]
    allocatable.devices.extend(reversed(devices))
    kubelet.allocatable = allocatable
    assert take_snapshot(paths, DirectSource(kubelet)).digest == first.digest
    # A pod without exclusive resources changes only the List; a checkpoint rewrite changes the files.
    kubelet.listing = v1.ListPodResourcesResponse(pod_resources=list(reordered.pod_resources)[1:])
    assert take_snapshot(paths, DirectSource(kubelet)).digest != first.digest
    kubelet.capture()
    assert take_snapshot(paths, DirectSource(kubelet)).digest == first.digest
    kubelet.tamper_cpus("11111111-0000-0000-0000-00000000000a", "c", [8, 9])
    assert take_snapshot(paths, DirectSource(kubelet)).digest != first.digest


class WritingSource(DirectSource):
    """A kubelet that admits while it is being read: each List comes with a checkpoint rewrite."""

    def __init__(self, kubelet: FakeKubelet, writes: int) -> None:
        super().__init__(kubelet)
        self.writes = writes

    def list(self) -> v1.ListPodResourcesResponse:
        if self.writes:
            self.writes -= 1
            path = self.kubelet.root / "config.yaml"
            write_like_kubelet(path, path.read_bytes() + b"# rewritten\n")
        return super().list()


def test_a_read_during_writes_is_repeated(kubelet: FakeKubelet) -> None:
    paths = KubeletPaths.resolve(kubelet.root)
    source = WritingSource(kubelet, writes=1)
    snapshot = take_snapshot(paths, source)
    assert source.calls == 2
    assert snapshot.warnings == ()
    assert snapshot.files.config.endswith(b"# rewritten\n")

    source = WritingSource(kubelet, writes=10)
    snapshot = take_snapshot(paths, source)
    assert source.calls == 3
    assert snapshot.warnings == (
        "the kubelet's checkpoints changed during each of 3 reads; the pods listed may not match the "
        "checkpoints exactly until the next refresh",
    )


def test_missing_files(kubelet: FakeKubelet) -> None:
    paths = KubeletPaths.resolve(kubelet.root)
    (kubelet.root / "cpu_manager_state").unlink()
    with pytest.raises(SourceUnreadableError) as err:
        take_snapshot(paths, DirectSource(kubelet))
    assert str(err.value) == (
        f"cannot read the kubelet's CPU manager checkpoint {kubelet.root}/cpu_manager_state: "
        "it does not exist"
    )
    assert err.value.path == str(kubelet.root / "cpu_manager_state")
    missing = KubeletPaths.resolve(kubelet.root / "nope")
    with pytest.raises(SourceUnreadableError, match=f"config.yaml: {kubelet.root}/nope does not exist$"):
        take_snapshot(missing, DirectSource(kubelet))


@pytest.mark.parametrize(
    ("name", "what", "after", "problem"),
    [
        # The fake kubelet is master: it reads V4's data (dataChecksum), with no fallback to the embedded
        # V2 once data is there. The V2 reading of older kubelets: test_checkpoint_versions.py.
        (
            "cpu_manager_state",
            "CPU manager",
            '"data"',
            "could not load v4 checkpoint: checkpoint is corrupted",
        ),
        # Likewise 1.37's memory V3: its data is authoritative.
        (
            "memory_manager_state",
            "memory manager",
            '"data"',
            "could not load v3 checkpoint: checkpoint is corrupted",
        ),
        ("device-plugins/kubelet_internal_checkpoint", "device manager", "", "checkpoint is corrupted"),
    ],
)
def test_corrupt_checkpoints(kubelet: FakeKubelet, name: str, what: str, after: str, problem: str) -> None:
    """A checksum that does not match (a hand edit, a torn copy) is refused as the kubelet refuses it."""
    path = kubelet.root / name
    text = path.read_text()
    # Flip one digit of the content (after ``after``), not of the checksum.
    index = next(i for i, ch in enumerate(text) if ch.isdigit() and i > text.index(after))
    write_like_kubelet(path, (text[:index] + str((int(text[index]) + 1) % 10) + text[index + 1 :]).encode())
    with pytest.raises(SourceInvalidError) as err:
        take_snapshot(KubeletPaths.resolve(kubelet.root), DirectSource(kubelet))
    assert str(err.value) == f"the kubelet's {what} checkpoint {path} is not usable: {problem}"


def test_explanations(tmp_path: Path) -> None:
    missing = tmp_path / "a" / "b"
    assert explain(missing, FileNotFoundError(errno.ENOENT, "x"), "the file") == (
        f"cannot read the file {missing}: {tmp_path}/a does not exist"
    )
    odd = OSError(errno.EIO, "Input/output error")
    assert explain(tmp_path, odd, "the file") == f"cannot read the file {tmp_path}: Input/output error"
    assert socket_problem(tmp_path / "nope.sock", "the socket") == (
        f"cannot connect to the socket {tmp_path}/nope.sock: it does not exist"
    )
    plain = tmp_path / "plain"
    plain.write_text("")
    assert socket_problem(plain, "the socket") == f"cannot use the socket {plain}: it is not a unix socket"
    listening = socket.socket(socket.AF_UNIX)
    try:
        path = tmp_path / "s.sock"
        if len(str(path)) < 100:
            listening.bind(str(path))
            os.chmod(path, 0o600)
            assert socket_problem(path, "the socket") is None
    finally:
        listening.close()


def test_no_device_checkpoint_yet(empty_kubelet: FakeKubelet) -> None:
    """A kubelet without device plugins may never have written its device checkpoint: no allocations."""
    checkpoint = empty_kubelet.root / "device-plugins" / "kubelet_internal_checkpoint"
    checkpoint.unlink()
    paths = KubeletPaths.resolve(empty_kubelet.root)
    snapshot = take_snapshot(paths, DirectSource(empty_kubelet))
    assert snapshot.files.device_checkpoint is None
    assert snapshot.checkpoints.devices.entries == []
    (empty_kubelet.root / "device-plugins").rmdir()
    assert take_snapshot(paths, DirectSource(empty_kubelet)).digest == snapshot.digest
