"""Issue 27 item 3: the CLI imports only what the command it runs needs.

Checked through ``python -X importtime -m kubeletemu …`` (the real CLI in a subprocess): every module the
interpreter imported is on standard error, so a module-level import added to a command module (or to a
package ``__init__`` on the way) fails here. No timing is asserted: ``benchmarks/bench_cli.py`` measures.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import kubeletemu
from tests.cli.support import MakeDaemon, pod
from tests.cli.support import kubeletemu as run
from tests.daemon.daemon_process import REPO

# Libraries and engine packages no command needs before it runs; prefixes of module names.
HEAVY = (
    "grpc",
    "google.protobuf",
    "yaml",
    "simpy",
    "prometheus_client",
    "matplotlib",
    "structlog",
    "numpy",
    "psutil",
    "pyroute2",
    "uvloop",
    "xxhash",
    "tqdm",
    "ray",
    "kubeletemu._proto",
    "kubeletemu.config",
    "kubeletemu.daemon",
    "kubeletemu.emulator",
    "kubeletemu.manifest",
    "kubeletemu.scheduler",
    "kubeletemu.simulate",
    "kubeletemu.fleet",
    "kubeletemu.nodes",
    "kubeletemu.extender",
    "aiohttp",
    "lightkube",
    "httpx2",
    "kubeletemu.podresources",
    "kubeletemu.topologymanager",
    "kubeletemu.cpumanager",
    "hostprobe",
)
_IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|(?P<indent>\s*)(?P<name>\S+)$", re.MULTILINE)


def imported(
    *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The CLI's answer, and every module its process imported (``-X importtime`` lists each once)."""
    out = run(*args, env=env, python=("-X", "importtime"))
    modules = {m["name"] for m in _IMPORT_LINE.finditer(out.stderr)}
    assert "kubeletemu.cli" in modules, out.stderr[-2000:]  # the listing is there at all
    return out, modules


def heavy(modules: set[str], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        m
        for m in modules
        if any(m == h or m.startswith(h + ".") for h in HEAVY)
        and not any(m == a or m.startswith(a + ".") for a in allowed)
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("--help",),
        ("would-admit", "--help"),
        ("schedule", "--help"),
        ("serve", "--help"),
        ("would-admit", "--fille", "pod.yaml"),  # a usage error
        ("simulate", "-f", "sim.yaml", "--socket", "/nowhere"),  # refused before reading anything
    ],
)
def test_parsing_and_usage_errors_import_nothing_heavy(args: tuple[str, ...]) -> None:
    out, modules = imported(*args)
    assert out.returncode in (0, 2), out.stderr[-2000:]
    assert heavy(modules) == []


def test_clients_import_neither_grpc_nor_more_than_they_decode(
    make_daemon: MakeDaemon, tmp_path: Path
) -> None:
    """No command imports grpcio: the CLI speaks HTTP/2 itself (kubeletemu.cli.wire). ``list`` (a table
    with CPU sets and memory) decodes its answer from the generated schema, without the protobuf runtime
    or the stubs; ``would-admit``, ``admit`` and ``remove`` encode their requests from it too (issue 41
    item 11), and read the manifest (YAML, quantities, the fields' checks). None loads the engine, the
    configuration loader, the probe, nor the daemon's libraries (reflection, health)."""
    daemon = make_daemon()
    socket = ("--socket", str(daemon.socket))
    (tmp_path / "p.yaml").write_text(pod("p"))
    (tmp_path / "q.yaml").write_text(pod("q"))
    assert run("admit", "-f", str(tmp_path / "p.yaml"), *socket).returncode == 0
    out, modules = imported("list", *socket)
    assert out.returncode == 0 and "prod/p" in out.stdout, out.stderr[-2000:]
    assert heavy(modules, ("kubeletemu._proto", "kubeletemu.daemon", "hostprobe")) == []
    assert {m for m in modules if m.startswith(("kubeletemu._proto", "hostprobe", "kubeletemu.daemon"))} == {
        "kubeletemu._proto",
        "kubeletemu._proto.wireschema",  # the messages as plain data
        "hostprobe",
        "hostprobe.parse",  # the cpuset list format
        "kubeletemu.daemon",
        "kubeletemu.daemon.refusals",  # tells a daemon's UNAVAILABLE from an unreachable one
    }
    what_if = ("--policy", "restricted", "--policy-option", "max-allowable-numa-nodes=8")
    for args in (
        ("would-admit", "-f", str(tmp_path / "q.yaml"), *what_if),
        ("admit", "-f", str(tmp_path / "q.yaml")),
        ("remove", "-f", str(tmp_path / "q.yaml")),
        ("fingerprint",),
    ):
        out, modules = imported(*args, *socket)
        assert out.returncode == 0, (args, out.stderr[-2000:])
        assert not [m for m in modules if m.startswith(("google.protobuf", "grpc"))], args
        assert {m for m in modules if m.startswith("kubeletemu._proto")} == {
            "kubeletemu._proto",
            "kubeletemu._proto.wireschema",
        }, args
    assert "prod/q" in run("would-admit", "-f", str(tmp_path / "q.yaml"), *what_if, *socket).stdout
    client = ("kubeletemu._proto", "kubeletemu.daemon", "hostprobe", "yaml", "kubeletemu.manifest")
    _, modules = imported("would-admit", "-f", str(tmp_path / "q.yaml"), *socket)
    assert heavy(modules, client) == [
        "kubeletemu.config",
        "kubeletemu.config.errors",
        "kubeletemu.config.fields",
        "kubeletemu.config.validation",
    ]


def test_an_unreachable_daemon_is_reported_without_the_engine(tmp_path: Path) -> None:
    out, modules = imported("list", "--socket", str(tmp_path / "nobody.sock"))
    assert out.returncode == 3
    assert f"kubeletemu: cannot reach the daemon at {tmp_path / 'nobody.sock'}" in out.stderr
    assert heavy(modules, ("kubeletemu._proto", "kubeletemu.daemon")) == []
    assert {m for m in modules if m.startswith("kubeletemu.daemon")} == {
        "kubeletemu.daemon",
        "kubeletemu.daemon.refusals",
    }


def test_the_version_printed_is_the_installed_one() -> None:
    """``--version`` prints ``kubeletemu.__version__`` (importlib.metadata costs more than the rest of the
    command); it must be the version pyproject gives the package."""
    out = run("--version")
    assert out.returncode == 0 and out.stdout == f"kubeletemu {kubeletemu.__version__}\n"
    assert kubeletemu.__version__ == metadata.version("kubeletemu")
    text = (REPO / "pyproject.toml").read_text()
    assert f'\nversion = "{kubeletemu.__version__}"\n' in text


def test_hostprobe_names_stay_importable_and_probe_stays_the_function() -> None:
    """``hostprobe`` loads its modules on first use; the function ``hostprobe.probe`` shares its name with
    the module ``hostprobe.probe``, and importing the module first must not hide the function."""
    script = (
        "import hostprobe.probe, hostprobe, sys\n"
        "from hostprobe import ProbeError, HostTopology, probe, psutil_cross_check\n"
        "assert callable(hostprobe.probe) and hostprobe.probe is probe, hostprobe.probe\n"
        "assert hostprobe.probe is sys.modules['hostprobe.probe'].probe\n"
        "assert set(hostprobe.__all__) <= set(dir(hostprobe))\n"
        "try:\n    hostprobe.nothing\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit(1)\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60, check=False
    )
    assert done.stdout == "ok\n", done.stderr
    lazy = subprocess.run(
        [sys.executable, "-c", "import hostprobe.parse, sys; print(sorted(m for m in sys.modules "
         "if m.startswith('hostprobe')))"],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert lazy.stdout == "['hostprobe', 'hostprobe.parse']\n", lazy.stderr
