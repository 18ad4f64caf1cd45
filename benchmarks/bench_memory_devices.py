"""Medians (and p90) of the memory and device managers' hot paths on an 8-NUMA-node machine.

Run: .venv/bin/python benchmarks/bench_memory_devices.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import fmt, measure

from kubeletemu.devicemanager import DeviceManager
from kubeletemu.memorymanager import MachineInfo, NUMANode, new_manager
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyHint

GI = 1 << 30
NODES = 8


class NilStore:
    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        return TopologyHint()

    def get_policy(self) -> object:
        return None


def report(label: str, fn: Callable[[], object]) -> None:
    median, p90 = measure(fn, repeat=200)
    print(f"{label:<42} median {fmt(median)}   p90 {fmt(p90)}")


def main() -> None:
    machine = MachineInfo(NUMANode(n, 64 * GI, {2048: 1024, 1048576: 4}) for n in range(NODES))
    reserved = [{"numaNode": n, "limits": {"memory": "1Gi"}} for n in range(NODES)]
    mm = new_manager("Static", machine, NilStore(), reserved_memory=reserved, kube_reserved={"memory": "8Gi"})
    res = {
        "cpu": Quantity.parse("4"),
        "memory": Quantity.parse("8Gi"),
        "hugepages-2Mi": Quantity.parse("512Mi"),
        "hugepages-1Gi": Quantity.parse("1Gi"),
    }
    pod = Pod("p", "ns", "p", (Container("c", requests=res, limits=res),))
    report("memory hints (8 nodes, 3 resources)", lambda: mm.get_topology_hints(pod, pod.containers[0]))

    def admit_release() -> None:
        mm.allocate(pod, pod.containers[0])
        mm.remove_pod("p")

    report("memory allocate + release", admit_release)

    dm = DeviceManager(list(range(NODES)), NilStore())
    dm.register_resource("example.com/vf", [{"id": f"vf{i}", "numaNodes": [i % NODES]} for i in range(64)])
    lim = {"example.com/vf": Quantity.parse(4)}
    dpod = Pod("d", "ns", "d", (Container("c", requests=lim, limits=lim),))
    report("device hints (8 nodes, 64 devices)", lambda: dm.get_topology_hints(dpod, dpod.containers[0]))

    def dev_admit_release() -> None:
        dm.allocate(dpod, dpod.containers[0])
        dm.remove_pod("d")

    report("device allocate + release", dev_admit_release)


if __name__ == "__main__":
    main()
