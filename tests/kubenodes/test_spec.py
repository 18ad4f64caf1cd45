"""The Nodes file: the fleet's nodeGroups with a start-up latency per group, and the heartbeat fields of
each group's KubeletConfiguration defaulted as the kubelet defaults them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubeletemu.fleet.distributions import FIXED, Distribution
from kubeletemu.fleet.spec import DEFAULT_STARTUP_LATENCY
from kubeletemu.nodes.spec import Heartbeats, NodesError, load_nodes, parse_nodes
from tests.fleet.conftest import KUBELET_CONFIG

NODES = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Nodes
seed: 7
nodeGroups:
- name: numa
  count: 3
  topology:
    synthetic: {sockets: 2, coresPerSocket: 4, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 16}
  config: [kubelet-config.yaml]
  labels: {pool: numa}
  kubeletVersion: "1.34"
  startupLatency: {fixed: 500ms}
- name: plain
  topology:
    synthetic: {sockets: 1, coresPerSocket: 4, threadsPerCore: 1, nodesPerSocket: 1, memoryGiBPerNode: 8}
"""


def write(tmp_path: Path, text: str, config: str = KUBELET_CONFIG) -> Path:
    (tmp_path / "kubelet-config.yaml").write_text(config)
    path = tmp_path / "nodes.yaml"
    path.write_text(text)
    return path


def test_groups_names_and_latencies(tmp_path: Path) -> None:
    spec = load_nodes(write(tmp_path, NODES))
    assert spec.seed == 7 and spec.node_count() == 4
    numa, plain = spec.groups
    assert numa.node_names() == ["numa-000", "numa-001", "numa-002"]
    assert plain.node_names() == ["plain-000"]
    assert numa.group.kubelet_version == "1.34" and numa.group.labels == (("pool", "numa"),)
    assert numa.startup_latency == Distribution(FIXED, 0.5)
    assert plain.startup_latency == DEFAULT_STARTUP_LATENCY
    # No heartbeat fields anywhere: the kubelet's defaults, the Lease renewed every 10 s.
    assert numa.heartbeats == Heartbeats(40, 10.0, 300.0) and numa.heartbeats.lease_renew_s == 10.0


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # defaults.go: an explicit update frequency is also the report frequency.
        ("nodeStatusUpdateFrequency: 4s\n", Heartbeats(40, 4.0, 4.0)),
        ("nodeStatusReportFrequency: 1m\n", Heartbeats(40, 10.0, 60.0)),
        ("nodeStatusUpdateFrequency: 4s\nnodeStatusReportFrequency: 1m\n", Heartbeats(40, 4.0, 60.0)),
        ("nodeLeaseDurationSeconds: 20\n", Heartbeats(20, 10.0, 300.0)),
    ],
)
def test_heartbeats_follow_the_kubelet_defaults(tmp_path: Path, fields: str, expected: Heartbeats) -> None:
    spec = load_nodes(write(tmp_path, NODES, KUBELET_CONFIG + fields))
    assert spec.groups[0].heartbeats == expected


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("  startupLatency: {fixed: 500ms}\n", "  startupLatency: {sometimes: 1s}\n"), "startupLatency"),
        (("  count: 3\n", "  count: 3\n  colour: blue\n"), "nodeGroups[0].colour: unknown field"),
        (("kind: Nodes\n", "kind: Nodez\n"), "kind: expected Nodes"),
        (("seed: 7\n", "seed: 7\nworkload: {}\n"), "workload: unknown field"),
        (('  kubeletVersion: "1.34"\n', '  kubeletVersion: "1.20"\n'), "kubeletVersion"),
    ],
)
def test_bad_files_name_the_field(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    with pytest.raises(NodesError, match=re.escape(message)) as caught:
        load_nodes(write(tmp_path, NODES.replace(*change)))
    assert str(caught.value).startswith(str(tmp_path / "nodes.yaml"))


def test_unknown_group_field_lists_the_members_key(tmp_path: Path) -> None:
    with pytest.raises(NodesError, match=r"kubeletVersion, startupLatency$"):
        load_nodes(write(tmp_path, NODES.replace("  count: 3\n", "  count: 3\n  colour: blue\n")))


def test_bad_heartbeat_fields(tmp_path: Path) -> None:
    with pytest.raises(NodesError, match="nodeStatusUpdateFrequency: invalid duration"):
        load_nodes(write(tmp_path, NODES, KUBELET_CONFIG + "nodeStatusUpdateFrequency: soon\n"))
    with pytest.raises(NodesError, match="nodeLeaseDurationSeconds: must be greater than 0"):
        load_nodes(write(tmp_path, NODES, KUBELET_CONFIG + "nodeLeaseDurationSeconds: -1\n"))


def test_a_fleet_file_gives_its_node_groups(fleet_dir: Path) -> None:
    spec = load_nodes(fleet_dir / "fleet.yaml")
    [small] = spec.groups
    assert small.group.name == "small" and small.group.count == 6
    assert small.startup_latency == DEFAULT_STARTUP_LATENCY  # the Fleet file's workload has none


def test_unreadable_file() -> None:
    with pytest.raises(NodesError, match="cannot read"):
        load_nodes("/nonexistent/nodes.yaml")


def test_parse_without_files() -> None:
    spec = parse_nodes(NODES.split("- name: numa")[0] + NODES.split("startupLatency: {fixed: 500ms}\n")[1])
    assert [g.group.name for g in spec.groups] == ["plain"]
