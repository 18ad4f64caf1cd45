"""Node capacity → allocatable, worked out by hand from the kubelet's rules.

Machine for the table: 8 CPUs, MemTotal 32Gi (34359738368), 512 pre-allocated 2Mi pages (1Gi =
1073741824), a 100Gi root filesystem (107374182400), example.com/dev with 3 healthy + 1 unhealthy devices.

Percent thresholds are float32: ``10%`` is float32(0.1) = 13421773/2^27, so 10% of 100Gi =
100·2^30·13421773/2^27 = 10737418400 (not 10737418240); ``5%`` is 13421773/2^28, so 5% of 32Gi =
128·13421773 = 1717986944; ``7.5%`` is float32(0.075) = 10066330/2^27, so 7.5% of 32Gi = 256·10066330 =
2576980480.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest

from hostprobe import probe
from kubeletemu.config.kubelet_config import KubeletConfiguration
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.devicemanager.devices import Device
from kubeletemu.lifecycle import PredicateAdmitHandler
from kubeletemu.node_allocatable import (
    DEFAULT_EPHEMERAL_STORAGE_BYTES,
    NodeAllocatableError,
    NodeCapacity,
    capacity_from_host,
    compute_node_allocatable,
    filesystem_capacity_bytes,
    round_float32,
)
from kubeletemu.quantity import Quantity
from tests.lifecycle.builders import make_pod
from tests.synthetic_sysfs import GIB_KIB, SyntheticHost, write_tree

GI = 2**30
MI = 2**20

MACHINE = NodeCapacity(
    cpus=8,
    memory_bytes=32 * GI,
    hugepages={2 * MI: 512},
    ephemeral_storage_bytes=100 * GI,
    extended_resources={"example.com/dev": 3},
    unhealthy_devices={"example.com/dev": 1},
)


def q(values: dict[str, str]) -> dict[str, Quantity]:
    return {k: Quantity.parse(v) for k, v in values.items()}


@dataclass(frozen=True)
class Row:
    id: str
    config: KubeletConfiguration
    allocatable: dict[str, Fraction | int]
    machine: NodeCapacity = MACHINE


ROWS = [
    Row(
        "kubelet-defaults",
        # evictionHard memory.available<100Mi, nodefs.available<10%; maxPods 110
        KubeletConfiguration(),
        {
            "cpu": 8,
            # 34359738368 - 104857600 (100Mi) - 1073741824 (hugepages) = 33181138944
            "memory": 33181138944,
            "hugepages-2Mi": GI,
            # 107374182400 - 10737418400 (float32 10%)
            "ephemeral-storage": 96636764000,
            "pods": 110,
            # healthy devices only (capacity is 4)
            "example.com/dev": 3,
        },
    ),
    Row(
        "reserved-and-percent-eviction",
        KubeletConfiguration(
            system_reserved=q({"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"}),
            kube_reserved=q({"cpu": "1", "memory": "512Mi"}),
            eviction_hard={"memory.available": "5%", "nodefs.available": "5Gi"},
            max_pods=64,
        ),
        {
            # 8 - 0.5 - 1 = 6.5
            "cpu": Fraction(13, 2),
            # 34359738368 - 1073741824 - 536870912 - 1717986944 (float32 5%) - 1073741824 (hugepages)
            "memory": 29957396864,
            "hugepages-2Mi": GI,
            # 107374182400 - 1073741824 - 5368709120
            "ephemeral-storage": 100931731456,
            "pods": 64,
            "example.com/dev": 3,
        },
    ),
    Row(
        "reserved-system-cpus-override",
        # reservedSystemCPUs 0-1,4 (3 CPUs) replaces systemReserved cpu 500m and drops kubeReserved cpu 1
        KubeletConfiguration(
            system_reserved=q({"cpu": "500m"}),
            kube_reserved=q({"cpu": "1", "memory": "1Gi"}),
            reserved_system_cpus=CPUSet.parse("0-1,4"),
            eviction_hard={},
        ),
        {
            "cpu": 5,
            # 34359738368 - 1Gi kubeReserved - 1Gi hugepages (no eviction threshold)
            "memory": 32212254720,
            "hugepages-2Mi": GI,
            "ephemeral-storage": 100 * GI,
            "pods": 110,
            "example.com/dev": 3,
        },
    ),
    Row(
        "odd-percentage-and-ignored-signals",
        # 7.5% in float32; imagefs/nodefs.inodesFree reserve nothing; nodefs.available 100% is ignored
        KubeletConfiguration(
            eviction_hard={
                "memory.available": "7.5%",
                "nodefs.available": "100%",
                "imagefs.available": "50%",
                "nodefs.inodesFree": "5%",
            }
        ),
        {
            "cpu": 8,
            # 34359738368 - 2576980480 - 1073741824
            "memory": 30709016064,
            "hugepages-2Mi": GI,
            "ephemeral-storage": 100 * GI,
            "pods": 110,
            "example.com/dev": 3,
        },
    ),
    Row(
        "negative-clamped-to-zero",
        # cpu 8 - 10 < 0 -> 0; memory 32Gi - 31.5Gi - 100Mi = 424673280, then - 1Gi hugepages < 0 -> 0
        KubeletConfiguration(system_reserved=q({"cpu": "10", "memory": "31.5Gi"})),
        {
            "cpu": 0,
            "memory": 0,
            "hugepages-2Mi": GI,
            "ephemeral-storage": 96636764000,
            "pods": 110,
            "example.com/dev": 3,
        },
    ),
    Row(
        "no-ephemeral-storage-capacity",
        # rootfs unknown: no ephemeral-storage entry; its reservation and nodefs threshold vanish too
        KubeletConfiguration(system_reserved=q({"ephemeral-storage": "1Gi", "pid": "100"})),
        {"cpu": 4, "memory": 16 * GI - 100 * MI, "pods": 110},
        NodeCapacity(cpus=4, memory_bytes=16 * GI, ephemeral_storage_bytes=None),
    ),
    Row(
        "several-hugepage-sizes",
        # 2 x 1Gi pages + 1024 x 2Mi pages: memory 64Gi - 100Mi - 2Gi - 2Gi
        KubeletConfiguration(),
        {
            "cpu": 16,
            "memory": 64 * GI - 100 * MI - 4 * GI,
            "hugepages-2Mi": 2 * GI,
            "hugepages-1Gi": 2 * GI,
            "ephemeral-storage": 96636764000,
            "pods": 110,
        },
        NodeCapacity(cpus=16, memory_bytes=64 * GI, hugepages={2 * MI: 1024, GI: 2}),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_node_allocatable(row: Row) -> None:
    node = compute_node_allocatable(row.machine, row.config)
    assert {name: quantity.amount for name, quantity in node.allocatable.items()} == row.allocatable


def test_capacity_and_reservation_views() -> None:
    config = KubeletConfiguration(
        system_reserved=q({"cpu": "500m", "memory": "1Gi"}), kube_reserved=q({"cpu": "1"}), max_pods=50
    )
    node = compute_node_allocatable(MACHINE, config)
    assert {k: v.amount for k, v in node.capacity.items()} == {
        "cpu": 8,
        "memory": 32 * GI,
        "hugepages-2Mi": GI,
        "ephemeral-storage": 100 * GI,
        "pods": 50,
        "example.com/dev": 4,  # healthy + unhealthy
    }
    # cpu 0.5 + 1; memory 1Gi + 100Mi eviction; ephemeral 10% in float32; nothing for hugepages/pods/devices
    assert {k: v.amount for k, v in node.reservation.items()} == {
        "cpu": Fraction(3, 2),
        "memory": GI + 100 * MI,
        "ephemeral-storage": 10737418400,
    }
    assert node.max_pods == 50


def test_allocatable_feeds_the_predicate_handler() -> None:
    node = compute_node_allocatable(MACHINE, KubeletConfiguration(kube_reserved=q({"cpu": "1500m"})))
    handler = PredicateAdmitHandler(node.allocatable)
    # cpu allocatable 8 - 1.5 = 6500m: 7000 > 6500
    result = handler.admit(make_pod("p", {"cpu": "7"}), [])
    assert (result.reason, result.message) == (
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 7000, used: 0, capacity: 6500",
    )
    assert handler.admit(make_pod("p", {"cpu": "6500m", "example.com/dev": "3"}), []).admit


@pytest.mark.parametrize(
    ("text", "nearest"),
    [
        ("0.1", Fraction(13421773, 2**27)),
        ("0.05", Fraction(13421773, 2**28)),
        ("0.075", Fraction(10066330, 2**27)),
        ("7.5", Fraction(15, 2)),
        ("0", Fraction(0)),
    ],
)
def test_round_float32(text: str, nearest: Fraction) -> None:
    assert Fraction(round_float32(Fraction(text))) == nearest


def test_round_float32_subnormals_and_ties() -> None:
    # 2^-149 is the smallest subnormal: a third of it rounds to 0, two thirds up to it
    tiny = Fraction(1, 2**149)
    assert round_float32(tiny / 3) == 0.0
    assert Fraction(round_float32(tiny * 2 / 3)) == tiny
    # 1 + 2^-24 is halfway between 1 and 1 + 2^-23: ties go to the even significand (1)
    assert round_float32(1 + Fraction(1, 2**24)) == 1.0
    assert Fraction(round_float32(1 + Fraction(3, 2**24))) == 1 + Fraction(2, 2**23)


@pytest.mark.parametrize(
    ("config", "text"),
    [
        (KubeletConfiguration(eviction_hard={"memory.available": "ten%"}), 'parsing "ten": invalid syntax'),
        (KubeletConfiguration(eviction_hard={"memory.available": "150%"}), "must be within 0%..100%: 150%"),
        (KubeletConfiguration(eviction_hard={"nodefs.available": "1Qi"}), "evictionHard[nodefs.available]"),
        (
            KubeletConfiguration(eviction_hard={"memory.available": "0"}),
            "eviction threshold must be positive",
        ),
        (
            KubeletConfiguration(system_reserved={"memory": "1Gi"}),  # type: ignore[dict-item]
            "systemReserved[memory]: expected a Quantity",
        ),
        (KubeletConfiguration(kube_reserved=q({"cpu": "-1"})), "kubeReserved[cpu]: must not be negative"),
    ],
)
def test_bad_configuration_is_a_readable_error(config: KubeletConfiguration, text: str) -> None:
    with pytest.raises(NodeAllocatableError) as info:
        compute_node_allocatable(MACHINE, config)
    assert text in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"cpus": -1, "memory_bytes": 1}, "cpus: must be a non-negative integer, got -1"),
        ({"cpus": 1, "memory_bytes": 1, "hugepages": {3000: 1}}, "a page size must be a positive multiple"),
        (
            {"cpus": 1, "memory_bytes": 1, "hugepages": {2 * MI: -1}},
            "hugepages[2097152]: must be a non-negative",
        ),
        (
            {"cpus": 1, "memory_bytes": 1, "extended_resources": {"gpu": 1}},
            "'gpu' is not an extended resource",
        ),
        ({"cpus": 1, "memory_bytes": 1, "ephemeral_storage_bytes": 1.5}, "ephemeral_storage_bytes: must be"),
    ],
)
def test_bad_capacity_is_a_readable_error(kwargs: dict[str, object], text: str) -> None:
    with pytest.raises(NodeAllocatableError) as info:
        NodeCapacity(**kwargs)  # type: ignore[arg-type]
    assert text in str(info.value)


def test_capacity_from_host(tmp_path: Path) -> None:
    # 2 sockets x 4 cores x 2 threads = 16 CPUs, 2 x 16Gi nodes; 2Mi pool: 300 + 212 pages, 1Gi pool: 2 pages
    host = SyntheticHost(
        node_memory_kib=16 * GIB_KIB,
        hugepages={0: {2048: (300, 300)}, 1: {2048: (212, 200), 1048576: (2, 2)}},
    )
    sys_root, proc_root = write_tree(tmp_path, host)
    topology = probe(str(sys_root), str(proc_root))
    devices: dict[str, list[Device] | dict[str, Device]] = {
        "example.com/dev": [Device("d0", (0,)), Device("d1", (1,), healthy=False)],
        "example.com/nic": {"n0": Device("n0")},
    }
    capacity = capacity_from_host(topology, devices, ephemeral_storage_bytes=50 * GI)
    assert capacity == NodeCapacity(
        cpus=16,
        memory_bytes=32 * GI,
        hugepages={2 * MI: 512, GI: 2},
        ephemeral_storage_bytes=50 * GI,
        extended_resources={"example.com/dev": 1, "example.com/nic": 1},
        unhealthy_devices={"example.com/dev": 1},
    )
    defaults = capacity_from_host(topology)
    assert defaults.ephemeral_storage_bytes == DEFAULT_EPHEMERAL_STORAGE_BYTES == 100 * GI
    assert defaults.extended_resources == {}


def test_filesystem_capacity_walks_up_to_an_existing_directory(tmp_path: Path) -> None:
    size = filesystem_capacity_bytes(tmp_path)
    assert size > 0
    assert filesystem_capacity_bytes(tmp_path / "not" / "there") == size
