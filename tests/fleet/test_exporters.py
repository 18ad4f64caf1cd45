"""The exporters' event loops on a real emulated node and a test clock: what triggers a scan, what a scan
lists per kubelet version, and that an unchanged object is no write."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kubeletemu.emulator import NodeEmulator
from kubeletemu.fleet.exporters import make_exporter
from kubeletemu.fleet.exporters.listing import detect_topology_policy
from kubeletemu.fleet.kubelet import KubeletNode
from kubeletemu.fleet.spec import NFD, RTE, ExporterSpec, group_config, parse_fleet
from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod
from kubeletemu.podresources.fingerprint import ATTRIBUTE, ATTRIBUTE_METHOD, compute
from kubeletemu.scheduler.objects import NodeResourceTopology
from tests.fleet.conftest import SMALL, FakeClock

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)


def _node(fleet_dir: Path, version: str) -> KubeletNode:
    [group] = parse_fleet(SMALL, str(fleet_dir / "fleet.yaml"), fleet_dir).node_groups
    config = group_config(dataclasses.replace(group, kubelet_version=version))
    config = dataclasses.replace(config, emulator=dataclasses.replace(config.emulator, node_name="n-000"))
    return KubeletNode(0, "n-000", NodeEmulator(config, group.topology.machine()))


def _pod(name: str, cpu: str = "2") -> Pod:
    manifest = {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": cpu, "memory": "1Gi"}}}]},
    }
    return dataclasses.replace(pod_from_manifest(manifest), node_name="n-000")


class Writes:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.seen: list[tuple[float, NodeResourceTopology]] = []

    def __call__(self, node: KubeletNode, topology: NodeResourceTopology) -> None:
        self.seen.append((self.clock.now(), topology))


def test_rte_scans_on_its_ticker_and_the_notify_file_and_writes_only_changes(fleet_dir: Path) -> None:
    node, clock = _node(fleet_dir, "1.36"), FakeClock()
    writes = Writes(clock)
    rte = make_exporter(node, clock, ExporterSpec(60.0, RTE, notify_file=True), 15.0, writes)
    rte.start()
    assert [t for t, _ in writes.seen] == [0.0]
    before = writes.seen[0][1]
    assert before.annotations["k8stopoawareschedwg/rte-update"] == "periodic"
    # Admitted: no hook has run, nothing is scanned; the tick at 15 s sees the pod.
    clock.run_until(10.0)
    assert node.admit(_pod("p"))[0].admitted
    clock.run_until(14.0)
    assert len(writes.seen) == 1 and rte.scans == 1
    clock.run_until(15.0)
    assert [t for t, _ in writes.seen] == [0.0, 15.0]
    assert writes.seen[1][1].attribute(ATTRIBUTE) == compute([("default", "p")])
    # The notify file, touched for a Guaranteed pod: a reactive scan at once; the object differs only in its
    # rte-update annotation, which is a change.
    rte.container_started(guaranteed=True)
    assert writes.seen[-1][1].annotations["k8stopoawareschedwg/rte-update"] == "reactive"
    # A second reactive scan of the unchanged node is no write; a BestEffort pod's hook is no event.
    rte.container_started(guaranteed=True)
    rte.container_stopped(guaranteed=False)
    assert len(writes.seen) == 3 and rte.scans == 4
    # Ticks at 75 s, 135 s...: the first is a change (back to periodic), the next ones are not.
    clock.run_until(200.0)
    assert [t for t, _ in writes.seen] == [0.0, 15.0, 15.0, 75.0]
    assert rte.scans == 4 + 3


def test_rte_without_notify_file_ignores_the_hooks(fleet_dir: Path) -> None:
    node, clock = _node(fleet_dir, "1.36"), FakeClock()
    writes = Writes(clock)
    rte = make_exporter(node, clock, ExporterSpec(60.0, RTE, notify_file=False), 30.0, writes)
    rte.start()
    node.admit(_pod("p"))
    rte.container_started(guaranteed=True)
    assert rte.scans == 1


@pytest.mark.parametrize(("version", "listed"), [("1.33", True), ("1.34", False), ("master", False)])
def test_a_rejected_pod_is_listed_by_a_1_33_kubelet_only(fleet_dir: Path, version: str, listed: bool) -> None:
    """The pod manager keeps a rejected pod; 1.33's ``List`` returns it (no resources: RTE's
    with-exclusive-resources method skips it, ``all`` counts it), 1.34's active pods only."""
    node, clock = _node(fleet_dir, version), FakeClock()
    writes = Writes(clock)
    spec = ExporterSpec(0.0, RTE, notify_file=True, fingerprint_method="all")
    rte = make_exporter(node, clock, spec, 0.0, writes)
    assert node.admit(_pod("fits", "6"))[0].admitted
    assert not node.admit(_pod("too-big", "40"))[0].admitted
    rte.start()
    expected = [("default", "fits"), ("default", "too-big")] if listed else [("default", "fits")]
    assert writes.seen[-1][1].attribute(ATTRIBUTE) == compute(expected)
    assert writes.seen[-1][1].attribute(ATTRIBUTE_METHOD) == "all"
    # Deleted by the API server: the pod manager forgets it, the next scan signs without it.
    node.forget(_pod("too-big", "40"))
    rte.container_started(guaranteed=True)
    assert writes.seen[-1][1].attribute(ATTRIBUTE) == compute([("default", "fits")])


def test_nfd_scans_on_state_file_writes_and_signs_every_listed_pod(fleet_dir: Path) -> None:
    node, clock = _node(fleet_dir, "1.33"), FakeClock()
    writes = Writes(clock)
    nfd = make_exporter(node, clock, ExporterSpec(60.0, NFD), 5.0, writes)
    nfd.start()
    empty = writes.seen[0][1]
    # No pod listed: no fingerprint attribute at all; no method attribute, ever; the deprecated policy.
    assert empty.attribute(ATTRIBUTE) is None and empty.attribute(ATTRIBUTE_METHOD) is None
    assert empty.topology_policies == ("SingleNUMANodeContainerLevel",) and not empty.annotations
    node.admit(_pod("p"))
    nfd.container_started(guaranteed=True)  # no hook for nfd
    assert len(writes.seen) == 1
    nfd.state_files_written()
    assert writes.seen[-1][1].attribute(ATTRIBUTE) == compute([("default", "p")])
    # The containers exit: no state file is written, and 1.33's List still returns the pod with the CPUs
    # and memory the managers have not swept yet: a scan then publishes the same object.
    node.complete(_pod("p"))
    assert node.stale and not node.releases
    nfd.tick()
    assert len(writes.seen) == 2
    # The CPU Manager's reconcile releases its CPUs and rewrites cpu_manager_state: nfd's watch scans and
    # still signs the pod (every listed pod), its CPUs free again; its memory waits for an admission.
    assert node.reconcile(7.5)
    assert [(r.manager, r.cause) for r in node.releases] == [("cpu", "reconcile")]
    nfd.state_files_written()
    assert writes.seen[-1][1].attribute(ATTRIBUTE) == compute([("default", "p")])
    assert writes.seen[-1][1] != writes.seen[-2][1]
    report, swept = node.admit(_pod("q", "1"), 9.0)
    assert report.admitted and swept
    assert [(r.manager, r.cause) for r in node.releases][1:] == [("memory", "admission")]
    assert not node.stale and node.releases[-1].held_s == 9.0
    off = make_exporter(node, clock, ExporterSpec(60.0, NFD, kubelet_state_dir=False), 5.0, writes)
    off.start()
    off.state_files_written()
    assert off.scans == 1


def test_detect_topology_policy() -> None:
    assert detect_topology_policy("single-numa-node", "pod") == "SingleNUMANodePodLevel"
    assert detect_topology_policy("restricted", "container") == "RestrictedContainerLevel"
    assert detect_topology_policy("best-effort", "pod") == "BestEffortPodLevel"
    assert detect_topology_policy("none", "container") == "None"
    assert detect_topology_policy("single-numa-node", "node") == "None"
