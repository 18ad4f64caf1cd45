"""Shadow mode without privileges, reading the kubelet's files through group access: it works, and when a
file, directory or socket is out of reach it says exactly which, why, and who it is.

The daemon runs as the shipped unit runs it: uid 0 with an empty capability bounding set (``setpriv``), so
file permissions apply to it as to anyone (this interpreter lives under /root, out of reach of other uids).
The kubelet's files here belong to another uid and are shared with a group the daemon is in.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.shadow.kubelet_double import FakeKubelet, PodResourcesDouble
from tests.shadow.shadow_daemon import ShadowDaemon, wait_for

OWNER = 1000  # the owner of the kubelet's files, not us
GROUP = 4242  # the group they are shared with
IDENTITY = f"uid 0, gid 0, groups 0,{GROUP}"
SETPRIV = shutil.which("setpriv")
WITHOUT_PRIVILEGES = [
    SETPRIV or "setpriv",
    "--bounding-set=-all",
    "--inh-caps=-all",
    f"--groups={GROUP}",
    "--",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv to drop the capabilities"
    ),
]


def share_with_group(root: Path) -> None:
    """What an operator does: group read (and search) on the kubelet's root and the podresources socket."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chown(dirpath, OWNER, GROUP)
        os.chmod(dirpath, 0o750)
        for name in filenames:
            path = Path(dirpath) / name
            os.chown(path, OWNER, GROUP)
            os.chmod(path, 0o660 if path.is_socket() else 0o640)


def daemon(kubelet: FakeKubelet, workdir: Path) -> ShadowDaemon:
    return ShadowDaemon(kubelet, workdir, wrapper=WITHOUT_PRIVILEGES)


@pytest.fixture
def shared(kubelet: FakeKubelet, short_dir: Path) -> Iterator[tuple[FakeKubelet, Path]]:
    workdir = short_dir / "d"
    workdir.mkdir()
    with PodResourcesDouble(kubelet):
        share_with_group(kubelet.root)
        yield kubelet, workdir


def test_group_access_is_enough(shared: tuple[FakeKubelet, Path]) -> None:
    kubelet, workdir = shared
    running = daemon(kubelet, workdir).start()
    try:
        assert len(running.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods) == 6
        report = running.report()
        assert (report.containers_checked, len(report.divergences), report.last_error) == (7, 0, "")

        # The operator takes the CPU checkpoint away: the refresh fails, names it, and the mirror stays.
        cpu_state = kubelet.root / "cpu_manager_state"
        os.chmod(cpu_state, 0o600)
        report = wait_for(lambda: (r := running.report()).last_error and r)
        assert report.last_error == (
            f"cannot read the kubelet's CPU manager checkpoint {cpu_state}: permission denied (mode 0600, "
            f"owner {OWNER}:{GROUP}); this process ({IDENTITY}) needs read permission; grant it group or ACL "
            "access, or run as the file's owner"
        )
        assert len(running.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods) == 6
        os.chmod(cpu_state, 0o640)
        wait_for(lambda: running.report().last_error == "")
    finally:
        running.stop()


def test_start_up_names_the_unreadable_file(shared: tuple[FakeKubelet, Path]) -> None:
    kubelet, workdir = shared
    memory_state = kubelet.root / "memory_manager_state"
    os.chmod(memory_state, 0o600)
    code, output = daemon(kubelet, workdir).run_to_failure()
    assert code == 2
    assert output.strip().splitlines()[-1] == (
        f"kubeletemu: shadow mode: cannot read the kubelet's memory manager checkpoint {memory_state}: "
        f"permission denied (mode 0600, owner {OWNER}:{GROUP}); this process ({IDENTITY}) needs read "
        "permission; grant it group or ACL access, or run as the file's owner"
    )


def test_start_up_names_the_closed_directory(shared: tuple[FakeKubelet, Path]) -> None:
    kubelet, workdir = shared
    plugins = kubelet.root / "device-plugins"
    os.chmod(plugins, 0o700)
    code, output = daemon(kubelet, workdir).run_to_failure()
    assert code == 2
    assert output.strip().splitlines()[-1] == (
        f"kubeletemu: shadow mode: cannot read the kubelet's device manager checkpoint "
        f"{plugins}/kubelet_internal_checkpoint: permission denied on the directory {plugins} (mode 0700, "
        f"owner {OWNER}:{GROUP}), which this process ({IDENTITY}) may not enter; grant it group or ACL "
        "access (r-x), or bind-mount it read-only"
    )


def test_start_up_names_the_socket_it_may_not_connect_to(shared: tuple[FakeKubelet, Path]) -> None:
    kubelet, workdir = shared
    socket = kubelet.root / "pod-resources" / "kubelet.sock"
    os.chmod(socket, 0o640)  # readable is not enough: connecting to a unix socket needs write permission
    code, output = daemon(kubelet, workdir).run_to_failure()
    assert code == 2
    assert output.strip().splitlines()[-1] == (
        f"kubeletemu: shadow mode: cannot connect to the kubelet's podresources socket {socket}: permission "
        f"denied (mode 0640, owner {OWNER}:{GROUP}); this process ({IDENTITY}) needs write permission on the "
        "socket (connecting needs it); grant it group or ACL access, or run as the file's owner"
    )


def test_start_up_without_the_kubelet(kubelet: FakeKubelet, short_dir: Path) -> None:
    workdir = short_dir / "d"
    workdir.mkdir()
    code, output = ShadowDaemon(kubelet, workdir).run_to_failure()
    assert code == 2
    socket = kubelet.root / "pod-resources" / "kubelet.sock"
    assert output.strip().splitlines()[-1] == (
        f"kubeletemu: shadow mode: cannot connect to the kubelet's podresources socket {socket}: "
        "it does not exist"
    )
