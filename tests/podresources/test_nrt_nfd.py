"""nfd-topology-updater's object (``kubeletemu nrt --flavour nfd``): its pod filter, its id → NUMA accounting
and memory draining, its capacities and attributes. The end-to-end check against the real updater is in
tests/e2e/test_exporters.py."""

from __future__ import annotations

from pathlib import Path

from kubeletemu.pod import Container, Pod
from kubeletemu.podresources import nrt, nrt_nfd
from kubeletemu.podresources.fingerprint import ATTRIBUTE
from kubeletemu.quantity import Quantity
from tests.podresources.nodes import (
    GENERAL_HOST,
    WORKED_EXAMPLE_CONFIG,
    WORKED_EXAMPLE_HOST,
    WORKED_EXAMPLE_PODS,
    admit_all,
    container,
    general_config,
    make_emulator,
    pod_manifest,
)

GIB = 1 << 30


def _resources(topology: nrt.NodeResourceTopology) -> dict[str, dict[str, tuple[int, int, int]]]:
    return {
        z.name: {r.name: (r.capacity, r.allocatable, r.available) for r in z.resources}
        for z in topology.zones
    }


def test_worked_example(tmp_path: Path) -> None:
    """The spec's worked example (podresources-and-fingerprints.md §4.3): the same available amounts as RTE,
    capacities from sysfs (MemTotal 10 GiB here), the fingerprint over every pod, no method attribute."""
    emulator = make_emulator(tmp_path, WORKED_EXAMPLE_HOST, WORKED_EXAMPLE_CONFIG)
    admit_all(emulator, WORKED_EXAMPLE_PODS)
    topology = nrt_nfd.nfd_node_resource_topology(emulator)
    assert _resources(topology) == {
        "node-0": {
            "cpu": (4, 3, 1),
            "memory": (10 * GIB, 7 * GIB, 6 * GIB),
            "hugepages-1Gi": (2 * GIB, 2 * GIB, GIB),
            "example.com/nic": (1, 1, 0),
        },
        "node-1": {
            "cpu": (4, 3, 3),
            "memory": (10 * GIB, 8 * GIB, 8 * GIB),
            "hugepages-1Gi": (2 * GIB, 2 * GIB, 2 * GIB),
            "example.com/nic": (1, 1, 1),
        },
    }
    assert [(a.name, a.value) for a in topology.attributes] == [
        ("topologyManagerPolicy", "single-numa-node"),
        ("topologyManagerScope", "container"),
        (ATTRIBUTE, "pfp0v0016713c6757092b15b"),
    ]
    assert topology.topology_policies == ("SingleNUMANodeContainerLevel",)
    assert topology.annotations == {}
    assert [[(c.name, c.value) for c in z.costs] for z in topology.zones] == [
        [("node-0", 10), ("node-1", 20)],
        [("node-0", 20), ("node-1", 10)],
    ]


def test_no_pods_no_fingerprint_unless_kept(tmp_path: Path) -> None:
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config())
    assert [a.name for a in nrt_nfd.nfd_node_resource_topology(emulator).attributes] == [
        "topologyManagerPolicy",
        "topologyManagerScope",
    ]
    kept = nrt_nfd.nfd_node_resource_topology(emulator, previous_fingerprint="pfp0v001aaaaaaaaaaaaaaaa")
    assert kept.attribute(ATTRIBUTE) == "pfp0v001aaaaaaaaaaaaaaaa"


def test_device_on_two_nodes_is_taken_twice_from_the_last(tmp_path: Path) -> None:
    """``makeResourceMap`` keeps the last NUMA node of a device listed on two; the pod's two entries (one per
    node) both take 1 from it, and nothing floors the result. RTE takes 1 from each node instead."""
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config())
    admit_all(
        emulator,
        pod_manifest("gpu", containers=container("c", requests="cpu: 100m", limits="example.com/gpu: 1")),
    )
    nfd = _resources(nrt_nfd.nfd_node_resource_topology(emulator))
    assert nfd["node-0"]["example.com/gpu"] == (1, 1, 1)
    assert nfd["node-1"]["example.com/gpu"] == (1, 1, -1)
    rte = _resources(nrt.node_resource_topology(emulator))
    assert rte["node-0"]["example.com/gpu"][2] == rte["node-1"]["example.com/gpu"][2] == 0


def test_memory_block_on_two_nodes_is_drained_in_order(tmp_path: Path) -> None:
    """A 20 GiB block over both nodes empties node 0's free memory first, then takes the rest from node 1
    (RTE charges 20 GiB to each, down to 0)."""
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config())
    admit_all(emulator, pod_manifest("big", containers=container("c", limits="cpu: 2, memory: 20Gi")))
    nfd = _resources(nrt_nfd.nfd_node_resource_topology(emulator))
    node0 = nfd["node-0"]["memory"]
    node1 = nfd["node-1"]["memory"]
    assert node0[2] == 0
    assert node1[2] == node1[1] - (20 * GIB - node0[1])
    # Capacity is MemTotal, hugepages included (16 GiB per node here).
    assert node0[0] == node1[0] == 16 * GIB


def test_charged_pods_and_cpus(tmp_path: Path) -> None:
    """Burstable pods without devices are not charged; a Guaranteed pod's CPUs count only with an integral
    request somewhere in it."""
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config())
    admit_all(
        emulator,
        pod_manifest("bu", containers=container("c", requests="cpu: 1")),
    )
    free = _resources(nrt_nfd.nfd_node_resource_topology(emulator))
    assert free["node-0"]["cpu"][1:] == (7, 7) and free["node-1"]["cpu"][1:] == (8, 8)
    admit_all(emulator, pod_manifest("gu", containers=container("c", limits="cpu: 2, memory: 1Gi")))
    charged = _resources(nrt_nfd.nfd_node_resource_topology(emulator))
    assert sum(charged[z]["cpu"][2] for z in charged) == 15 - 2


def test_has_integral_cpus_rounds_as_quantity_does() -> None:
    def pod(cpu: str) -> Pod:
        return Pod("p", "ns", "u", (Container("c", requests={"cpu": Quantity.parse(cpu)}),))

    assert nrt_nfd.has_integral_cpus(pod("2"))
    assert not nrt_nfd.has_integral_cpus(pod("1500m"))
    # Value() and MilliValue() both round up: 0.9995 gives 1 and 1000.
    assert nrt_nfd.has_integral_cpus(pod("999500u"))
    assert not nrt_nfd.has_integral_cpus(Pod("p", "ns", "u", (Container("c"),)))
