"""The pods the exporter tests admit and remove, and the sequence of steps."""

from __future__ import annotations

from typing import Any


def _pod(name: str, namespace: str, *containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {"containers": list(containers)},
    }


def _container(
    name: str, *, limits: dict[str, str] | None = None, requests: dict[str, str] | None = None
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    return {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": resources}


# Guaranteed with exclusive CPUs, memory, hugepages and a NIC; Burstable with nothing exclusive; Guaranteed
# with a fractional CPU (memory blocks, no CPUs); Burstable holding the device on both NUMA nodes; Guaranteed
# with more memory than one NUMA node has (a block on both nodes, best-effort policy).
GU = _pod(
    "gu",
    "e2e-a",
    _container("c", limits={"cpu": "2", "memory": "1Gi", "hugepages-2Mi": "64Mi", "example.com/nic": "1"}),
)
BU = _pod("bu", "e2e-b", _container("c", requests={"cpu": "100m"}))
GU_FRACTION = _pod("gu-fraction", "e2e-a", _container("c", limits={"cpu": "1500m", "memory": "512Mi"}))
GPU_BOTH = _pod("gpu-both", "e2e-b", _container("c", requests={"cpu": "1"}, limits={"example.com/gpu": "1"}))
BIG_MEMORY = _pod("big-memory", "e2e-a", _container("c", limits={"cpu": "2", "memory": "20Gi"}))

PODS = (GU, BU, GU_FRACTION, GPU_BOTH, BIG_MEMORY)
# (admit, remove) per step. The pod over both NUMA nodes comes first: the memory manager will not span
# a node that already holds a single-node allocation.
STEPS: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = [
    ([], []),
    ([BIG_MEMORY, BU], []),
    ([GU, GU_FRACTION, GPU_BOTH], []),
    ([], [BIG_MEMORY, GPU_BOTH, GU, BU]),
    # One pod left, then none: nfd-topology-updater keeps the fingerprint of the last non-empty List it
    # scanned, which is this one only when the node empties in one remove.
    ([], [GU_FRACTION]),
]
