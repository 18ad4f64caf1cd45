"""The QoS class of a pod whose ``spec.resources`` is there but names nothing (``resources: {}``,
``{requests: {}}``, ``{limits: {}}``), per kubelet version.

v1.36.3's ``ComputePodQOS`` (``pkg/apis/core/v1/helper/qos/qos.go``) lets ``spec.resources`` decide as soon
as it is not nil: such a pod is BestEffort whatever its containers ask. v1.37.2's does so only when
``IsPodLevelResourcesSet`` (gate ``PodLevelResourcesFixKubeletQOSClass``, beta, on; kubernetes#137150),
else the containers decide. The class shows in admission: the static CPU and Memory Managers serve
Guaranteed pods only, and the critical-pod preemption evicts the lower classes first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.lifecycle.preemption import Requirement, Requirements, pods_to_preempt
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import FIX_KUBELET_QOS_CLASS_GATE, Pod, QOSClass, compute_qos
from kubeletemu.versions.gates import FeatureGateError, validate_feature_gates
from tests.nodes import static_managers
from tests.versions.helpers import versioned_config

GUARANTEED_CONTAINER = 'limits: {cpu: "2", memory: 1Gi}'
EMPTY_POD_LEVEL = ["{}", "{requests: {}}", "{limits: {}}"]


def manifest(name: str, pod_resources: str | None, container_limits: str = GUARANTEED_CONTAINER) -> str:
    """Pod ``name`` with one container; ``spec.resources`` as the flow mapping given (None: absent)."""
    return (
        "apiVersion: v1\nkind: Pod\n"
        f"metadata: {{name: {name}, namespace: default, uid: uid-{name}}}\n"
        "spec:\n" + ("" if pod_resources is None else f"  resources: {pod_resources}\n") + "  containers:\n"
        "  - name: c\n"
        f"    resources: {{{container_limits}}}\n"
    )


def parse(text: str) -> Pod:
    (pod,) = parse_pods(text)
    return pod


def node(machine: Machine, version: str, gates: Mapping[str, bool] | None = None) -> NodeEmulator:
    config = versioned_config(version, managers=static_managers(), gates=gates)
    return NodeEmulator(parse_config(config), machine)


@pytest.mark.parametrize("pod_resources", EMPTY_POD_LEVEL)
def test_the_rule_itself(pod_resources: str) -> None:
    pod = parse(manifest("empty", pod_resources))
    assert pod.resources is not None  # kept as given: present, naming nothing
    assert compute_qos(pod, pod_level_resources_enabled=True) is QOSClass.BEST_EFFORT  # up to 1.36
    assert compute_qos(pod, True, fix_kubelet_qos_class=True) is QOSClass.GUARANTEED  # 1.37
    assert compute_qos(pod, False, fix_kubelet_qos_class=True) is QOSClass.GUARANTEED
    # Set pod-level resources still decide with the fix: the container's Guaranteed limits do not.
    burstable = parse(manifest("set", '{requests: {cpu: "2"}}'))
    assert compute_qos(burstable, True, True) is QOSClass.BURSTABLE


@pytest.mark.parametrize("pod_resources", EMPTY_POD_LEVEL)
@pytest.mark.parametrize(
    ("version", "gates", "pinned"),
    [
        ("1.34", None, False),
        ("1.35", None, False),
        ("1.36", None, False),
        ("1.37", None, True),
        ("master", None, True),
        ("1.37", {FIX_KUBELET_QOS_CLASS_GATE: False}, False),
    ],
)
def test_the_managers_serve_the_pod_from_137(
    four_nodes: Machine, version: str, gates: Mapping[str, bool] | None, pinned: bool, pod_resources: str
) -> None:
    """Up to 1.36 the pod is BestEffort: admitted on the shared pool, no memory blocks. From 1.37 its
    Guaranteed container gets 2 exclusive CPUs and its memory from one NUMA node (the managers look at the
    containers: ``IsPodLevelResourcesSet`` is false, so no pod-level path either)."""
    emulator = node(four_nodes, version, gates)
    report = emulator.admit(parse(manifest("empty", pod_resources)))
    assert report.admitted, report.message
    (container,) = report.containers
    assert bool(container.exclusive_cpus) is pinned
    if pinned:
        assert len(container.cpu_ids) == 2
    assert bool(container.memory) is pinned


def test_the_gate_is_137s() -> None:
    """Unknown before 1.37 (refused as such); at 1.37 it can be turned off, not while PodLevelResources is
    off and it on."""
    with pytest.raises(FeatureGateError, match=f"unrecognized feature gate: {FIX_KUBELET_QOS_CLASS_GATE}"):
        validate_feature_gates("1.36", {FIX_KUBELET_QOS_CLASS_GATE: False})
    validate_feature_gates("1.37", {FIX_KUBELET_QOS_CLASS_GATE: False})


@pytest.mark.parametrize(("version_fix", "victim"), [(False, "empty"), (True, "burstable")])
def test_preemption_order_follows_the_class(version_fix: bool, victim: str) -> None:
    """``getPodsToPreempt`` evicts BestEffort before Burstable before Guaranteed: up to 1.36 the
    ``resources: {}`` pod is the BestEffort one and goes; from 1.37 it is Guaranteed and the Burstable pod
    goes instead."""
    static = parse(manifest("critical", None, 'limits: {cpu: "1", memory: 1Gi}'))
    critical = replace(static, annotations={"kubernetes.io/config.source": "file"})
    empty = parse(manifest("empty", "{}", 'limits: {cpu: "1", memory: 1Gi}'))
    burstable = parse(manifest("burstable", None, 'limits: {cpu: "2", memory: 1Gi}, requests: {cpu: "1"}'))
    need = Requirements([Requirement("cpu", 1000)], pod_level_resources=True)
    chosen = pods_to_preempt(
        critical, [empty, burstable], need, pod_level_resources=True, fix_kubelet_qos_class=version_fix
    )
    assert [p.name for p in chosen] == [victim]
