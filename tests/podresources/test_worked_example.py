"""The spec's worked two-NUMA example (podresources-and-fingerprints.md §4.3), end to end in the engine:
GetAllocatableResources, List, both fingerprints, and the exporter's NodeResourceTopology."""

from __future__ import annotations

from collections import Counter

import pytest

from kubeletemu.emulator import NodeEmulator
from kubeletemu.podresources import nrt, view
from kubeletemu.podresources.fingerprint import (
    METHOD_ALL,
    METHOD_WITH_EXCLUSIVE_RESOURCES,
    UnsupportedMethodError,
)
from tests.podresources.nodes import (
    WORKED_EXAMPLE_CONFIG,
    WORKED_EXAMPLE_HOST,
    WORKED_EXAMPLE_PODS,
    admit_all,
    make_emulator,
)

GI = 1 << 30
FP_EXCLUSIVE = "pfp0v001cfae40fe3a0d9250"
FP_ALL = "pfp0v0016713c6757092b15b"

# zone -> resource -> (capacity, allocatable, available), the spec's table, but for memory capacity: RTE
# publishes MemTotal, which is 10 GiB on this host (the spec's 8 GiB MemTotal cannot hold its 8 GiB of
# allocatable regular memory beside 2 GiB of hugepages), as the real RTE v0.24.0 does (tests/e2e).
EXPECTED_ZONES = {
    "node-0": {
        "cpu": (4, 3, 1),
        "memory": (10737418240, 7516192768, 6442450944),
        "hugepages-1Gi": (2147483648, 2147483648, 1073741824),
        "example.com/nic": (1, 1, 0),
    },
    "node-1": {
        "cpu": (4, 3, 3),
        "memory": (10737418240, 8589934592, 8589934592),
        "hugepages-1Gi": (2147483648, 2147483648, 2147483648),
        "example.com/nic": (1, 1, 1),
    },
}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> NodeEmulator:
    emulator = make_emulator(tmp_path_factory.mktemp("example"), WORKED_EXAMPLE_HOST, WORKED_EXAMPLE_CONFIG)
    admit_all(emulator, WORKED_EXAMPLE_PODS)
    return emulator


def test_allocatable_resources(example: NodeEmulator) -> None:
    allocatable = view.allocatable_resources(example)
    assert sorted(allocatable.cpu_ids) == [2, 3, 4, 5, 6, 7]
    assert Counter(
        (m.memory_type, m.size, tuple(n.ID for n in m.topology.nodes)) for m in allocatable.memory
    ) == (
        Counter(
            {
                ("memory", 7516192768, (0,)): 1,
                ("memory", 8589934592, (1,)): 1,
                ("hugepages-1Gi", 2 * GI, (0,)): 1,
                ("hugepages-1Gi", 2 * GI, (1,)): 1,
            }
        )
    )
    assert sorted(
        (d.resource_name, tuple(d.device_ids), tuple(n.ID for n in d.topology.nodes))
        for d in allocatable.devices
    ) == [("example.com/nic", ("n0",), (0,)), ("example.com/nic", ("n1",), (1,))]


def test_list(example: NodeEmulator) -> None:
    gu, bu = view.list_pods(example).response.pod_resources
    assert (gu.namespace, gu.name, bu.namespace, bu.name) == ("ns1", "gu-pod", "ns2", "bu-pod")
    [c1] = gu.containers
    assert c1.name == "c1" and sorted(c1.cpu_ids) == [2, 4]
    assert sorted((m.memory_type, m.size, tuple(n.ID for n in m.topology.nodes)) for m in c1.memory) == [
        ("hugepages-1Gi", GI, (0,)),
        ("memory", GI, (0,)),
    ]
    assert [(d.resource_name, list(d.device_ids), [n.ID for n in d.topology.nodes]) for d in c1.devices] == [
        ("example.com/nic", ["n0"], [0])
    ]
    [c] = bu.containers
    assert c.name == "c" and not c.cpu_ids and not c.memory and not c.devices


def test_fingerprints(example: NodeEmulator) -> None:
    assert view.node_fingerprint(example, METHOD_WITH_EXCLUSIVE_RESOURCES)[0] == FP_EXCLUSIVE
    assert view.node_fingerprint(example, METHOD_ALL)[0] == FP_ALL


def test_exporter_zones(example: NodeEmulator) -> None:
    topology = nrt.node_resource_topology(example)
    got = {
        zone.name: {r.name: (r.capacity, r.allocatable, r.available) for r in zone.resources}
        for zone in topology.zones
    }
    assert got == EXPECTED_ZONES
    costs = {zone.name: [(c.name, c.value) for c in zone.costs] for zone in topology.zones}
    assert costs == {"node-0": [("node-0", 10), ("node-1", 20)], "node-1": [("node-0", 20), ("node-1", 10)]}
    assert all(zone.type == "Node" for zone in topology.zones)


def test_exporter_attributes_and_object(example: NodeEmulator) -> None:
    topology = nrt.node_resource_topology(example)
    assert [(a.name, a.value) for a in topology.attributes] == [
        ("nodeTopologyPodsFingerprint", FP_EXCLUSIVE),
        ("nodeTopologyPodsFingerprintMethod", "with-exclusive-resources"),
        ("topologyManagerScope", "container"),
        ("topologyManagerPolicy", "single-numa-node"),
    ]
    manifest = topology.to_manifest()
    assert manifest["apiVersion"] == "topology.node.k8s.io/v1alpha2"
    assert manifest["kind"] == "NodeResourceTopology"
    assert manifest["metadata"] == {
        "name": "worker-1",
        # RTE's: the fingerprint's legacy place, and what triggered the scan (its ticker by default).
        "annotations": {
            "topology.node.k8s.io/fingerprint": FP_EXCLUSIVE,
            "k8stopoawareschedwg/rte-update": "periodic",
        },
    }
    assert manifest["zones"][0]["resources"][0] == {
        "name": "cpu",
        "capacity": "4",
        "allocatable": "3",
        "available": "1",
    }
    # With method all the fingerprint is the one nfd-topology-updater would publish.
    everything = nrt.node_resource_topology(example, METHOD_ALL)
    assert everything.attribute("nodeTopologyPodsFingerprint") == FP_ALL
    assert everything.attribute("nodeTopologyPodsFingerprintMethod") == "all"
    assert everything.zones == topology.zones
    reactive = nrt.node_resource_topology(example, METHOD_ALL, "reactive")
    assert reactive.annotations["k8stopoawareschedwg/rte-update"] == "reactive"
    # A library constant no exporter publishes: refused in RTE's words, as RTE refuses it at start-up.
    with pytest.raises(UnsupportedMethodError, match=r'^unsupported method  "exclude-terminal"$'):
        nrt.node_resource_topology(example, "exclude-terminal")
    with pytest.raises(ValueError, match="rte-update 'sometimes'"):
        nrt.node_resource_topology(example, METHOD_ALL, "sometimes")
