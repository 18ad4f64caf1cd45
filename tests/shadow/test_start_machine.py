"""The mirror keeps the NUMA nodes' memory the kubelet started with, as the running kubelet does.

Seen on the e2e VM (virtio-mem): NUMA node 0 grew by 640 MiB minutes after a real kubelet 1.37.2 started; its
memory manager checkpoint kept the start-time total, and the mirror refused it ("the expected machine state
is different from the real one") until it took the totals from the checkpoint.
"""

from __future__ import annotations

from dataclasses import replace

from kubeletemu.cpumanager import CPUTopology
from kubeletemu.machine import Machine
from kubeletemu.memorymanager import MachineInfo, NUMANode
from kubeletemu.memorymanager.state.state import MemoryTable, NUMANodeState
from kubeletemu.shadow import KubeletPaths, take_snapshot
from kubeletemu.shadow.mirror import build_mirror
from kubeletemu.shadow.start_machine import machine_at_kubelet_start
from tests.shadow.conftest import DirectSource, machine_of, own_config
from tests.shadow.kubelet_double import FakeKubelet

GROWN = 5 * 128 * 1024 * 1024  # five 128 MiB memory blocks hot-plugged after the kubelet started


def test_memory_plugged_after_the_kubelets_start_keeps_the_checkpoints_totals(kubelet: FakeKubelet) -> None:
    probed = machine_of(kubelet)
    grown = [
        replace(node, memory=node.memory + GROWN) if node.id == 0 else node for node in probed.memory.nodes
    ]
    now = replace(probed, memory=MachineInfo(grown, memory_capacity=probed.memory.memory_capacity))
    snapshot = take_snapshot(KubeletPaths.resolve(kubelet.root), DirectSource(kubelet))

    mirror = build_mirror(own_config(), now, snapshot)

    ours, theirs = mirror.emulator.cm.memory.state, kubelet.emulator.cm.memory.state
    assert ours.get_machine_state() == theirs.get_machine_state()
    [note] = [w for w in mirror.warnings if w.startswith("NUMA node 0: memory")]
    assert f"{probed.memory.nodes[0].memory + GROWN} probed now" in note


def test_hugepages_and_untouched_nodes() -> None:
    nodes = (NUMANode(0, 8 << 30, {2048: 10}), NUMANode(1, 8 << 30, {2048: 0}))
    machine = Machine(CPUTopology([]), tuple((n.id, None) for n in nodes), MachineInfo(nodes))
    state = {
        0: NUMANodeState(
            0, {"memory": MemoryTable(total=8 << 30), "hugepages-2Mi": MemoryTable(total=4 << 21)}, [0]
        )
    }
    started, notes = machine_at_kubelet_start(machine, state)
    assert [(n.id, n.memory, dict(n.hugepages)) for n in started.memory.nodes] == [
        (0, 8 << 30, {2048: 4}),
        (1, 8 << 30, {2048: 0}),  # not in the checkpoint: as probed
    ]
    assert notes == [
        "NUMA node 0: 4 hugepages of 2048 KiB in the kubelet's memory manager checkpoint, 10 probed now: "
        "the mirror uses the checkpoint's"
    ]
    assert machine_at_kubelet_start(started, state) == (started, [])
