"""Emulated nodes for the podresources tests: synthetic hosts, configurations, pods."""

from __future__ import annotations

from pathlib import Path

import hostprobe
from hostprobe.synthetic import GIB_KIB, SyntheticHost, write_tree
from kubeletemu.config import load_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod

# The spec's worked two-NUMA example (podresources-and-fingerprints.md §4.3): NUMA0 = CPUs {0,2,4,6},
# NUMA1 = {1,3,5,7} (one thread per core), distances 10/20, 2 × 1 GiB hugepages per node. MemTotal is
# 10 GiB so that regular memory (MemTotal minus hugepages) is the example's 8 GiB per node.
WORKED_EXAMPLE_HOST = SyntheticHost(
    sockets=2,
    cores_per_socket=4,
    threads_per_core=1,
    interleaved_numbering=True,
    node_memory_kib=10 * GIB_KIB,
    hugepage_sizes_kib=(2048, 1048576),
    hugepages={0: {1048576: (2, 2)}, 1: {1048576: (2, 2)}},
    distances={(0, 1): 20},
)

# Reserved CPUs {0,1}; the static memory manager with 1 GiB reserved on NUMA0 (924Mi system-reserved plus
# the default 100Mi hard eviction threshold); one NIC per node.
WORKED_EXAMPLE_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
topologyManagerScope: container
cpuManagerPolicy: static
memoryManagerPolicy: Static
reservedSystemCPUs: "0,1"
systemReserved: {memory: 924Mi}
reservedMemory:
- numaNode: 0
  limits: {memory: 1Gi}
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
nodeName: worker-1
devices:
- resourceName: example.com/nic
  devices:
  - {id: n0, numaNodes: [0]}
  - {id: n1, numaNodes: [1]}
"""

WORKED_EXAMPLE_PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: gu-pod, namespace: ns1, uid: uid-gu}
spec:
  containers:
  - name: c1
    resources:
      limits: {cpu: "2", memory: 1Gi, hugepages-1Gi: 1Gi, example.com/nic: "1"}
---
apiVersion: v1
kind: Pod
metadata: {name: bu-pod, namespace: ns2, uid: uid-bu}
spec:
  containers:
  - name: c
    resources:
      requests: {cpu: 100m}
"""

# 2 sockets × 4 cores × 2 threads (CPUs 0-3,8-11 on node 0), 16 GiB and 512 × 2 MiB hugepages per node.
GENERAL_HOST = SyntheticHost(
    node_memory_kib=16 * GIB_KIB,
    hugepages={0: {2048: (512, 512)}, 1: {2048: (512, 512)}},
)

# Static CPU and memory managers, CPU 0 reserved, devices with and without topology, one on both nodes.
GENERAL_KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: {policy}
topologyManagerScope: container
cpuManagerPolicy: {cpu_policy}
memoryManagerPolicy: {memory_policy}
reservedSystemCPUs: "0"
systemReserved: {{memory: 924Mi}}
{reserved_memory}{feature_gates}"""

GENERAL_EMULATOR = """\
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
nodeName: node-a
devices:
- resourceName: example.com/nic
  devices:
  - {id: nic0, numaNodes: [0]}
  - {id: nic1, numaNodes: [1]}
- resourceName: example.com/gpu
  devices:
  - {id: gpu-both, numaNodes: [0, 1]}
- resourceName: example.com/fpga
  devices:
  - {id: fpga0}
"""


def general_config(
    policy: str = "best-effort",
    cpu_policy: str = "static",
    memory_policy: str = "Static",
    feature_gates: dict[str, bool] | None = None,
    kubelet_version: str | None = None,
) -> str:
    reserved = (
        "reservedMemory:\n- numaNode: 0\n  limits: {memory: 1Gi}\n" if memory_policy == "Static" else ""
    )
    gates = ""
    if feature_gates:
        gates = "featureGates:\n" + "".join(f"  {k}: {str(v).lower()}\n" for k, v in feature_gates.items())
    kubelet = GENERAL_KUBELET.format(
        policy=policy,
        cpu_policy=cpu_policy,
        memory_policy=memory_policy,
        reserved_memory=reserved,
        feature_gates=gates,
    )
    emulator = (
        GENERAL_EMULATOR
        if kubelet_version is None
        else f"{GENERAL_EMULATOR}kubeletVersion: {kubelet_version!r}\n"
    )
    return kubelet + emulator


def make_emulator(tmp_path: Path, host: SyntheticHost, config_text: str) -> NodeEmulator:
    """An in-memory node (no state directory) on a synthetic host."""
    sys_root, proc_root = write_tree(tmp_path / "host", host)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(config_text)
    machine = Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))
    return NodeEmulator(load_config([str(config_file)]), machine)


def admit_all(emulator: NodeEmulator, manifests: str) -> list[Pod]:
    pods = parse_pods(manifests, "test")
    for pod in pods:
        report = emulator.admit(pod)
        assert report.admitted, (pod.name, report.reason, report.message)
    return pods


def pod_manifest(
    name: str,
    namespace: str = "default",
    *,
    containers: str,
    init_containers: str = "",
    phase: str | None = None,
) -> str:
    """A pod; ``containers`` / ``init_containers`` are YAML list items indented by two spaces."""
    text = (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}, uid: uid-{name}}}\n"
        f"spec:\n"
    )
    if init_containers:
        text += "  initContainers:\n" + init_containers
    text += "  containers:\n" + containers
    if phase is not None:
        text += f"status: {{phase: {phase}}}\n"
    return text + "---\n"


def container(name: str, limits: str = "", requests: str = "", restart_policy: str | None = None) -> str:
    out = f"  - name: {name}\n"
    if restart_policy:
        out += f"    restartPolicy: {restart_policy}\n"
    resources = []
    if limits:
        resources.append(f"limits: {{{limits}}}")
    if requests:
        resources.append(f"requests: {{{requests}}}")
    if resources:
        out += "    resources: {" + ", ".join(resources) + "}\n"
    return out
