"""The Topology Manager's refusal of a pod with pod-level resources under ``PodLevelResourceManagers``
(1.36+): reason ``TopologyAffinityError``, message prefixed "Pod Scope " and naming the scope
(``PodLevelTopologyAffinityError`` of ``topology_manager.go``, raised by ``scope_pod.go``'s
``admitUsingPodResources`` and ``scope_container.go``'s ``Admit``; read at v1.36.3, openshift/microshift
release-4.23 @ ab25d11482, and at master). Any other refusal keeps the plain text."""

from __future__ import annotations

import pytest

from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.pod import Pod
from tests.nodes import static_managers
from tests.versions.helpers import pod, versioned_config

PLAIN = "Resources cannot be allocated with Topology locality"
POD_SCOPE = "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
CONTAINER_SCOPE = (
    "Pod Scope pod with pod-level resources failed admission with a container-level topology manager"
)
GATE_ON = {"PodLevelResourceManagers": True}
# 10 CPUs cannot come from one NUMA node of two_nodes (8 CPUs each, CPU 0 reserved).
POD_LEVEL = pod("plr", 'cpu: "10", memory: 1Gi', 'limits: {cpu: "10", memory: 1Gi}')
CONTAINER_ONLY = pod("plain", 'cpu: "10", memory: 1Gi')


def refusal(machine: Machine, version: str, scope: str, gates: dict[str, bool] | None, subject: Pod) -> str:
    config = versioned_config(version, "single-numa-node", scope, managers=static_managers(), gates=gates)
    report = NodeEmulator(parse_config(config), machine).would_admit(subject)
    assert (report.admitted, report.reason) == (False, "TopologyAffinityError")
    return report.message


@pytest.mark.parametrize("version", ["1.36", "1.37", "master"])
@pytest.mark.parametrize(("scope", "message"), [("pod", POD_SCOPE), ("container", CONTAINER_SCOPE)])
def test_pod_level_refusal_names_the_scope(
    two_nodes: Machine, version: str, scope: str, message: str
) -> None:
    assert refusal(two_nodes, version, scope, GATE_ON, POD_LEVEL) == message


@pytest.mark.parametrize("scope", ["pod", "container"])
def test_plain_text_without_the_gate_or_without_pod_level_resources(two_nodes: Machine, scope: str) -> None:
    # The same pod without PodLevelResourceManagers: the managers skip it, so ask with container limits only.
    assert refusal(two_nodes, "1.36", scope, None, CONTAINER_ONLY) == PLAIN
    # The gate on, but no spec.resources: the container-resources flow and its text.
    assert refusal(two_nodes, "1.36", scope, GATE_ON, CONTAINER_ONLY) == PLAIN
    # 1.35 has no such gate: every refusal is the plain one.
    assert refusal(two_nodes, "1.35", scope, None, CONTAINER_ONLY) == PLAIN
