"""tm_scope.json: what the scopes hand to Merge, the Store bookkeeping, multi-container admit flows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager import ProviderHints, TopologyHint, new_manager
from kubeletemu.topologymanager.policy_none import NonePolicy
from kubeletemu.topologymanager.scope_container import ContainerScope
from kubeletemu.topologymanager.scope_pod import PodScope
from tests.conformance.loader import versioned_rows
from tests.topologymanager.codec import encode, hint, providers
from tests.topologymanager.stub_provider import ScriptedProvider, pod_from_names


class RecordingPolicy:
    """Captures exactly what the scope passes to Merge."""

    def __init__(self) -> None:
        self.seen: list[list[ProviderHints]] = []

    @property
    def name(self) -> str:
        return "recording"

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        self.seen.append(list(providers_hints))
        return TopologyHint(), True


def _scope_cases() -> list[Any]:
    return [
        pytest.param(row, version, scope, id=f"{scope}-{param.id}", marks=param.marks)
        for param in versioned_rows("tm_scope", "accumulate_cases")
        for row, version in [param.values]
        for scope in row["scopes"]
    ]


@pytest.mark.parametrize(("row", "version", "scope_name"), _scope_cases())
def test_accumulate_provider_hints(row: dict[str, Any], version: str, scope_name: str) -> None:
    policy = RecordingPolicy()
    scope = ContainerScope(policy) if scope_name == "container" else PodScope(policy)
    provider_maps = providers(row["providers"])
    for hints in provider_maps:
        scope.add_hint_provider(ScriptedProvider(container_hints=lambda c, h=hints: h, pod_hints=hints))  # type: ignore[misc]
    scope.admit(pod_from_names([], ["c"]))
    expected = providers(row["expected_providers_hints"] or [])
    assert policy.seen == [expected]
    # Untouched pass-through: the very objects the providers returned.
    assert all(a is b for a, b in zip(policy.seen[0], provider_maps, strict=True))


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_scope", "store_cases"))
def test_store(row: dict[str, Any], version: str) -> None:
    scope = ContainerScope(NonePolicy())
    results: list[Any] = []
    before = (len(scope.pod_map), len(scope.pod_topology_hints))
    for op, *args in row["ops"]:
        if op == "_seed":
            # TestRemoveContainer seeds podMap.Add(podUID, tc.name, tc.containerID) and a hint
            # under (podUID, tc.name): the case name is the container name.
            pod_uid, container_name, container_id, seeded = args
            pod = Pod(
                name=container_name, namespace="default", uid=pod_uid, containers=(Container(container_name),)
            )
            scope.add_container(pod, pod.containers[0], container_id)
            scope.set_topology_hints(pod_uid, container_name, hint(seeded))
            before = (len(scope.pod_map), len(scope.pod_topology_hints))
        elif op == "AddContainer":
            pod_uid, container_name, container_id = args
            pod = Pod(
                name=container_name, namespace="default", uid=pod_uid, containers=(Container(container_name),)
            )
            scope.add_container(pod, pod.containers[0], container_id)
        elif op == "GetAffinity":
            results.append(encode(scope.get_affinity(*args)))
        elif op == "RemoveContainer":
            assert scope.remove_container(args[0]) is None
        else:
            raise AssertionError(op)
    expected = row["expected"]
    if isinstance(expected, list):
        assert results == expected
        return
    if "podMap_contains" in expected:
        # TestAddContainer asserts only that each container id became a podMap key.
        assert all(cid in scope.pod_map for cid in expected["podMap_contains"])
        return
    after = (len(scope.pod_map), len(scope.pod_topology_hints))
    if "podMap_len_delta" in expected:
        assert after[0] - before[0] == expected["podMap_len_delta"]
        assert after[1] - before[1] == expected["podTopologyHints_len_delta"]


def test_remove_container_keeps_hint_of_restarted_container() -> None:
    scope = ContainerScope(NonePolicy())
    pod = Pod(name="p", namespace="default", uid="u1", containers=(Container("c"),))
    scope.add_container(pod, pod.containers[0], "id-old")
    scope.add_container(pod, pod.containers[0], "id-new")
    scope.set_topology_hints("u1", "c", TopologyHint(None, True))
    scope.remove_container("id-old")
    assert scope.get_affinity("u1", "c") == TopologyHint(None, True)
    scope.remove_container("id-new")
    assert scope.get_affinity("u1", "c") == TopologyHint()


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_scope", "derived_admit_scenarios"))
def test_derived_admit_scenarios(row: dict[str, Any], version: str) -> None:
    manager = new_manager(
        [(n, None) for n in row["numa_nodes"]], row["policy"], row["scope"], None, kubelet_version=version
    )
    merges: list[str | None] = []
    manager.set_merge_observer(lambda pod, name, hints, best, admit: merges.append(name))
    pod = pod_from_names(row["pod"]["initContainers"], row["pod"]["containers"])
    recorders: list[ScriptedProvider] = []
    if row["scope"] == "container":
        per_container = {name: providers(maps) for name, maps in row["per_container_hints"].items()}
        count = len(next(iter(per_container.values())))
        for index in range(count):
            recorders.append(
                ScriptedProvider(
                    container_hints=lambda c, i=index: per_container[c.name][i],  # type: ignore[misc]
                    fail_allocate_for=row.get("allocate_fails_for") if index == 0 else None,
                    fail_message=row.get("allocate_error", "boom"),
                )
            )
    else:
        for hints in providers(row["pod_hints"]):
            recorders.append(ScriptedProvider(pod_hints=hints))
    for recorder in recorders:
        manager.add_hint_provider(recorder)
    result = manager.admit(pod)
    expected = row["expected"]
    assert result.admit is expected["admit"]
    if "reason" in expected:
        assert result.reason == expected["reason"]
    if "message" in expected:
        assert result.message == expected["message"]
    if "order_of_merge_calls" in expected:
        assert merges == expected["order_of_merge_calls"]
    if "merge_calls" in expected:
        assert len(merges) == expected["merge_calls"]
    stored = {
        c.name: encode(manager.get_affinity(pod.uid, c.name))
        for c in pod.all_containers()
        if c.name in manager.scope.pod_topology_hints.get(pod.uid, {})
    }
    assert stored == expected["stored_affinity_after"]
    assert recorders[0].called("Allocate") == expected["allocate_called_for"]
