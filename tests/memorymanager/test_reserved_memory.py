"""``reservedMemory`` validation against node allocatable (``TestValidateReservedMemory``,
``TestGetSystemReservedMemory`` and the error texts kubelets print for common misconfigurations)."""

from __future__ import annotations

import pytest

from kubeletemu.memorymanager import (
    MachineInfo,
    MemoryManagerError,
    MemoryReservation,
    NUMANode,
    get_node_allocatable_reservation,
    get_system_reserved_memory,
    hugepage_resource_name,
    new_manager,
    validate_reserved_memory,
)
from kubeletemu.quantity import Quantity
from tests.memorymanager.fixtures import EVICTION, KUBE_RESERVED, MACHINE, RESERVED, Gi, StoreStub

TWO_NODES = MachineInfo([NUMANode(0, 0), NUMANode(1, 0)])
MSG = (
    'the total amount "{}" of type "{}" is not equal to the value "{}" determined by Node Allocatable feature'
)


def q(values: dict[str, str]) -> dict[str, Quantity]:
    return {k: Quantity.parse(v) for k, v in values.items()}


@pytest.mark.parametrize(
    ("allocatable", "reserved", "error"),
    [
        pytest.param({}, [], None, id="nothing-set"),
        pytest.param({"memory": "0"}, [(0, {"memory": "0"})], None, id="both-zero"),
        pytest.param({}, [(0, {"memory": "12"})], MSG.format("12", "memory", "0"), id="allocatable-unset"),
        pytest.param({"hugepages-2Mi": "5"}, [], MSG.format("0", "hugepages-2Mi", "5"), id="reserved-unset"),
        pytest.param(
            {"memory": "5"}, [(0, {"memory": "12"})], MSG.format("12", "memory", "5"), id="not-equal"
        ),
        pytest.param(
            {"memory": "17"},
            [(0, {"memory": "12"}), (2, {"memory": "5"})],
            "the reserved memory configuration references a NUMA node 2 that does not exist on this machine",
            id="unknown-node",
        ),
        pytest.param(
            {"memory": "17", "hugepages-2Mi": "77", "hugepages-1Gi": "13"},
            [
                (0, {"memory": "12", "hugepages-2Mi": "70", "hugepages-1Gi": "13"}),
                (1, {"memory": "5", "hugepages-2Mi": "7"}),
            ],
            None,
            id="totals-equal",
        ),
        pytest.param(
            {"memory": "17", "hugepages-2Mi": "14", "hugepages-1Gi": "13"},
            [
                (0, {"memory": "12", "hugepages-2Mi": "70", "hugepages-1Gi": "13"}),
                (1, {"memory": "5", "hugepages-2Mi": "7"}),
            ],
            MSG.format("77", "hugepages-2Mi", "14"),
            id="hugepages-2Mi-differs",
        ),
        pytest.param({}, [(0, {"memory": "1Gi"})], MSG.format("1Gi", "memory", "0"), id="binary-si-kept"),
    ],
)
def test_validate_reserved_memory(
    allocatable: dict[str, str], reserved: list[tuple[int, dict[str, str]]], error: str | None
) -> None:
    reservations = [MemoryReservation.of(node, limits) for node, limits in reserved]
    if error is None:
        validate_reserved_memory(TWO_NODES, q(allocatable), reservations)
    else:
        with pytest.raises(MemoryManagerError) as exc:
            validate_reserved_memory(TWO_NODES, q(allocatable), reservations)
        assert str(exc.value) == error


def test_system_reserved_memory_per_node() -> None:
    reservations = [MemoryReservation.of(0, {"memory": "1Gi"}), MemoryReservation.of(1, {"memory": "1Gi"})]
    got = get_system_reserved_memory(TWO_NODES, q({"memory": "2Gi"}), reservations)
    assert got == {0: {"memory": Gi}, 1: {"memory": Gi}}


def test_kube_reserved_plus_eviction_keeps_binary_format() -> None:
    # The real kubelet log: kubeReserved 16Gi + the 100Mi eviction default prints as "16484Mi".
    machine = MachineInfo([NUMANode(0, 64 * Gi)])
    allocatable = get_node_allocatable_reservation(machine, None, {"memory": "16Gi"}, "100Mi")
    assert str(allocatable["memory"]) == "16484Mi"
    with pytest.raises(MemoryManagerError) as exc:
        validate_reserved_memory(machine, allocatable, [MemoryReservation.of(0, {"memory": "16548Mi"})])
    assert str(exc.value) == MSG.format("16548Mi", "memory", "16484Mi")
    with pytest.raises(MemoryManagerError) as exc:
        validate_reserved_memory(machine, allocatable, [])
    assert str(exc.value) == MSG.format("0", "memory", "16484Mi")


def test_percentage_eviction_is_float32() -> None:
    # 10% of 10Gi through float32: 0.1f = 0.100000001490116..., so 16 bytes more than 1Gi.
    machine = MachineInfo([NUMANode(0, 10 * Gi)])
    allocatable = get_node_allocatable_reservation(machine, None, None, "10%")
    assert allocatable["memory"].amount == 1073741840
    assert str(allocatable["memory"]) == "1073741840"


def test_system_reserved_first_term_decides_the_format() -> None:
    allocatable = get_node_allocatable_reservation(MACHINE, {"memory": "1G"}, {"memory": "1Gi"}, None)
    assert allocatable["memory"].amount == 10**9 + Gi
    assert str(allocatable["memory"]) == "2073741824"


def test_hugepage_names() -> None:
    assert hugepage_resource_name(2048) == "hugepages-2Mi"
    assert hugepage_resource_name(1048576) == "hugepages-1Gi"
    assert hugepage_resource_name(64) == "hugepages-64Ki"


def test_static_policy_needs_reserved_memory() -> None:
    with pytest.raises(
        MemoryManagerError, match=r"^\[memorymanager\] you should specify the system reserved memory$"
    ):
        new_manager("Static", MACHINE, StoreStub(), node_allocatable_reservation={})


def test_unknown_policy() -> None:
    with pytest.raises(MemoryManagerError, match=r'^unknown policy: "static"$'):
        new_manager("static", MACHINE, StoreStub())


def test_configured_reservation_is_accepted() -> None:
    manager = new_manager(
        "Static",
        MACHINE,
        StoreStub(),
        reserved_memory=RESERVED,
        kube_reserved=KUBE_RESERVED,
        eviction_hard_memory_available=EVICTION,
    )
    assert manager.policy_name == "Static"


def test_bad_quantity_is_a_clear_error() -> None:
    with pytest.raises(MemoryManagerError, match=r"reservedMemory\[numaNode=0\]\.limits\[memory\]"):
        MemoryReservation.of(0, {"memory": "lots"})
