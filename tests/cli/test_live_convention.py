"""Issue 27 item 8: one convention for every command. ``--socket``, ``$KUBELETEMU_SOCKET`` and ``--config``
only say where the daemon is; ``--live`` asks a command that also runs on its own (``simulate``,
``schedule``) to use the daemon's node. An exported ``KUBELETEMU_SOCKET`` changes nothing for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.support import MakeDaemon, kubeletemu, pod
from tests.daemon.daemon_process import DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

LOCAL_SIMULATION = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
topology:
  synthetic: {sockets: 2, coresPerSocket: 2, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 4}
matrix: {policies: [single-numa-node]}
stream:
- pod: {metadata: {name: app}, spec: {containers: [{name: c, resources: {limits: {cpu: "1", memory: 1Gi}}}]}}
  repeat: 2
"""
LIVE_SIMULATION = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
matrix: {policies: [single-numa-node]}
stream:
- pods: pod.yaml
"""


def write_files(daemon: DaemonProcess, tmp_path: Path) -> dict[str, str]:
    """pod.yaml, the two simulations, and elsewhere.yaml: the daemon's NRT under another node's name."""
    env = {"KUBELETEMU_SOCKET": str(daemon.socket)}
    (tmp_path / "pod.yaml").write_text(pod("web"))
    (tmp_path / "local.yaml").write_text(LOCAL_SIMULATION)
    (tmp_path / "live.yaml").write_text(LIVE_SIMULATION)
    published = kubeletemu("nrt", env=env)
    assert published.returncode == 0, published.stderr
    nrt = yaml.safe_load(published.stdout)
    nrt["metadata"]["name"] = "elsewhere"
    (tmp_path / "elsewhere.yaml").write_text(yaml.safe_dump(nrt))
    return env


def test_an_exported_socket_does_not_make_schedule_or_simulate_live(
    make_daemon: MakeDaemon, tmp_path: Path
) -> None:
    daemon = make_daemon()
    env = write_files(daemon, tmp_path)

    # schedule without --nrt or --live: it says what it needs, not "--nrt is required".
    alone = kubeletemu("schedule", "-f", "pod.yaml", env=env, cwd=tmp_path)
    assert alone.returncode == 2 and alone.stdout == ""
    assert alone.stderr == (
        "kubeletemu: schedule: which nodes? --nrt FILE (NodeResourceTopology, Node and Pod objects) or "
        "--live (the daemon's node, and any --nrt objects)\n"
    )
    # With --nrt: the objects alone, here; the daemon's node is not asked.
    here = kubeletemu(
        "schedule", "-f", "pod.yaml", "--nrt", "elsewhere.yaml", "-o", "json", env=env, cwd=tmp_path
    )
    assert here.returncode == 0, here.stderr
    assert [n["name"] for n in json.loads(here.stdout)["nodes"]] == ["elsewhere"]
    # With --live: the daemon's node first, found through the environment, then the objects.
    live = kubeletemu(
        "schedule", "-f", "pod.yaml", "--nrt", "elsewhere.yaml", "--live", "-o", "json", env=env, cwd=tmp_path
    )
    assert live.returncode == 0, live.stderr
    own = yaml.safe_load(kubeletemu("nrt", env=env).stdout)["metadata"]["name"]
    assert [n["name"] for n in json.loads(live.stdout)["nodes"]] == [own, "elsewhere"]

    # simulate: the file's own topology, here, whatever the environment says...
    local = kubeletemu("simulate", "-f", "local.yaml", env=env, cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    assert local.stdout.startswith("simulation on synthetic")
    # ... and with --live the daemon's node.
    on_node = kubeletemu("simulate", "--live", "-f", "live.yaml", env=env, cwd=tmp_path)
    assert on_node.returncode == 0, on_node.stderr
    assert on_node.stdout.startswith("simulation on live node ")


def test_live_finds_the_daemon_as_every_client_does(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    """``--live`` with ``--socket``, or with ``--config`` naming an EmulatorConfiguration's socket."""
    daemon = make_daemon()
    write_files(daemon, tmp_path)
    config = tmp_path / "client.yaml"
    config.write_text(
        f"apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\nsocket: {daemon.socket}\n"
    )
    for where in (("--socket", str(daemon.socket)), ("--config", str(config))):
        out = kubeletemu("schedule", "-f", "pod.yaml", "--live", *where, cwd=tmp_path)
        assert out.returncode == 0, (where, out.stderr)
        out = kubeletemu("simulate", "-f", "live.yaml", "--live", *where, cwd=tmp_path)
        assert out.returncode == 0 and out.stdout.startswith("simulation on live node "), (where, out.stderr)


def test_where_without_live_is_refused_not_ignored(tmp_path: Path) -> None:
    """``--socket`` alone once meant "on the daemon" for these two: given without ``--live`` it is a usage
    error naming the fix, before any file is read or daemon asked."""
    (tmp_path / "pod.yaml").write_text(pod("web"))
    cases = [
        (("schedule", "-f", "pod.yaml", "--socket", "k.sock"), "schedule: --socket only says"),
        (("simulate", "-f", "sim.yaml", "--socket", "k.sock"), "simulate: --socket only says"),
        (("simulate", "-f", "sim.yaml", "--config", "c.yaml"), "simulate: --config only says"),
        (
            ("schedule", "-f", "pod.yaml", "--socket", "k.sock", "--config", "c.yaml"),
            "schedule: --socket and --config only say",
        ),
    ]
    for args, start in cases:
        out = kubeletemu(*args, cwd=tmp_path)
        assert out.returncode == 2 and out.stdout == "", out.stderr
        assert out.stderr.startswith(f"kubeletemu: {start} where the daemon is; add --live to use its node")
        assert len(out.stderr.splitlines()) == 1
    flavour = kubeletemu("schedule", "-f", "pod.yaml", "--nrt", "x.yaml", "--flavour", "rte", cwd=tmp_path)
    assert flavour.returncode == 2
    assert flavour.stderr == (
        "kubeletemu: schedule: --flavour picks how the daemon's own node is published: it needs --live\n"
    )
