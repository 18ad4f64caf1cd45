"""Numbers for people in Kubernetes units, numbers for programs as integers: every client command's
``-o table``, ``-o json`` and ``-o yaml`` through the real CLI against one real daemon (the bundled sample
topology, static CPU and Memory Managers), and ``topology`` under the CPU Manager's ``none`` policy."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeletemu.cli.common import binary_bytes
from kubeletemu.quantity import Quantity
from tests.daemon.conftest import sample_config
from tests.daemon.daemon_process import REPO, DaemonProcess
from tests.nodes import kubelet_config

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MiB = 1 << 20
# 1.5Gi of memory and 4Mi of 2Mi hugepages: both print in binary units, neither as a whole Gi.
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod, uid: uid-web}
spec:
  containers:
  - name: app
    resources:
      limits: {cpu: "2", memory: 1536Mi, hugepages-2Mi: 4Mi}
"""
OTHER = POD.replace("name: web", "name: other").replace("uid-web", "uid-other")


def cli(daemon: DaemonProcess, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args, "--socket", str(daemon.socket)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        check=False,
    )


def ok(daemon: DaemonProcess, *args: str, cwd: Path | None = None) -> str:
    out = cli(daemon, *args, cwd=cwd)
    assert out.returncode == 0, (args, out.stderr)
    return out.stdout


def digit_strings(doc: Any, path: str = "") -> Iterator[str]:
    """Where a number was printed as a string (``"1073741824"``), as the proto3 JSON mapping writes int64."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from digit_strings(value, f"{path}.{key}")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from digit_strings(value, f"{path}[{i}]")
    elif isinstance(doc, str) and re.fullmatch(r"-?\d+", doc):
        yield f"{path} = {doc!r}"


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory, sample_tree: tuple[Path, Path]
) -> Iterator[DaemonProcess]:
    """One daemon for the module, holding prod/web (admitted by the first use)."""
    directory = tmp_path_factory.mktemp("out")
    started = DaemonProcess.in_dir(directory, sample_config(), sample_tree).start()
    (directory / "web.yaml").write_text(POD)
    (directory / "other.yaml").write_text(OTHER)
    ok(started, "admit", "-f", str(directory / "web.yaml"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def files(daemon: DaemonProcess) -> Path:
    return daemon.config.parent


# Every client command that prints objects, as (arguments, what its table must show in units).
COMMANDS: list[tuple[tuple[str, ...], list[str]]] = [
    (("list",), ["memory 1.5Gi on 0", "hugepages-2Mi 4Mi on 0"]),
    (("would-admit", "-f", "other.yaml"), ["memory 1.5Gi on", "hugepages-2Mi 4Mi on"]),
    (("topology",), ["MEMORY ALLOCATABLE"]),
    (("nrt", "-o", "table"), ["16Gi", "12.4Gi"]),
    (("fingerprint",), ["pfp0v001"]),
    (("least-numa-nodes", "-f", "other.yaml"), ["needs 1 NUMA node(s)"]),
    (("schedule", "--live", "-f", "other.yaml"), ["profile default-scheduler:"]),
]


@pytest.mark.parametrize(("args", "shown"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_tables_print_bytes_in_kubernetes_units(
    daemon: DaemonProcess, files: Path, args: tuple[str, ...], shown: list[str]
) -> None:
    table = ok(daemon, *args, cwd=files)
    for fragment in shown:
        assert fragment in table, table
    # No byte count of 7 digits or more (1 MiB) reaches a person: 13958643712 is 13Gi.
    assert re.search(r"(?<![\w.:-])\d{7,}(?![\w.:-])", table) is None, table


def test_topology_and_nrt_tables_use_one_formatter(daemon: DaemonProcess, files: Path) -> None:
    """``nrt -o table``'s memory is what ``topology`` prints for the same bytes: ``binary_bytes``."""
    node = json.loads(ok(daemon, "topology", "-o", "json"))["numa_nodes"][0]
    allocatable, free = node["memory_allocatable_bytes"], node["memory_free_bytes"]
    assert (allocatable, free) == (13316915200, 13316915200 - 1536 * MiB)
    rows = [line.split() for line in ok(daemon, "topology").splitlines()[2:4]]
    assert rows[0][-2:] == [binary_bytes(allocatable), binary_bytes(free)] == ["12.4Gi", "10.9Gi"]
    nrt = {
        tuple(line.split()[:2]): line.split()[2:] for line in ok(daemon, "nrt", "-o", "table").splitlines()
    }
    assert nrt[("node-0", "memory")] == ["16Gi", "12.4Gi", "10.9Gi"]  # capacity: MemTotal, as RTE has it
    assert nrt[("node-0", "hugepages-2Mi")] == ["1Gi", "1Gi", "1020Mi"]
    assert nrt[("node-0", "cpu")] == ["8", "7", "5"]  # counts stay counts


@pytest.mark.parametrize(("args", "shown"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_json_and_yaml_carry_exact_integers(
    daemon: DaemonProcess, files: Path, args: tuple[str, ...], shown: list[str]
) -> None:
    args = tuple(a for a in args if a not in ("-o", "table"))
    as_json = [json.loads(line) for line in ok(daemon, *args, "-o", "json", cwd=files).splitlines()]
    as_yaml_text = ok(daemon, *args, "-o", "yaml", cwd=files)
    as_yaml = list(yaml.safe_load_all(as_yaml_text))
    assert as_json and len(as_json) == len(as_yaml)
    if args[0] == "nrt":
        # A Kubernetes object: its amounts are resource.Quantity strings, as the API server writes them
        # (and kubectl apply takes them).
        resource = as_yaml[0]["zones"][0]["resources"][1]
        # MemTotal with the hugepages included, as RTE v0.24.0 publishes it.
        assert resource["name"] == "memory" and Quantity.parse(resource["capacity"]).value() == 16 << 30
        return
    for doc in (*as_json, *as_yaml):
        assert list(digit_strings(doc)) == []
    assert re.search(r"'-?\d+'", as_yaml_text) is None, as_yaml_text  # no quoted number, key or value


def test_the_numbers_themselves(daemon: DaemonProcess, files: Path) -> None:
    listed = yaml.safe_load(ok(daemon, "list", "-o", "yaml"))
    memory = listed["pods"][0]["containers"][0]["memory"]
    assert [(m["memory_type"], m["size"]) for m in memory] == [
        ("memory", 1536 * MiB),
        ("hugepages-2Mi", 4 * MiB),
    ]
    assert json.loads(ok(daemon, "list", "-o", "json"))["pods"][0]["containers"][0]["memory"] == memory
    topology_text = ok(daemon, "topology", "-o", "yaml")
    topology = yaml.safe_load(topology_text)
    node = topology["numa_nodes"][0]
    assert next(iter(node)) == "id" and node["id"] == 0  # the message's field order, a zero id included
    assert node["distances"] == {0: 10, 1: 21}  # NUMA ids as integer keys, unquoted
    assert "distances:\n    0: 10\n    1: 21\n" in topology_text
    assert node["hugepages"][0] == {
        "page_size_bytes": 2 * MiB,
        "total_bytes": 1 << 30,
        "allocatable_bytes": 1 << 30,
        "free_bytes": (1 << 30) - 4 * MiB,
    }
    # JSON object keys are strings: the same map, keyed "0" and "1".
    assert json.loads(ok(daemon, "topology", "-o", "json"))["numa_nodes"][0]["distances"] == {
        "0": 10,
        "1": 21,
    }
    least = json.loads(ok(daemon, "least-numa-nodes", "-f", "other.yaml", "-o", "json", cwd=files))
    assert isinstance(least["score"], int) and least["numa_nodes"] == 1


@pytest.fixture(scope="module")
def unpinned(
    tmp_path_factory: pytest.TempPathFactory, sample_tree: tuple[Path, Path]
) -> Iterator[DaemonProcess]:
    """A daemon under cpuManagerPolicy none (and no Memory Manager)."""
    config = kubelet_config("none", managers="cpuManagerPolicy: none\n")
    started = DaemonProcess.in_dir(tmp_path_factory.mktemp("none"), config, sample_tree).start()
    yield started
    started.stop()


def test_topology_under_the_none_cpu_policy_shows_the_shared_pool(unpinned: DaemonProcess) -> None:
    """policy_none.go pins nothing (GetAllocatableCPUs is empty): an idle node is not "0 free"."""
    doc = json.loads(ok(unpinned, "topology", "-o", "json"))
    assert doc["cpu_manager_policy"] == "none" and doc["numa_nodes"][0]["free_cpu_ids"] == []
    lines = ok(unpinned, "topology").splitlines()
    assert lines[2].split()[:4] == ["0", "0-3,8-11", "shared", "0-3,8-11"]
    assert lines[3].split()[:4] == ["1", "4-7,12-15", "shared", "4-7,12-15"]
    assert "cpuManagerPolicy=none: no CPU is exclusive; every container shares the node's CPUs" in lines
    assert "0 (-)" not in "\n".join(lines)
