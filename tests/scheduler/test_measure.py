"""The agreement measurement: exact nodes answer, models are compared, errors are kept with examples."""

from __future__ import annotations

import pytest

from kubeletemu.scheduler.catalog import Setup, setups
from kubeletemu.scheduler.measure import POLICIES, SCOPES, SHAPES, exact_nodes, measure
from kubeletemu.scheduler.profile import default_profile


@pytest.mark.slow
def test_exact_nodes_cover_every_shape_policy_and_scope() -> None:
    nodes = list(exact_nodes(len(SHAPES) * len(POLICIES) * len(SCOPES), seed=3))
    assert len({n.label for n in nodes}) == len(nodes)
    for node in nodes:
        # What the scheduler sees is what the node holds: its NRT zones and its admitted pods.
        assert node.info.topology is not None and len(node.info.topology.zones) == len(
            node.emulator.machine.numa_node_ids
        )
        assert len(node.info.pods) == len(node.emulator.registry)
        assert all(p.node_name == node.info.name for p in node.info.pods)
        # koordlet's objects add the node's Device: one NVIDIA GPU per NUMA node, on that node.
        device = node.infos["koordlet"].device
        assert device is not None
        assert [(d.type, d.minor, d.topology.node_id if d.topology else None) for d in device.devices] == [
            ("gpu", n, n) for n in node.emulator.machine.numa_node_ids
        ]


@pytest.mark.slow
def test_the_numa_blind_baseline_only_errs_by_letting_pods_through() -> None:
    """NodeResourcesFit runs the kubelet's own node-fit check, so it never rejects a pod the kubelet would
    admit; what it misses is NUMA alignment (and the managers' own refusals)."""
    [(_, counts)] = measure([Setup("fit", default_profile())], nodes=24, pods_per_node=10, seed=5).items()
    assert counts.total == 240 and counts.crash == 0
    assert counts.false_reject == 0
    assert counts.false_fit > 0 and counts.agree_fit > 0 and counts.agree_reject > 0
    _, example = counts.examples["false_fit"]
    assert example.model == "fits" and example.kubelet != "admit"


def test_the_catalog_starts_with_the_default_scheduler() -> None:
    catalog = setups()
    assert catalog[0].label == "NodeResourcesFit (default)"
    # Each setup reads the NRT its cluster's exporter publishes.
    assert {s.label: s.flavour for s in catalog}["NodeNUMAResource"] == "koordlet"
    assert {s.label: s.flavour for s in catalog}["NodeResourceTopologyMatch/LeastNUMANodes"] == "rte"
