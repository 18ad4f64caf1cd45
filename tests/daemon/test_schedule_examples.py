"""``kubeletemu schedule`` says which model decided (the profile and its plugins, each plugin's own score),
and every example KubeSchedulerConfiguration shipped in ``kubeletemu/data/examples`` loads and schedules a
pod through the real CLI: on the objects the daemon's ``nrt`` publishes (``--nrt``) and on the daemon's own
node (``--live``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeletemu.cli.schedule import EXAMPLES, EXAMPLES_DIR
from tests.daemon.conftest import sample_config
from tests.daemon.daemon_process import REPO, DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)


def pod(name: str, cpu: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: prod}}\nspec:\n  containers:\n"
        f'  - name: app\n    resources:\n      limits: {{cpu: "{cpu}", memory: 1Gi}}\n'
    )


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        check=False,
    )


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, sample_tree: tuple[Path, Path]) -> Iterator[Path]:
    """A daemon holding one 2-CPU pod; in its directory ``rte.yaml`` and ``koordlet.yaml`` (its objects as
    each exporter publishes them) and the pods to schedule: ``web.yaml`` (2 CPUs) and ``nine.yaml`` (9 CPUs:
    more than a NUMA node has, so the kubelet refuses it under single-numa-node)."""
    directory = tmp_path_factory.mktemp("sched")
    daemon = DaemonProcess.in_dir(directory, sample_config(), sample_tree).start()
    socket = ("--socket", str(daemon.socket))
    for name, cpu in (("held", "2"), ("web", "2"), ("nine", "9")):
        (directory / f"{name}.yaml").write_text(pod(name, cpu))
    assert cli("admit", "-f", "held.yaml", *socket, cwd=directory).returncode == 0
    for flavour in ("rte", "koordlet"):
        published = cli("nrt", "--flavour", flavour, *socket, cwd=directory)
        assert published.returncode == 0, published.stderr
        (directory / f"{flavour}.yaml").write_text(published.stdout)
    (directory / "socket").write_text(str(daemon.socket))
    yield directory
    daemon.stop()


def schedule(node: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """The JSON document and the table of one question, and the exit status (the same for both)."""
    as_json = cli("schedule", *args, "-o", "json", cwd=node)
    table = cli("schedule", *args, cwd=node)
    assert as_json.returncode == table.returncode and as_json.returncode in (0, 1), as_json.stderr
    return as_json.returncode, json.loads(as_json.stdout), table.stdout


def live(node: Path) -> tuple[str, ...]:
    """The daemon's own node, the daemon named by its socket."""
    return ("--live", "--socket", (node / "socket").read_text())


def test_the_examples_shipped_are_the_ones_help_names() -> None:
    shipped = sorted(p.name for p in EXAMPLES_DIR.glob("scheduler-*.yaml"))
    assert shipped == sorted(EXAMPLES)
    helped = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "schedule", "--help"],
        capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(REPO)}, check=False,
    )  # fmt: skip
    assert helped.returncode == 0
    assert f"Example --scheduler-config files, in {EXAMPLES_DIR}:" in helped.stdout
    for name in shipped:
        assert f"  {name}  " in helped.stdout


# example -> the NUMA-aware plugin it runs on top of the default resource plugins
EXPECTED = {
    "scheduler-nrtmatch-passthrough.yaml": "NodeResourceTopologyMatch",
    "scheduler-nrtmatch-overreserve.yaml": "NodeResourceTopologyMatch",
    "scheduler-nrtmatch-discardreserved.yaml": "NodeResourceTopologyMatch",
    "scheduler-koordinator.yaml": "NodeNUMAResource",
}


@pytest.mark.parametrize("example", sorted(EXAMPLES))
@pytest.mark.parametrize("where", ["nrt", "live"])
def test_each_example_loads_and_schedules_a_pod(node: Path, example: str, where: str) -> None:
    plugin = EXPECTED[example]
    flavour = "koordlet" if plugin == "NodeNUMAResource" else "rte"
    config = ("--scheduler-config", str(EXAMPLES_DIR / example))
    source = ("--nrt", f"{flavour}.yaml") if where == "nrt" else live(node)
    status, doc, table = schedule(node, "-f", "web.yaml", *config, *source)
    assert status == 0 and doc["chosen"] == "vm", table
    profile = doc["profile"]
    expected_name = "koord-scheduler" if flavour == "koordlet" else "topo-aware-scheduler"
    assert profile == {
        "name": expected_name,
        "filter": ["NodeResourcesFit", plugin],
        "score": [
            {"plugin": "NodeResourcesFit", "weight": 1},
            {"plugin": "NodeResourcesBalancedAllocation", "weight": 1},
            {"plugin": plugin, "weight": 1},
        ],
    }
    [verdict] = doc["nodes"]
    assert [s["plugin"] for s in verdict["scores"]] == [s["plugin"] for s in profile["score"]]
    assert verdict["score"] == sum(s["score"] * s["weight"] for s in verdict["scores"])
    assert all(0 <= s["score"] <= 100 for s in verdict["scores"])
    lines = table.splitlines()
    assert lines[0] == "prod/web: scheduled on vm"
    assert lines[1].startswith(f"profile {expected_name}: filter NodeResourcesFit, {plugin}; score ")
    assert "NUMA-blind" not in table
    terms = "+".join(str(s["score"]) for s in verdict["scores"])
    assert lines[3].split()[:4] == ["vm", "yes", str(verdict["score"]), f"({terms})"]


def test_the_default_model_says_it_is_numa_blind(node: Path) -> None:
    """The 9-CPU pod: the default profile places it on a node the kubelet refuses it on
    (TopologyAffinityError), and says it reads no NodeResourceTopology; NodeResourceTopologyMatch filters
    the node out."""
    status, doc, table = schedule(node, "-f", "nine.yaml", *live(node))
    assert status == 0 and doc["chosen"] == "vm"
    assert doc["profile"]["name"] == "default-scheduler" and doc["profile"]["filter"] == ["NodeResourcesFit"]
    assert "NUMA-blind: no filter of this profile reads NodeResourceTopology" in table
    [verdict] = doc["nodes"]
    assert [(s["plugin"], s["weight"]) for s in verdict["scores"]] == [
        ("NodeResourcesFit", 1),
        ("NodeResourcesBalancedAllocation", 1),
    ]
    assert verdict["score"] == sum(s["score"] for s in verdict["scores"])
    refused = cli("would-admit", "-f", "nine.yaml", *live(node)[1:], cwd=node)
    assert refused.returncode == 1 and "TopologyAffinityError" in refused.stdout
    config = ("--scheduler-config", str(EXAMPLES_DIR / "scheduler-nrtmatch-passthrough.yaml"))
    status, doc, table = schedule(node, "-f", "nine.yaml", *config, *live(node))
    assert status == 1 and doc["chosen"] is None
    [verdict] = doc["nodes"]
    assert (verdict["fits"], verdict["score"], verdict["scores"]) == (False, None, [])
    assert table.splitlines()[0] == "prod/nine: no node fits"


def test_nrt_alone_and_live_see_different_nodes(node: Path) -> None:
    """The default model reads the Node's allocatable and the pods bound to it, neither of which an NRT
    carries: ``--nrt`` with the NRT alone sees an empty node (allocatable the zones' sum), ``--live`` the
    daemon's Node and its pod, so the same node scores differently (as docs/scheduler.md explains)."""
    _, alone, _ = schedule(node, "-f", "web.yaml", "--nrt", "rte.yaml")
    _, on_daemon, _ = schedule(node, "-f", "web.yaml", *live(node))
    fit_alone, fit_live = (d["nodes"][0]["scores"][0] for d in (alone, on_daemon))
    assert fit_alone["plugin"] == fit_live["plugin"] == "NodeResourcesFit"
    assert fit_alone["score"] > fit_live["score"]  # the held pod's 2 CPUs and 1Gi count only on the daemon
