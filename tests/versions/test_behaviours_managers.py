"""Resource-manager behaviours that follow ``kubeletVersion`` (``data/behaviours/managers.json``), each
shown on both sides through the emulator's admission (``NodeEmulator.admit`` / ``would_admit``)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.config import parse_config
from kubeletemu.emulator import AdmissionReport, NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.topologymanager.hint import TopologyHint
from kubeletemu.versions.behaviours import behaviours, in_effect, step_at
from tests.nodes import static_managers
from tests.versions.helpers import pod, versioned_config

# On four_nodes (node n holds CPUs 2n, 2n+1, 2n+8, 2n+9): one device on node 0.
DEVICE_POD = pod("gpu", 'cpu: "1", memory: 256Mi, example.com/dev: "1"')
# Guaranteed at pod level and in its one container (2 CPUs, 1Gi).
POD_LEVEL_POD = pod("plr", 'cpu: "2", memory: 1Gi', 'limits: {cpu: "2", memory: 1Gi}')


def device_node(machine: Machine, version: str) -> NodeEmulator:
    return NodeEmulator(parse_config(versioned_config(version, device_numa=0)), machine)


def mask(*bits: int) -> BitMask:
    return BitMask.of(*bits)


def provider_hints(report: AdmissionReport, resource: str) -> list[TopologyHint] | None:
    """The hints the container's providers gave for ``resource`` (absent: None)."""
    (container,) = report.containers
    for _provider, hints in container.provider_hints:
        if hints is not None and resource in hints:
            given = hints[resource]
            return None if given is None else list(given)
    return None


# ---- registry ----------------------------------------------------------------------------------------


def test_manager_behaviours_registered_with_their_versions() -> None:
    assert behaviours()["devicemanager.hints-over-device-numa-nodes"].changes[0].since == "1.36"
    assert behaviours()["cpumemorymanager.skip-pod-level-resources"].changes[0].since == "1.34"
    versions = ("1.35", "1.36", "1.37", "master")
    assert [step_at("devicemanager.hints-over-device-numa-nodes", v) for v in versions] == [0, 1, 1, 1]
    assert [
        step_at("cpumemorymanager.skip-pod-level-resources", v) for v in ("1.33", "1.34", "1.35", "1.36")
    ] == [
        0,
        1,
        1,
        2,
    ]
    assert in_effect("cpumemorymanager.skip-pod-level-resources", "master")


# ---- Device Manager: kubernetes#138244 ---------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.33", "1.35"])
def test_device_hints_cover_every_machine_node_before_136(four_nodes: Machine, version: str) -> None:
    """1.33 to 1.35: every mask holding node 0 (the device's) is a hint; only ``{0}`` is preferred."""
    report = device_node(four_nodes, version).would_admit(DEVICE_POD)
    assert report.admitted
    hints = provider_hints(report, "example.com/dev")
    assert hints is not None
    expected_masks = [m for m in range(1, 16) if m & 1]  # 0b0001, 0b0011, ... : the 8 masks with node 0
    assert sorted(h.affinity.value for h in hints if h.affinity is not None) == expected_masks
    assert [h for h in hints if h.preferred] == [TopologyHint(mask(0), True)]


@pytest.mark.parametrize("version", ["1.36", "1.37", "master"])
def test_device_hints_over_device_nodes_from_136(four_nodes: Machine, version: str) -> None:
    """1.36 on (kubernetes#138244 is in v1.36.0): ``{0}`` preferred and nothing else (no mask holds a node
    without devices)."""
    report = device_node(four_nodes, version).would_admit(DEVICE_POD)
    assert report.admitted
    assert provider_hints(report, "example.com/dev") == [TopologyHint(mask(0), True)]
    # The merged hint is the same as before (the change keeps admission outcomes): node 0.
    (container,) = report.containers
    assert container.affinity == TopologyHint(mask(0), True)
    assert container.devices == {"example.com/dev": {"dev0": (0,)}}


def test_device_hints_same_merge_both_sides(four_nodes: Machine) -> None:
    before = device_node(four_nodes, "1.35").would_admit(DEVICE_POD)
    after = device_node(four_nodes, "master").would_admit(DEVICE_POD)
    assert before.containers[0].affinity == after.containers[0].affinity
    assert before.containers[0].cpu_ids == after.containers[0].cpu_ids


def test_would_admit_at_another_version_uses_that_versions_hints(four_nodes: Machine) -> None:
    """A master node asked about a 1.35 kubelet answers with 1.35's device hints."""
    report = device_node(four_nodes, "master").would_admit(DEVICE_POD, kubelet_version="1.35")
    hints = provider_hints(report, "example.com/dev")
    assert hints is not None and len(hints) == 8


# ---- CPU and Memory Managers: kubernetes#133279 ------------------------------------------------------


def pod_level_node(machine: Machine, version: str, gates: Mapping[str, bool] | None = None) -> NodeEmulator:
    """The static CPU and Memory Managers."""
    return NodeEmulator(
        parse_config(versioned_config(version, managers=static_managers(), gates=gates)), machine
    )


def test_pod_level_pod_served_per_container_at_133(four_nodes: Machine) -> None:
    """1.33 with PodLevelResources (alpha) on: exclusive CPUs and memory as for any Guaranteed pod."""
    assert POD_LEVEL_POD.resources is not None
    report = pod_level_node(four_nodes, "1.33", {"PodLevelResources": True}).admit(POD_LEVEL_POD)
    assert report.admitted
    (container,) = report.containers
    assert container.exclusive_cpus
    assert len(container.cpu_ids) == 2
    assert sum(b.size for b in container.memory if b.memory_type == "memory") == 1 << 30
    assert provider_hints(report, "cpu")
    assert provider_hints(report, "memory")


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37", "master"])
def test_pod_level_pod_left_to_the_shared_pool_from_134(four_nodes: Machine, version: str) -> None:
    """1.34+: no hints and no exclusive CPUs or memory for a pod using ``spec.resources``."""
    report = pod_level_node(four_nodes, version).admit(POD_LEVEL_POD)
    assert report.admitted
    (container,) = report.containers
    assert not container.exclusive_cpus
    assert container.memory == ()
    assert provider_hints(report, "cpu") is None
    assert provider_hints(report, "memory") is None


def test_same_pod_without_pod_level_resources_is_pinned_in_every_version(four_nodes: Machine) -> None:
    """The change is about ``spec.resources`` only: without it the container is pinned at 1.34 too."""
    without = pod("plr", 'cpu: "2", memory: 1Gi')
    assert without.resources is None
    for version in ("1.33", "1.34"):
        report = pod_level_node(four_nodes, version).admit(without)
        assert report.admitted and report.containers[0].exclusive_cpus


@pytest.mark.parametrize(
    ("version", "served"),
    [("1.34", True), ("1.35", True), ("1.36", False), ("1.37", False), ("master", False)],
)
def test_pod_level_pod_with_the_gate_off(four_nodes: Machine, version: str, served: bool) -> None:
    """``PodLevelResources`` off: 1.34 and 1.35 check ``Enabled(PodLevelResources) && set``, so the
    managers ignore ``spec.resources`` and serve the Guaranteed container (hints, exclusive CPUs) before the
    pod-features handler refuses the pod; 1.36 (kubernetes#134768) skips unless both pod-level gates are on,
    so the managers give nothing and the same handler refuses."""
    gates = {"PodLevelResources": False}
    if version in ("1.36", "1.37", "master"):  # on by default there, and it depends on PodLevelResources
        gates["InPlacePodLevelResourcesVerticalScaling"] = False
    if version in ("1.37", "master"):  # v1.37.2's two fix gates, on by default, depend on it too
        gates["PodLevelResourcesFixDefaulting"] = False
        gates["PodLevelResourcesFixKubeletQOSClass"] = False
    node = pod_level_node(four_nodes, version, gates)
    report = node.would_admit(POD_LEVEL_POD)
    assert (report.admitted, report.reason) == (False, "PodLevelResourcesNotSupported")
    assert (provider_hints(report, "cpu") is not None) == served
    assert (provider_hints(report, "memory") is not None) == served
    # Nothing stays allocated after the refusal, on either side.
    admitted = node.admit(POD_LEVEL_POD)
    assert not admitted.admitted
    assert (
        node.cm.cpus.get_allocatable_cpus()
        == pod_level_node(four_nodes, version).cm.cpus.get_allocatable_cpus()
    )
    assert len(node.registry) == 0
