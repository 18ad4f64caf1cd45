"""``memory_hints.json``: the static policy's hints (``TestStaticPolicyGetTopologyHints``) and the pod
request arithmetic (``Test_getPodRequestedResources``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.memorymanager import (
    MachineInfo,
    NUMANode,
    StaticPolicy,
    get_pod_requested_resources,
)
from kubeletemu.memorymanager.state import MemoryState
from kubeletemu.pod import Pod
from kubeletemu.topologymanager import TopologyHint
from tests.conformance.loader import versioned_rows
from tests.memorymanager import codec


class _NoAffinity:
    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        raise AssertionError("hints must not read the topology manager store")

    def get_policy(self) -> Any:
        raise AssertionError


@pytest.mark.parametrize(("row", "version"), versioned_rows("memory_hints", "cases", key="id"))
def test_get_topology_hints(row: dict[str, Any], version: str) -> None:
    system_reserved = {int(n): dict(r) for n, r in row["system_reserved"].items()}
    machine = MachineInfo(NUMANode(n, 4 << 30) for n in sorted(system_reserved))
    policy = StaticPolicy(machine, system_reserved, _NoAffinity(), kubelet_version=version)
    # The rows never carry reusable init-container memory; a row that did would need decoding here.
    assert row["init_containers_reusable_memory"] == {}
    state = MemoryState()
    state.set_machine_state(codec.machine_state(row["machine_state"]))
    state.set_memory_assignments(codec.assignments(row["assignments"]))
    pod = codec.pod(row["pod"])
    assert pod.qos_class.value == row["pod"]["qos"]
    container = pod.container(row["container"])
    assert container is not None

    got = policy.get_topology_hints(state, pod, container)

    expected = codec.hints(row["expected_hints"])
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert set(got) == set(expected)
    for resource, hint_list in expected.items():
        assert list(got[resource] or []) == hint_list, resource


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
