"""``memory_hints.json``: the static policy's hints (``TestStaticPolicyGetTopologyHints``,
``TestStaticPolicyGetPodTopologyHints``), the pod request arithmetic (``Test_getPodRequestedResources``) and
the NUMA group rule (``Test_isAffinityViolatingNUMAAllocations``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.cpumanager.policy_options import POD_LEVEL_RESOURCES_GATE, merged_gates
from kubeletemu.memorymanager import (
    MachineInfo,
    NUMANode,
    StaticPolicy,
    get_pod_requested_resources,
)
from kubeletemu.memorymanager.policy_static import is_affinity_violating_numa_allocations
from kubeletemu.memorymanager.state import MemoryState, NUMANodeState
from kubeletemu.pod import Pod, compute_qos
from kubeletemu.topologymanager import ProviderHints, TopologyHint
from tests.conformance.loader import versioned_rows
from tests.memorymanager import codec


class _NoAffinity:
    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        raise AssertionError("hints must not read the topology manager store")

    def get_policy(self) -> Any:
        raise AssertionError


def _policy_and_state(row: dict[str, Any], version: str) -> tuple[StaticPolicy, MemoryState, Pod]:
    """The row's policy (its gates, the emulated kubelet version), state and pod."""
    system_reserved = {int(n): dict(r) for n, r in row["system_reserved"].items()}
    machine = MachineInfo(NUMANode(n, 4 << 30) for n in sorted(system_reserved))
    gates = row.get("feature_gates")
    policy = StaticPolicy(
        machine, system_reserved, _NoAffinity(), feature_gates=gates, kubelet_version=version
    )
    # The rows never carry reusable init-container memory; a row that did would need decoding here.
    assert row["init_containers_reusable_memory"] == {}
    state = MemoryState()
    state.set_machine_state(codec.machine_state(row["machine_state"]))
    state.set_memory_assignments(codec.assignments(row["assignments"]))
    pod = codec.pod(row["pod"])
    # The QoS class the kubelet computes under the row's gates (pod-level resources decide when on).
    assert compute_qos(pod, merged_gates(gates)[POD_LEVEL_RESOURCES_GATE]).value == row["pod"]["qos"]
    return policy, state, pod


def _assert_hints(got: ProviderHints, raw_expected: dict[str, Any] | None) -> None:
    expected = codec.hints(raw_expected)
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert set(got) == set(expected)
    for resource, hint_list in expected.items():
        assert list(got[resource] or []) == hint_list, resource


@pytest.mark.parametrize(("row", "version"), versioned_rows("memory_hints", "cases", key="id"))
def test_get_topology_hints(row: dict[str, Any], version: str) -> None:
    policy, state, pod = _policy_and_state(row, version)
    container = pod.container(row["container"])
    assert container is not None

    _assert_hints(policy.get_topology_hints(state, pod, container), row["expected_hints"])


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("memory_hints", "get_pod_topology_hints_cases", key="id")
)
def test_get_pod_topology_hints(row: dict[str, Any], version: str) -> None:
    policy, state, pod = _policy_and_state(row, version)

    _assert_hints(policy.get_pod_topology_hints(state, pod), row["expected_hints"])


@pytest.mark.parametrize(
    ("row", "version"),
    versioned_rows("memory_hints", "is_affinity_violating_numa_allocations_cases", key="description"),
)
def test_is_affinity_violating_numa_allocations(row: dict[str, Any], version: str) -> None:
    # The check has no version switch; the version only says which upstream tables hold the row.
    machine_state = {
        int(node): NUMANodeState(raw["numberOfAssignments"], {}, list(raw["cells"]))
        for node, raw in row["machine_state"].items()
    }
    got = is_affinity_violating_numa_allocations(machine_state, BitMask.of(*row["affinity"]))
    assert got is row["expected_violation"]


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("memory_hints", "get_pod_requested_resources_cases", key="description")
)
def test_get_pod_requested_resources(row: dict[str, Any], version: str) -> None:
    pod = Pod(
        name="pod",
        namespace="default",
        uid="pod",
        containers=tuple(codec.container(c) for c in row["containers"]),
        init_containers=tuple(codec.container(c) for c in row["init_containers"]),
    )
    assert get_pod_requested_resources(pod) == row["expected"]
