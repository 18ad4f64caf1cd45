"""How often each scheduler-side model disagrees with the kubelet, measured on exact nodes.

Random node states are built by admitting random pod streams into emulated nodes (synthetic shapes, every
Topology Manager policy and scope; one NVIDIA GPU per NUMA node, a name Koordinator's DeviceShare knows);
each node publishes its NodeResourceTopology as its exporter would (:mod:`kubeletemu.scheduler.live`; in
koordlet's flavour also its ``Device`` object, the GPU holders carrying their ``device-allocated``
annotation); then every model answers "does pod P fit node N?" (its Filter) and the node answers exactly
(``WouldAdmit``). Per model, a confusion matrix:

* ``agree_fit`` / ``agree_reject``: the model and the kubelet agree;
* ``false_fit``: the model lets the pod through, the kubelet rejects it — a future TopologyAffinityError
  (or another admission failure);
* ``false_reject``: the model filters the node out, the kubelet would admit — a needlessly pending pod;
* ``crash``: the shipped plugin would panic on this node;

with the smallest example of each kind of error (fewest CPUs requested, then first found).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from kubeletemu.scheduler import live
from kubeletemu.scheduler.catalog import Setup
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.profile import evaluate
from kubeletemu.simulate.topology import TopologySource, synthetic_shape

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
SCOPES = ("container", "pod")
# (sockets, cores per socket, threads per core, NUMA nodes per socket): 2, 4 and 8 NUMA nodes.
SHAPES = ((2, 8, 2, 1), (2, 8, 2, 2), (2, 16, 2, 4))

_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: {policy}
topologyManagerScope: {scope}
cpuManagerPolicy: static
memoryManagerPolicy: Static
kubeReserved: {{cpu: "1", memory: 1Gi}}
reservedMemory:
- numaNode: 0
  limits: {{memory: 1124Mi}}
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
nodeName: {name}
devices:
- resourceName: nvidia.com/gpu
  devices: [{devices}]
"""


@dataclass(frozen=True)
class ExactNode:
    """An emulated node and what a scheduler sees of it, per exporter flavour."""

    label: str  # shape, policy, scope
    emulator: NodeEmulator
    infos: Mapping[str, NodeInfo]

    @property
    def info(self) -> NodeInfo:
        return self.infos[live.FLAVOUR_RTE]


@dataclass
class Example:
    node: str
    pod: str
    model: str
    kubelet: str


@dataclass
class Confusion:
    agree_fit: int = 0
    agree_reject: int = 0
    false_fit: int = 0
    false_reject: int = 0
    crash: int = 0
    examples: dict[str, tuple[int, Example]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.agree_fit + self.agree_reject + self.false_fit + self.false_reject + self.crash

    def note(self, kind: str, weight: int, example: Example) -> None:
        current = self.examples.get(kind)
        if current is None or weight < current[0]:
            self.examples[kind] = (weight, example)


def _pod_manifest(rng: random.Random, name: str) -> str:
    containers = []
    for c in range(rng.choice((1, 1, 1, 2))):
        if rng.random() < 0.15:
            limits = "{cpu: 500m, memory: 512Mi}"  # a Burstable pod: shares CPUs
            requests = "requests: {cpu: 250m, memory: 256Mi}, "
        else:
            cpu = rng.choice((1, 2, 2, 3, 4, 4, 6, 8, 12))
            memory = rng.choice((1, 2, 4, 8))
            gpu = ', nvidia.com/gpu: "1"' if rng.random() < 0.1 else ""
            limits = f'{{cpu: "{cpu}", memory: {memory}Gi{gpu}}}'
            requests = ""
        containers.append(f"{{name: c{c}, resources: {{{requests}limits: {limits}}}}}")
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: m}}\n"
        f"spec: {{containers: [{', '.join(containers)}]}}\n"
    )


def random_pod(rng: random.Random, name: str) -> Pod:
    [pod] = parse_pods(_pod_manifest(rng, name))
    return pod


def _machine(shape: tuple[int, int, int, int]) -> Machine:
    # Probed once per process: TopologySource keeps the machine of each synthetic shape.
    sockets, cores, threads, per_socket = shape
    host = synthetic_shape(
        sockets=sockets, cores_per_socket=cores, threads_per_core=threads, nodes_per_socket=per_socket,
        memory_gib_per_node=32,
    )  # fmt: skip
    return TopologySource.synthetic_host(host).machine()


def exact_nodes(count: int, seed: int) -> Iterator[ExactNode]:
    """``count`` emulated nodes of every shape, policy and scope in turn, each filled by a random stream."""
    rng = random.Random(seed)
    for index in range(count):
        shape = SHAPES[index % len(SHAPES)]
        policy = POLICIES[(index // len(SHAPES)) % len(POLICIES)]
        scope = SCOPES[(index // (len(SHAPES) * len(POLICIES))) % len(SCOPES)]
        numa = shape[0] * shape[3]
        devices = ", ".join(f"{{id: g{n}, numaNodes: [{n}]}}" for n in range(numa))
        name = f"n{index:04d}"
        config = parse_config(_CONFIG.format(policy=policy, scope=scope, name=name, devices=devices))
        emulator = NodeEmulator(config, _machine(shape))
        for p in range(rng.randint(0, 12)):
            emulator.admit(random_pod(rng, f"{name}-p{p}"))
        label = f"{numa}-NUMA {policy}/{scope}"
        yield ExactNode(label, emulator, {f: live.node_info(emulator, f) for f in live.FLAVOURS})


def _requested_cpus(pod: Pod) -> int:
    return sum(c.requests["cpu"].milli_value() for c in pod.containers if "cpu" in c.requests)


def _describe(pod: Pod) -> str:
    return "; ".join(
        ", ".join(f"{k}={v.text}" for k, v in sorted(c.requests.items())) for c in pod.containers
    )


def measure(
    setups: Sequence[Setup], nodes: int = 400, pods_per_node: int = 50, seed: int = 1
) -> dict[str, Confusion]:
    """The confusion matrix of every setup over ``nodes * pods_per_node`` (pod, node) pairs, each reading
    the node's NRT in its exporter's flavour."""
    results = {setup.label: Confusion() for setup in setups}
    rng = random.Random(seed + 1)
    for exact in exact_nodes(nodes, seed):
        for i in range(pods_per_node):
            pod = random_pod(rng, f"q{i}")
            truth = exact.emulator.would_admit(pod)
            kubelet = "admit" if truth.admitted else f"{truth.reason}: {truth.message}"
            weight = _requested_cpus(pod)
            for setup in setups:
                verdict = evaluate(pod, exact.infos[setup.flavour], setup.profile)
                counts = results[setup.label]
                example = Example(exact.label, _describe(pod), verdict.status.message or "fits", kubelet)
                if verdict.crash is not None:
                    counts.crash += 1
                    counts.note(
                        "crash", weight, Example(exact.label, _describe(pod), str(verdict.crash), kubelet)
                    )
                elif verdict.status.ok and truth.admitted:
                    counts.agree_fit += 1
                elif not verdict.status.ok and not truth.admitted:
                    counts.agree_reject += 1
                elif verdict.status.ok:
                    counts.false_fit += 1
                    counts.note("false_fit", weight, example)
                else:
                    counts.false_reject += 1
                    counts.note("false_reject", weight, example)
    return results
