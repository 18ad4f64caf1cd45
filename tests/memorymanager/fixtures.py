"""A small two-node machine with both hugepage sizes, and pod builders, for the memory manager tests."""

from __future__ import annotations

from typing import Any

from kubeletemu.memorymanager import MachineInfo, NUMANode
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyHint

Ki = 1024
Mi = 1024 * Ki
Gi = 1024 * Mi

# Per node: 8Gi of memory, 512 x 2Mi pages (1Gi) and 2 x 1Gi pages (2Gi).
MACHINE = MachineInfo(
    [
        NUMANode(0, 8 * Gi, {2048: 512, 1048576: 2}),
        NUMANode(1, 8 * Gi, {2048: 512, 1048576: 2}),
    ]
)
# 512Mi reserved on each node = kubeReserved 924Mi + the default eviction threshold 100Mi.
RESERVED = [
    {"numaNode": 0, "limits": {"memory": "512Mi"}},
    {"numaNode": 1, "limits": {"memory": "512Mi"}},
]
KUBE_RESERVED = {"memory": "924Mi"}
EVICTION = "100Mi"


def guaranteed(name: str, cpu: str = "1", memory: str = "1Gi", **extra: str) -> Container:
    res = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse(memory)}
    res.update({k.replace("_", "-"): Quantity.parse(v) for k, v in extra.items()})
    return Container(name, requests=res, limits=res)


def pod(uid: str, *containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(name=uid, namespace="default", uid=uid, containers=containers, init_containers=init)


class StoreStub:
    """A Topology Manager store with hints set by hand."""

    def __init__(self) -> None:
        self.hints: dict[tuple[str, str], TopologyHint] = {}

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        return self.hints.get((pod_uid, container_name), TopologyHint())

    def get_policy(self) -> Any:
        raise AssertionError("not used")
