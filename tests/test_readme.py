"""Every example in the README and in docs/*.md runs as written, and every relative link resolves.

Each fenced ``sh``/``python`` block is marked by a hidden ``<!-- readme-example: NAME -->`` comment, and
NAME says how it is checked here. Three kinds are run for real: the quick start (a fresh virtualenv with
``pip install .`` in a copy of this checkout, the daemon started at a terminal, the next steps it prints
run in a second shell with a clean environment, followed by the client, podresources and simulation
examples, each from the checkout, which must hold no new file afterwards); the systemd installation (into
a scratch root, ``systemd-analyze verify`` on the installed unit); the Python snippet. Two cannot run here
and are checked as far as they can be: the shadow-mode examples need a real kubelet (``tests/shadow`` runs
the same commands against a kubelet double), and the benchmark loop takes minutes (``benchmarks/`` is its
own check): their shell must parse and every ``kubeletemu`` command in them must be one the CLI accepts.
The test command is ``.ci/run``'s.
"""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import select
import shlex
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubeletemu.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
# The README is the front door; each area's reference is a page of docs/.
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
MARKER = re.compile(r"<!-- readme-example: ([a-z-]+) -->\n```(\w+)\n(.*?)\n```", re.DOTALL)
# How many examples of each kind the pages hold: moving text between pages must not lose one.
COUNTS = {
    "quickstart": 1,
    "tests": 1,
    "client": 1,
    "podresources": 1,
    "simulate": 1,
    "schedule": 1,
    "systemd": 1,
    "needs-kubelet": 2,
    "benchmarks": 1,
    "fleet": 1,
    "python": 1,
}
# The quick start's scratch directory; the test moves it under its own temporary directory.
QUICKSTART_DIR = "/tmp/kubeletemu"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


@dataclass(frozen=True)
class Example:
    kind: str
    language: str
    body: str
    page: Path


def examples() -> list[Example]:
    return [
        Example(kind, lang, body, page)
        for page in PAGES
        for kind, lang, body in MARKER.findall(page.read_text())
    ]


def of_kind(kind: str) -> list[Example]:
    found = [e for e in examples() if e.kind == kind]
    assert found, f"no example of kind {kind} in README.md or docs/"
    return found


def test_every_example_is_marked_and_known() -> None:
    for page in PAGES:
        fenced = re.findall(r"^```(sh|python|bash)$", page.read_text(), re.MULTILINE)
        marked = [e for e in examples() if e.page == page]
        assert len(marked) == len(fenced), f"{page.name}: a ```sh or ```python block without a marker"
    assert Counter(e.kind for e in examples()) == COUNTS
    # The two fresh-machine commands stay on the front door.
    assert {e.kind for e in examples() if e.page == README} == {"quickstart", "tests"}


def test_the_test_command_is_what_ci_runs() -> None:
    [command] = of_kind("tests")
    ci = (REPO / ".ci" / "run").read_text()
    extras = "'.[test,plot,cluster,nodes,extender]'"
    assert f"pip install -e {extras}" in command.body and f"pip install --quiet -e {extras}" in ci
    assert command.body.endswith(".venv/bin/python -m pytest -q -n auto --dist loadfile")
    assert "-m pytest -q -n auto --dist loadfile\n" in ci
    assert "slow" not in ci  # CI runs the slow tests too: the quick subset is for developers


def test_the_quick_subset_is_named_and_registered() -> None:
    text = README.read_text()
    assert '`.venv/bin/python -m pytest -q -m "not slow"`' in text
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"slow: ' in pyproject and "--strict-markers" in pyproject  # a misspelt marker is an error


def test_python_snippet_prints_what_its_comment_says() -> None:
    [snippet] = of_kind("python")
    printed = re.findall(r"^print\(.*\)  # (.*)$", snippet.body, re.MULTILINE)
    assert printed
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet.body, str(snippet.page), "exec"), {})
    assert out.getvalue().splitlines() == printed


# ---- links ---------------------------------------------------------------------------------------------

FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """``text`` without fenced blocks and code spans, where brackets are code, not links."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces made ``-``, a repeated one suffixed ``-1``, ``-2``…"""
    seen: Counter[str] = Counter()
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", text), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return found


def test_anchors_are_githubs() -> None:
    assert anchors("# A `b` c\n## The exporter's view: `nrt`\n## A b c\n```\n# not a heading\n```\n") == {
        "a-b-c",
        "the-exporters-view-nrt",
        "a-b-c-1",
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked.read_text())):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


# ---- examples that cannot run here ---------------------------------------------------------------------


def _kubeletemu_commands(body: str) -> Iterator[list[str]]:
    """Every ``kubeletemu`` command line of a shell block (continuations joined, pipes split)."""
    for line in body.replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0]
        for part in re.split(r"\|\||&&|\|", line):
            words = shlex.split(part.replace("sudo ", "", 1))
            if words and os.path.basename(words[0]) == "kubeletemu":
                yield words[1:]


@pytest.mark.parametrize("kind", ["needs-kubelet", "benchmarks"])
def test_examples_that_cannot_run_here_parse(kind: str) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    for example in of_kind(kind):
        syntax = subprocess.run([bash, "-n"], input=example.body, text=True, capture_output=True, check=False)
        assert syntax.returncode == 0, syntax.stderr
        for argv in _kubeletemu_commands(example.body):
            try:
                build_parser().parse_args(argv)
            except SystemExit as exit:
                pytest.fail(f"README: kubeletemu {shlex.join(argv)} is refused by the CLI ({exit.code})")
    if kind == "benchmarks":
        assert sorted(REPO.glob("benchmarks/bench_*.py"))


# ---- the quick start, end to end -----------------------------------------------------------------------


def _checkout_copy(dest: Path) -> Path:
    """The files of this checkout (as git tracks them, with uncommitted changes), without virtualenvs."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = REPO / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def _second_terminal_env() -> dict[str, str]:
    """What a new terminal has: the system's directories on PATH (not the test environment's bin), no
    virtualenv, no KUBELETEMU_* variables."""
    env = {k: os.environ[k] for k in ("HOME", "LANG", "TMPDIR") if k in os.environ}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    return env


class Terminal:
    """A command run with its standard error on a pseudo-terminal, as a person starts the daemon."""

    def __init__(self, command: str, cwd: Path, log: Path) -> None:
        master, slave = pty.openpty()
        self._master = master
        self.log = log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                ["bash", "-c", command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=slave,
                env=_second_terminal_env(),
                start_new_session=True,
            )
        os.close(slave)
        self.screen = b""

    def wait_for(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while text.encode() not in self.screen:
            if time.monotonic() > deadline or self.process.poll() is not None:
                pytest.fail(
                    f"{text!r} never shown; terminal:\n{self.screen.decode()}\nlog:\n{self.log.read_text()}"
                )
            ready, _, _ = select.select([self._master], [], [], 0.5)
            if ready:
                with contextlib.suppress(OSError):
                    self.screen += os.read(self._master, 65536)
        return self.screen.decode()

    def stop(self) -> int:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # Ctrl-C
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        os.close(self._master)
        return self.process.returncode


def _run(
    script: str, cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``script`` in bash, in a session of its own: on a timeout the whole session goes (a fleet's worker
    processes too), and the test fails saying so."""
    with subprocess.Popen(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            pytest.fail(f"still running after {timeout:.0f}s: {script}")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@dataclass
class Quickstart:
    """The quick start, running: a copy of the checkout with the virtualenv its command made, the daemon it
    started at a terminal, the next steps it printed and their ``export`` line."""

    checkout: Path
    scratch: Path
    terminal: Terminal
    steps: list[str]

    @property
    def export(self) -> str:
        return self.steps[0]

    def new_files(self) -> list[str]:
        """Files the examples left in the checkout: untracked and not ignored (.venv and build/ are)."""
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=self.checkout,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [line[3:] for line in status.splitlines() if line.startswith("??")]

    def run(self, script: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``script`` in a second terminal after the ``export``, in the checkout: on its PATH only the
        system's directories and the quick start's virtualenv, so each tool it runs is one the quick start
        installed."""
        return _run(f"{self.export}\n{script}", self.checkout, _second_terminal_env(), timeout)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quickstart]:
    """The quick start's one command, verbatim, once for the module (it installs a fresh virtualenv from a
    copy of this checkout, pip's cache warm or not); the daemon is stopped with Ctrl-C at the end."""
    if shutil.which("git") is None:
        pytest.skip("copying the checkout needs git")
    base = tmp_path_factory.mktemp("quickstart")
    checkout = _checkout_copy(base / "checkout")
    # A git index of the copy, as it is before any example runs, so new files show as untracked.
    for git in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *git], cwd=checkout, check=True, capture_output=True)
    scratch = base / "q"
    [command] = of_kind("quickstart")
    # What the examples use and nothing of the test tools: the daemon and the grpcurl extra.
    assert QUICKSTART_DIR in command.body and "pip install '.[grpcurl]' " in command.body
    terminal = Terminal(command.body.replace(QUICKSTART_DIR, str(scratch)), checkout, base / "daemon.log")
    try:
        screen = terminal.wait_for("Stop it with Ctrl-C.", timeout=600)
        steps = [line[2:] for line in screen.splitlines() if line.startswith("  ")]
        yield Quickstart(checkout, scratch, terminal, steps)
    finally:
        status = terminal.stop()
    assert status == 0, terminal.log.read_text()
    assert not (scratch / "kubeletemu.sock").exists()  # removed at exit, being ours


@pytest.mark.slow
def test_quickstart_prints_next_steps_that_run(quickstart: Quickstart, tmp_path: Path) -> None:
    export = quickstart.export
    assert export.startswith("export PATH=") and (
        f"KUBELETEMU_SOCKET={quickstart.scratch}/kubeletemu.sock" in export
    )
    # The next steps, verbatim, in a second terminal (grpcurl is listed only where it is installed).
    second = _run("\n".join(quickstart.steps), tmp_path, _second_terminal_env())
    assert second.returncode == 0, second.stderr
    assert "topologyManagerPolicy=single-numa-node" in second.stdout
    assert "default/demo" in second.stdout and "ADMITTED" in second.stdout
    assert "no pods admitted" in second.stdout


@pytest.mark.slow
def test_the_examples_run_with_only_what_the_quickstart_installed(quickstart: Quickstart) -> None:
    # A new terminal has no grpcurl: only the quick start's virtualenv can provide one (as it does for a
    # reader, where `pip install .` alone left `grpcurl: command not found`).
    assert shutil.which("grpcurl", path=_second_terminal_env()["PATH"]) is None
    venv = quickstart.checkout / ".venv" / "bin"
    found = quickstart.run("command -v kubeletemu grpcurl")
    assert found.stdout.split() == [str(venv / "kubeletemu"), str(venv / "grpcurl")], found.stderr
    [podresources] = of_kind("podresources")
    for kind, expected in (
        ("client", ["prod/web", "ADMITTED", "exit 1: the node already holds prod/web", "removed prod/web"]),
        (
            "podresources",
            # -emit-defaults: NUMA node 0 is shown, not the `{}` proto3 JSON leaves of a zero ID.
            [
                "pfp0v001",
                "apiVersion: topology.node.k8s.io/v1alpha2",
                "node-0",
                '"ID": "0"',
                *_field_names_said_printed(podresources.page),
            ],
        ),
        ("simulate", ["simulation on synthetic: 4 configuration(s)"]),
        ("schedule", ["prod/web: scheduled on ", '"chosen": "', "profile topo-aware-scheduler: "]),
    ):
        for example in of_kind(kind):
            out = quickstart.run(example.body)
            assert out.returncode == 0, (
                f"{example.page.name}: {kind} example failed:\n{out.stdout}\n{out.stderr}"
            )
            for fragment in expected:
                assert fragment in out.stdout, (kind, fragment, out.stdout)
    # Each example that writes files moved to a scratch directory of its own first.
    assert quickstart.new_files() == []


def _field_names_said_printed(page: Path) -> list[str]:
    """The JSON field names the podresources page's table says the grpcurl calls print, quoted."""
    shapes = r"^\| `(?:List|GetAllocatableResources)`, .*\| ([^|]+) \|$"  # the "two JSON shapes" rows
    rows = re.findall(shapes, page.read_text(), re.MULTILINE)
    assert len(rows) == 2, rows
    names = [name for row in rows for name in re.findall(r"`(\w+)`", row)]
    assert len(names) >= 6, names
    return [f'"{name}"' for name in names]


@pytest.mark.slow  # the example's fleet: 25 nodes, six setups, five seeds each, on a simulated clock
def test_fleet_example_prints_the_table_shown(quickstart: Quickstart) -> None:
    [example] = of_kind("fleet")
    out = quickstart.run(example.body, timeout=1800)  # minutes on a loaded 2-core machine
    assert out.returncode == 0, out.stderr
    # The page's table is the command's summary, a row per setup: its TopologyAffinityError, pending p99
    # and time-to-Running p99 cells (mean [95 % interval]) and its pods never Running (a mean).
    row = r"^\| `([^`]+)`[^|]*\| ([^|]+?) \| ([^|]+?) \| ([^|]+?) \| ([^|]+?) \|$"
    shown = re.findall(row, example.page.read_text(), re.MULTILINE)
    rows = {name: tuple(cells) for name, *cells in shown}
    assert len(rows) == 6
    lines = out.stdout.splitlines()
    assert lines[0].startswith("fleet: 6 setups × 5 seeds = 30 runs; 25 node(s), 600 workload pod(s) a run;")
    assert max(len(line) for line in lines) <= 120  # the default table fits a terminal of 120 columns
    cell = r"(\S+ \[\S+, \S+\]|> run length(?: in \d+ of \d+ seeds)?)"  # or censored
    summary = re.compile(rf"^(\S+)\s+{cell}\s+{cell}\s+{cell}\s+(\S+)$")
    printed = [m.groups() for m in map(summary.match, lines) if m]
    for name, *cells in printed:
        assert rows.pop(name) == tuple(cells), name
    assert not rows
    assert quickstart.new_files() == []


# ---- the systemd installation ------------------------------------------------------------------------


def _into(root: Path, script: str) -> str:
    """The systemd steps with absolute paths moved under ``root`` and ``sudo`` dropped (the test is the
    administrator); ``systemctl`` needs systemd as PID 1, which a test machine does not have."""
    lines = []
    for line in script.splitlines():
        line = line.replace("sudo ", "")
        if line.startswith("systemctl"):
            continue
        for top in ("/opt/", "/etc/", "/usr/local/bin/"):
            line = line.replace(f" {top}", f" {root}{top}")
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.slow  # the README's systemd steps install a virtualenv of their own
@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.skipif(shutil.which("git") is None, reason="copying the checkout needs git")
def test_systemd_steps_install_what_the_unit_runs(tmp_path: Path) -> None:
    checkout = _checkout_copy(tmp_path / "checkout")
    root = tmp_path / "root"
    for present in ("usr/local/bin", "etc/systemd/system"):  # as on any machine with systemd
        (root / present).mkdir(parents=True)
    [steps] = of_kind("systemd")
    assert "systemctl daemon-reload && sudo systemctl enable --now kubeletemu" in steps.body
    out = _run(_into(root, steps.body), checkout, _second_terminal_env(), timeout=900)  # pip install .
    assert out.returncode == 0, out.stderr
    unit = root / "etc/systemd/system/kubeletemu.service"
    assert unit.read_text() == (REPO / "systemd/kubeletemu.service").read_text()
    assert (root / "etc/kubeletemu/config.yaml").read_text() == (REPO / "systemd/config.yaml").read_text()
    exec_start = re.search(r"^ExecStart=(\S+) serve ", unit.read_text(), re.MULTILINE)
    assert exec_start is not None
    binary = exec_start.group(1)
    assert not binary.startswith("/home/")  # ProtectHome=yes hides /home from the service
    installed = Path(f"{root}{binary}")
    assert os.access(installed, os.X_OK), f"the steps install no {binary}"
    version = subprocess.run([str(installed), "--version"], capture_output=True, text=True, check=False)
    assert version.returncode == 0 and version.stdout.startswith("kubeletemu "), version.stderr
    linked = subprocess.run(
        [str(root / "usr/local/bin/kubeletemu"), "--version"], capture_output=True, text=True, check=False
    )
    assert linked.stdout == version.stdout
    # verify resolves ExecStart on this machine: the same unit, its binary looked up inside the root.
    verified = tmp_path / "kubeletemu.service"
    verified.write_text(unit.read_text().replace(f"ExecStart={binary} ", f"ExecStart={installed} "))
    assert SYSTEMD_ANALYZE is not None
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", str(verified)], capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stderr.strip()) == (0, "")
