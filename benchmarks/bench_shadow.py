"""Shadow mode: what one refresh of the mirror costs on a full node.

Run: python benchmarks/bench_shadow.py [--pods 40]
A synthetic 4-NUMA host (2 sockets x 2 nodes x 16 cores x 2 threads = 128 CPUs, 64 GiB per node) under
single-numa-node with the static CPU and Memory Managers, filled by a reference emulator in the kubelet's
role with Guaranteed pods (1-4 CPUs, memory, some with a NIC) and as many BestEffort pods. Printed:

* an unchanged refresh (read the files and the podresources answers, compare digests): the periodic cost;
* a rebuild of the mirror (parse and verify the checkpoints, seed and validate the managers, rebuild pods);
* the replay when every decision agrees (one candidate per pod), and with one pod the emulator would place
  elsewhere (the backward search tries other candidates at that step);
* a whole rebuild + replay as a refresh after an admission pays it.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hostprobe
from benchmarks._timing import fmt, measure
from hostprobe.synthetic import GIB_KIB, SyntheticHost, write_tree
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.config import parse_config
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.state.checkpoint import CPUManagerCheckpoint, load_checkpoint
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.podresources import view
from kubeletemu.shadow import KubeletPaths, build_mirror, replay, take_snapshot
from tests.shadow.kubelet_double import write_like_kubelet

HOST = SyntheticHost(
    sockets=2, nodes_per_socket=2, cores_per_socket=32, threads_per_core=2, node_memory_kib=64 * GIB_KIB
)
KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
cpuManagerPolicy: static
memoryManagerPolicy: Static
reservedSystemCPUs: "0"
systemReserved: {memory: 924Mi}
reservedMemory:
- numaNode: 0
  limits: {memory: 1Gi}
"""
DEVICES = "".join(f"  - {{id: nic{i}, numaNodes: [{i % 4}]}}\n" for i in range(16))
EMULATOR = (
    "---\napiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\nnodeName: bench\ndevices:\n"
    "- resourceName: example.com/nic\n  devices:\n" + DEVICES
)
OWN = "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\nnodeName: bench\n"


class Source:
    def __init__(self, emulator: NodeEmulator) -> None:
        self.listing = view.list_pods(emulator).response
        self.allocatable_response = view.allocatable_resources(emulator)

    def list(self) -> v1.ListPodResourcesResponse:
        return self.listing

    def allocatable(self) -> v1.AllocatableResourcesResponse:
        return self.allocatable_response


def fill(emulator: NodeEmulator, guaranteed: int) -> int:
    rng = random.Random(7)
    admitted = 0
    for i in range(guaranteed):
        cpus = rng.choice((1, 2, 2, 4))
        nic = ", example.com/nic: 1" if i % 8 == 0 else ""
        for kind, limits in (
            ("gu", f"{{cpu: '{cpus}', memory: {rng.choice((256, 512, 1024))}Mi{nic}}}"),
            ("be", "{}"),
        ):
            name = f"{kind}-{i}"
            (pod,) = parse_pods(
                f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: bench, uid: {name}}}\n"
                f"spec:\n  containers:\n  - name: app\n    resources: {{limits: {limits}}}\n",
                "bench",
            )
            admitted += emulator.admit(pod).admitted
    return admitted


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=40, help="Guaranteed pods (as many BestEffort ones)")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-shadow-") as scratch:
        base = Path(scratch)
        sys_root, proc_root = write_tree(base / "host", HOST)
        machine = Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))
        reference = NodeEmulator(parse_config(KUBELET + EMULATOR, "reference"), machine, base / "state")
        admitted = fill(reference, args.pods)
        root = base / "kubelet"
        write_like_kubelet(root / "config.yaml", KUBELET.encode())
        for name in (
            "cpu_manager_state",
            "memory_manager_state",
            "device-plugins/kubelet_internal_checkpoint",
        ):
            write_like_kubelet(root / name, (base / "state" / name).read_bytes())
        source = Source(reference)
        paths = KubeletPaths.resolve(root)
        own = parse_config(OWN, "own")
        snapshot = take_snapshot(paths, source)
        mirror = build_mirror(own, machine, snapshot)
        agreeing = replay(mirror)
        print(
            f"node: {machine.cpu_topology.num_cpus} CPUs, {len(machine.numa_node_ids)} NUMA nodes; "
            f"{admitted} pods admitted ({len(agreeing.order)} with exclusive resources), "
            f"{agreeing.containers_checked} containers replayed, {len(agreeing.divergences)} divergences"
        )
        if agreeing.divergences:
            print("  unexpected divergences:", *[d.line() for d in agreeing.divergences], sep="\n  ")
            return 1

        def row(label: str, fn: object, repeat: int = args.repeat) -> None:
            median, p90 = measure(fn, repeat=repeat, warmup=1)  # type: ignore[arg-type]
            print(f"  {label:<48} median {fmt(median)}   p90 {fmt(p90)}")

        row("unchanged refresh (snapshot + digest)", lambda: take_snapshot(paths, source))
        row("rebuild the mirror", lambda: build_mirror(own, machine, take_snapshot(paths, source)))
        row("replay, every decision agrees", lambda: replay(mirror))
        row(
            "refresh after an admission (rebuild + replay)",
            lambda: replay(build_mirror(own, machine, take_snapshot(paths, source))),
        )

        # One pod the emulator would place elsewhere: move the last pod's CPUs to free ones further up.
        state = root / "cpu_manager_state"
        checkpoint = load_checkpoint(state.read_bytes())
        entries = checkpoint.entries or {}
        last = max(
            entries, key=lambda uid: max(CPUSet.parse(c).list() for c in (entries[uid] or {}).values())
        )
        containers = entries[last]
        assert containers is not None
        old = CPUSet.parse(containers["app"])
        default = CPUSet.parse(checkpoint.default_cpu_set)
        new = CPUSet(sorted((default - CPUSet.of(0)).list())[-old.size() :])
        containers["app"] = str(new)
        write_like_kubelet(
            state, CPUManagerCheckpoint(checkpoint.policy_name, str((default | old) - new), entries).marshal()
        )
        for pod in source.listing.pod_resources:
            if pod.name == last:
                del pod.containers[0].cpu_ids[:]
                pod.containers[0].cpu_ids.extend(new.list())
        diverging = build_mirror(own, machine, take_snapshot(paths, source))
        result = replay(diverging)
        print(f"  (one pod moved from CPUs {old} to {new}: {len(result.divergences)} divergence reported)")
        row("replay with one divergence", lambda: replay(diverging), repeat=max(3, args.repeat // 3))

        # A history the checkpoints cannot show: the first pod's CPUs moved up, as if a since-deleted pod
        # had held its place when the others were admitted. Nothing after it is explained: the worst case.
        checkpoint = load_checkpoint(state.read_bytes())
        entries = checkpoint.entries or {}
        first = min(
            entries, key=lambda uid: min(CPUSet.parse(c).list() for c in (entries[uid] or {}).values())
        )
        containers = entries[first]
        assert containers is not None
        old = CPUSet.parse(containers["app"])
        default = CPUSet.parse(checkpoint.default_cpu_set)
        new = CPUSet(sorted((default - CPUSet.of(0)).list())[-old.size() :])
        containers["app"] = str(new)
        write_like_kubelet(
            state, CPUManagerCheckpoint(checkpoint.policy_name, str((default | old) - new), entries).marshal()
        )
        for pod in source.listing.pod_resources:
            if pod.name == first:
                del pod.containers[0].cpu_ids[:]
                pod.containers[0].cpu_ids.extend(new.list())
        history = build_mirror(own, machine, take_snapshot(paths, source))
        result = replay(history)
        print(f"  (first pod moved from CPUs {old} to {new}: {len(result.divergences)} divergences reported)")
        row("replay of an unexplainable history", lambda: replay(history), repeat=3)
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
