"""tm_admit.json: TestAdmit in both scopes, NewManager, manager scope, the pod-level flow."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.pod import ResourceRequirements
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyHint, TopologyManagerError, new_manager
from kubeletemu.topologymanager.policy_options import PolicyOptionsError
from tests.conformance.loader import versioned_rows
from tests.topologymanager.codec import providers
from tests.topologymanager.stub_provider import ScriptedProvider, pod_from_names


def _topology(row: dict[str, Any]) -> list[tuple[int, list[int] | None]]:
    distances = row.get("distances") or {}
    return [(n, distances.get(str(n))) for n in row["numa_nodes"]]


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_admit", "admit_cases"))
def test_admit(row: dict[str, Any], version: str) -> None:
    manager = new_manager(
        _topology(row), row["policy"], row["scope"], row["options"] or None, kubelet_version=version
    )
    for hints in providers(row["providers_hints"]):
        manager.add_hint_provider(
            ScriptedProvider(container_hints=lambda c, h=hints: h, pod_hints=hints)  # type: ignore[misc]
        )
    pod = pod_from_names(row["pod"]["initContainers"], row["pod"]["containers"])
    result = manager.admit(pod)
    assert result.admit is row["expected_admit"]
    if not result.admit:
        assert result.reason == row["expected_reason_if_rejected"]
        assert result.message == row["expected_message_if_rejected"]
    else:
        assert (result.reason, result.message) == ("", "")


def _new_manager_from_row(row: dict[str, Any], version: str) -> Any:
    topology = None if row["topology"] is None else [(n["id"], n["distances"]) for n in row["topology"]]
    return new_manager(topology, row["policy"], row["scope"], row["policy_options"], kubelet_version=version)


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_admit", "new_manager_cases"))
def test_new_manager(row: dict[str, Any], version: str) -> None:
    expected = row["expected"]
    if "error" in expected:
        with pytest.raises((TopologyManagerError, PolicyOptionsError)) as info:
            _new_manager_from_row(row, version)
        assert expected["error"] in str(info.value)
        return
    assert _new_manager_from_row(row, version).policy.name == expected["policy"]


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_admit", "manager_scope_cases"))
def test_manager_scope(row: dict[str, Any], version: str) -> None:
    expected = row["expected"]
    if "error" in expected:
        with pytest.raises(TopologyManagerError) as info:
            _new_manager_from_row(row, version)
        assert expected["error"] in str(info.value)
        return
    assert _new_manager_from_row(row, version).scope_name == expected["scope"]


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("tm_admit", "pod_level_resource_manager_flow_cases")
)
def test_pod_level_resource_manager_flow(row: dict[str, Any], version: str) -> None:
    hints = {"resource": [TopologyHint(BitMask.of(0), True)]}
    manager = new_manager(
        [(0, None), (1, None)],
        "restricted",
        row["scope"],
        None,
        feature_gates={"PodLevelResourceManagers": row["PodLevelResourceManagers"]},
        kubelet_version=version,
    )
    provider = ScriptedProvider(container_hints=lambda c: hints, pod_hints=hints)
    manager.add_hint_provider(provider)
    pod = pod_from_names([], ["c"])
    pod = type(pod)(
        name=pod.name,
        namespace=pod.namespace,
        uid=pod.uid,
        containers=pod.containers,
        resources=ResourceRequirements(
            requests={"cpu": Quantity.parse("1")}, limits={"cpu": Quantity.parse("1")}
        ),
    )
    result = manager.admit(pod)
    expected = row["expected"]
    assert result.admit is expected["admit"]
    for method in ("GetPodTopologyHints", "GetTopologyHints", "AllocatePod", "Allocate"):
        assert bool(provider.called(method)) is expected[f"{method}_called"], method


def test_none_policy_ignores_bad_options_and_numa_count() -> None:
    manager = new_manager([(i, None) for i in range(12)], "none", "container", {"bogus": "x"})
    assert manager.policy.name == "none"


def test_max_allowable_numa_nodes_raises_the_limit() -> None:
    topology = [(i, None) for i in range(9)]
    manager = new_manager(topology, "best-effort", "container", {"max-allowable-numa-nodes": "9"})
    assert manager.numa_info is not None and len(manager.numa_info.nodes) == 9
    with pytest.raises(TopologyManagerError, match="more than 8 NUMA Nodes"):
        new_manager(topology, "best-effort", "container", None)
