"""Issue 27 item 5: a negative answer exits 1 with its answer on standard output (table or JSON, as
asked) and one line on standard error saying what was refused; a container that holds no CPU shows ``-``
in the CPUS column, as MEMORY and DEVICES do, not ``shared -``. Against the real daemon (sample topology:
2 NUMA nodes of 8 CPUs, single-numa-node, static CPU and Memory Managers)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.support import MakeDaemon, kubeletemu, pod

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

AFFINITY = "TopologyAffinityError (Resources cannot be allocated with Topology locality)"


def test_a_rejected_pod_says_so_on_stderr(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    daemon = make_daemon()
    env = {"KUBELETEMU_SOCKET": str(daemon.socket)}
    (tmp_path / "big.yaml").write_text(pod("big", "12"))  # no NUMA node has 12 CPUs

    table = kubeletemu("would-admit", "-f", "big.yaml", env=env, cwd=tmp_path)
    assert table.returncode == 1
    assert table.stderr == f"kubeletemu: would-admit: pod prod/big: rejected: {AFFINITY}\n"
    lines = table.stdout.splitlines()
    assert lines[0].startswith("prod/big (") and "REJECTED TopologyAffinityError" in lines[0]
    [row] = [line for line in lines if line.startswith("  app ")]
    assert row.split() == ["app", "app", "-", "-", "-", "-"]  # NUMA, CPUS, MEMORY, DEVICES: nothing held

    as_json = kubeletemu("admit", "-f", "big.yaml", "-o", "json", env=env, cwd=tmp_path)
    assert as_json.returncode == 1
    assert as_json.stderr == f"kubeletemu: admit: pod prod/big: rejected: {AFFINITY}\n"
    doc = json.loads(as_json.stdout)
    assert (doc["admitted"], doc["reason"], doc["containers"][0]["cpu_ids"]) == (
        False,
        "TopologyAffinityError",
        [],
    )


def test_several_pods_one_line_naming_the_first_rejected(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    daemon = make_daemon()
    env = {"KUBELETEMU_SOCKET": str(daemon.socket)}
    (tmp_path / "pods.yaml").write_text(
        "---\n".join([pod("small", "1"), pod("big", "12"), pod("bigger", "13")])
    )
    out = kubeletemu("would-admit", "-f", "pods.yaml", env=env, cwd=tmp_path)
    assert out.returncode == 1
    assert (
        out.stderr == f"kubeletemu: would-admit: 2 of 3 pods rejected, the first pod prod/big: {AFFINITY}\n"
    )
    # Every answer is on standard output, in order.
    verdicts = {
        line.split()[0]: "ADMITTED" if line.endswith(": ADMITTED") else line.split(": ")[1].split()[0]
        for line in out.stdout.splitlines()
        if line.startswith("prod/")
    }
    assert verdicts == {"prod/small": "ADMITTED", "prod/big": "REJECTED", "prod/bigger": "REJECTED"}


def test_shared_cpus_are_still_shown_as_shared(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    """A container on the shared pool holds CPUs: its cell keeps ``shared`` and the pool."""
    daemon = make_daemon()
    env = {"KUBELETEMU_SOCKET": str(daemon.socket)}
    (tmp_path / "burstable.yaml").write_text(pod("half", "500m"))
    out = kubeletemu("admit", "-f", "burstable.yaml", env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stderr == ""
    [row] = [line for line in out.stdout.splitlines() if line.startswith("  app ")]
    assert re.search(r"  shared \d[\d,-]*  ", row), row


def test_no_node_fits_says_so_on_stderr(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    daemon = make_daemon()
    env = {"KUBELETEMU_SOCKET": str(daemon.socket)}
    published = kubeletemu("nrt", env=env)
    assert published.returncode == 0, published.stderr
    (tmp_path / "node.yaml").write_text(published.stdout)
    (tmp_path / "huge.yaml").write_text(pod("huge", "64"))
    out = kubeletemu("schedule", "-f", "huge.yaml", "--nrt", "node.yaml", cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr == "kubeletemu: schedule: no node fits pod prod/huge\n"
    assert out.stdout.startswith("prod/huge: no node fits\n")
