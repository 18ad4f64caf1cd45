"""The CLI's conventions, against the real daemon: where clients find it, output formats, files, pipes and
exit statuses (0 success, 1 refusal or negative answer, 2 usage or input error, 3 unreachable)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kubeletemu.cli import build_parser
from kubeletemu.cli.common import OUTPUTS
from tests.daemon.daemon_process import REPO, DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]


def pod(name: str, cpu: str = "2") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns}}\nspec:\n  containers:\n"
        f'  - name: c\n    resources:\n      limits: {{cpu: "{cpu}", memory: 1Gi}}\n'
    )


def run(
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    stdout: int | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PYTHONPATH=str(REPO))
    for name in ("KUBELETEMU_SOCKET", "KUBELETEMU_CONFIG"):
        full.pop(name, None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args],
        input=stdin,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        env=full,
        cwd=cwd,
        check=False,
    )


def test_version() -> None:
    out = run("--version")
    assert out.returncode == 0 and out.stdout == "kubeletemu 0.1.0\n"


CLIENT_COMMANDS: list[tuple[str, ...]] = [
    ("list",),
    ("topology",),
    ("fingerprint",),
    ("nrt",),
    ("admit", "-f", "p.yaml"),
    ("would-admit", "-f", "q.yaml"),
    ("least-numa-nodes", "-f", "q.yaml"),
    ("remove", "-f", "p.yaml"),
    ("simulate", "--live", "-f", "sim.yaml"),
]


def test_every_client_command_finds_the_daemon_through_the_environment_or_the_config(
    make_daemon: MakeDaemon, tmp_path: Path
) -> None:
    daemon = make_daemon()
    (tmp_path / "p.yaml").write_text(pod("p"))
    (tmp_path / "q.yaml").write_text(pod("q"))
    (tmp_path / "sim.yaml").write_text(
        "apiVersion: kubeletemu.io/v1alpha1\nkind: Simulation\nmatrix: {policies: [best-effort]}\n"
        "stream:\n- pods: q.yaml\n"
    )
    by_env = {"KUBELETEMU_SOCKET": str(daemon.socket)}
    for command in CLIENT_COMMANDS:
        out = run(*command, env=by_env, cwd=tmp_path)
        assert out.returncode == 0, (command, out.stderr)
    # shadow-report reaches it too: a daemon that is no shadow says so (a refusal, not unreachable).
    report = run("shadow-report", env=by_env)
    assert report.returncode == 1 and "FAILED_PRECONDITION: not in shadow mode" in report.stderr
    # The EmulatorConfiguration's socket: through --config, or $KUBELETEMU_CONFIG.
    config = tmp_path / "client.yaml"
    config.write_text(
        f"apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\nsocket: {daemon.socket}\n"
    )
    assert run("list", "--config", str(config)).returncode == 0
    assert run("topology", env={"KUBELETEMU_CONFIG": str(config)}).returncode == 0
    # --socket wins over both; a wrong one is unreachable (3) and says where it looked.
    wrong = run("list", "--socket", str(tmp_path / "nobody.sock"), env=by_env)
    assert wrong.returncode == 3 and f"cannot reach the daemon at {tmp_path / 'nobody.sock'}" in wrong.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [")
    bad = run("list", "--config", str(broken))
    assert bad.returncode == 2 and bad.stderr.startswith(f"kubeletemu: {broken}: ")


def test_every_command_that_prints_objects_takes_table_json_and_yaml() -> None:
    parser = build_parser()
    subcommands = next(a for a in parser._actions if a.dest == "command").choices
    assert isinstance(subcommands, dict)
    for name, sub in subcommands.items():
        if name in ("serve", "nodes", "extender"):  # the long-running processes print no objects
            continue
        output = [a for a in sub._actions if a.dest == "output"]
        # ``fleet`` adds wide (a row per run) and csv (one row per run) to the three every command has.
        choices = tuple(output[0].choices or ())
        assert output and choices[0] == "table" and set(OUTPUTS) <= set(choices), name


def test_outputs_carry_the_same_objects(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    daemon = make_daemon()
    socket = ("--socket", str(daemon.socket))
    admitted = run("admit", "-f", "-", "-o", "yaml", *socket, stdin=pod("a") + "---\n" + pod("b"))
    docs = list(yaml.safe_load_all(admitted.stdout))
    assert [(d["name"], d["admitted"]) for d in docs] == [("a", True), ("b", True)]
    as_json = json.loads(run("list", "-o", "json", *socket).stdout)
    assert yaml.safe_load(run("list", "-o", "yaml", *socket).stdout) == as_json
    assert [p["name"] for p in as_json["pods"]] == ["a", "b"]
    table = run("list", *socket).stdout
    # An aligned table per pod, CPUs as cpusets, memory in Kubernetes units.
    assert "  CONTAINER  KIND  NUMA           CPUS  MEMORY           DEVICES\n" in table
    assert "  c          app   0 (preferred)  1,9   memory 1Gi on 0  -\n" in table
    topology = run("topology", *socket).stdout
    assert topology.splitlines()[1].split() == [
        "NODE",
        "CPUS",
        "FREE",
        "CPUS",
        "MEMORY",
        "ALLOCATABLE",
        "MEMORY",
        "FREE",
    ]
    assert yaml.safe_load(run("topology", "-o", "yaml", *socket).stdout)["topology_manager_policy"] == (
        "single-numa-node"
    )
    assert run("fingerprint", "-o", "yaml", *socket).stdout.startswith("fingerprint: pfp0v001")


def test_repeated_files_and_directories(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    daemon = make_daemon()
    socket = ("--socket", str(daemon.socket))
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "1.yaml").write_text(pod("d1", "1"))
    (manifests / "2.json").write_text(json.dumps(yaml.safe_load(pod("d2", "1"))))
    (manifests / "notes.txt").write_text("not a manifest")
    (tmp_path / "single.yaml").write_text(pod("s", "1"))
    out = run("admit", "-f", str(tmp_path / "single.yaml"), "-f", str(manifests), "-o", "json", *socket)
    assert out.returncode == 0, out.stderr
    assert [json.loads(line)["name"] for line in out.stdout.splitlines()] == ["s", "d1", "d2"]
    # One bad file among good ones: nothing is sent (every file is read first), exit 2 naming it.
    (tmp_path / "bad.yaml").write_text(pod("x").replace('"2"', "banana"))
    (tmp_path / "good.yaml").write_text(pod("g", "1"))
    bad = run("admit", "-f", str(tmp_path / "good.yaml"), "-f", str(tmp_path / "bad.yaml"), *socket)
    assert bad.returncode == 2 and "banana" in bad.stderr and len(bad.stderr.splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run("admit", "-f", str(empty), *socket).returncode == 2
    names = [p["name"] for p in json.loads(run("list", "-o", "json", *socket).stdout)["pods"]]
    assert names == ["s", "d1", "d2"]
    # remove -f takes the same files.
    assert run("remove", "-f", str(manifests), *socket).returncode == 0
    assert [p["name"] for p in json.loads(run("list", "-o", "json", *socket).stdout)["pods"]] == ["s"]


def test_a_reader_that_went_away_ends_the_command_quietly(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    socket = ("--socket", str(daemon.socket))
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| head` does once it has what it wants
    try:
        listing = run("list", "-o", "json", *socket, stdout=write_end)
        # Two pods to admit; the first answer cannot be shown, so the second is never sent.
        admitted = run(
            "admit", "-f", "-", *socket, stdin=pod("p1", "1") + "---\n" + pod("p2", "1"), stdout=write_end
        )
    finally:
        os.close(write_end)
    for out in (listing, admitted):
        assert out.returncode == -signal.SIGPIPE and out.stderr == ""  # no traceback
    names = [p["name"] for p in json.loads(run("list", "-o", "json", *socket).stdout)["pods"]]
    assert names == ["p1"]


@pytest.mark.parametrize(
    ("args", "stdin", "status", "fragment"),
    [
        (("would-admit", "-f", "-"), pod("big", "15"), 1, "would-admit: pod ns/big: rejected: "),
        (("admit", "-f", "-"), pod("twice"), 1, "ALREADY_EXISTS"),
        (("remove", "--uid", "nope"), None, 1, "NOT_FOUND"),
        (("least-numa-nodes", "-f", "-"), pod("huge", "15"), 1, "no NUMA node combination fits pod ns/huge"),
        (("admit", "-f", "-"), "apiVersion: v1\nkind: Pod\n", 2, "metadata.name"),
        (("nrt", "--method", "exclude-terminal"), None, 2, "invalid choice"),
        (("topology", "--bogus"), None, 2, "unrecognized arguments"),
    ],
)
def test_exit_statuses(
    make_daemon: MakeDaemon, args: tuple[str, ...], stdin: str | None, status: int, fragment: str
) -> None:
    daemon = make_daemon()
    socket = ("--socket", str(daemon.socket))
    assert run("admit", "-f", "-", *socket, stdin=pod("twice")).returncode == 0
    out = run(*args, *socket, stdin=stdin)
    assert out.returncode == status, out.stderr
    # A negative answer too: the answer on standard output, one line saying so on standard error.
    assert out.stderr.startswith("kubeletemu: ") and fragment in out.stderr
    assert len(out.stderr.splitlines()) == 1, out.stderr
