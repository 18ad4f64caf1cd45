"""A what-if runs on a copy of the running managers, not on managers started again.

The kubelet checks the Memory Manager's state (``validateState``) only when it starts; admissions can reach
states that check refuses (kubernetes#113035), and the kubelet keeps admitting on them. So ``would_admit``
and ``fork`` answer on such a state, while another kubelet version (a restart) refuses it as that kubelet
would at start-up.
"""

from __future__ import annotations

import pytest

from hostprobe.synthetic import SyntheticHost
from kubeletemu.config import parse_config
from kubeletemu.emulator import EmulatorError, NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.memorymanager.errors import MemoryManagerError
from kubeletemu.pod import Pod
from tests.nodes import probe_machine, static_managers
from tests.versions.helpers import versioned_config

HOST = SyntheticHost(sockets=2, cores_per_socket=4, threads_per_core=2)
GI = 1 << 30
POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, uid: {name}-uid}}
spec:
  containers:
  - name: app
    resources: {{limits: {{cpu: "1", memory: {memory}}}}}
"""


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return probe_machine(tmp_path_factory.mktemp("host"), HOST)


def pod(name: str, memory: str = "1Gi") -> Pod:
    (parsed,) = parse_pods(POD.format(name=name, memory=memory))
    return parsed


def drifted_node(machine: Machine) -> NodeEmulator:
    """A node whose Memory Manager state no longer matches what its assignments imply: node 0 charges a
    GiB that no container holds, as a state the start-up check refuses does."""
    node = NodeEmulator(parse_config(versioned_config("1.35", managers=static_managers())), machine)
    assert node.admit(pod("first")).admitted
    machine_state = node.cm.memory.state.get_machine_state()
    table = machine_state[0].memory_map["memory"]
    table.reserved += GI
    table.free -= GI
    node.cm.memory.state.set_machine_state(machine_state)
    return node


def test_the_drifted_state_is_one_a_kubelet_start_refuses(machine: Machine) -> None:
    node = drifted_node(machine)
    with pytest.raises(MemoryManagerError, match="the expected machine state is different from the real one"):
        node.cm.restarted(node.config)


def free_memory(node: NodeEmulator) -> int:
    state = node.cm.memory.state.get_machine_state()
    return sum(state[n].memory_map["memory"].free for n in state)


def test_would_admit_and_fork_answer_on_it_as_the_running_kubelet_admits(machine: Machine) -> None:
    node = drifted_node(machine)
    before = free_memory(node)
    report = node.would_admit(pod("asked"))
    assert report.admitted, report.message
    fork = node.fork()
    assert fork.admit(pod("forked")).admitted
    assert free_memory(node) == before  # neither the what-if nor the fork touched this node
    assert node.admit(pod("admitted")).admitted  # the running kubelet admits on that state too
    assert free_memory(node) == before - GI
    assert sorted(node.registry.uids()) == ["admitted-uid", "first-uid"]


def test_another_kubelet_version_is_a_restart_and_refuses_it(machine: Machine) -> None:
    node = drifted_node(machine)
    with pytest.raises(EmulatorError, match=r"kubeletVersion 1\.34.*expected machine state is different"):
        node.at_version("1.34")
