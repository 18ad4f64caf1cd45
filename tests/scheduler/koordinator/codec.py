"""Decoding of the koord_*.json conformance rows into the model's types."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from typing import Any

from kubeletemu.bitmask import BitMask
from kubeletemu.lifecycle.resources import Resource, pod_request_list
from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.koordinator.args import ScoringStrategy
from kubeletemu.scheduler.koordinator.cpu_topology import CPUTopology, cpu_topology_for_test
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint, ProviderHints
from kubeletemu.scheduler.koordinator.options import NUMANodeResource, TopologyOptions

PRIORITY_PROD_VALUE_MAX = 9999  # extension.PriorityProdValueMax
RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"  # extension.AnnotationNodeRawAllocatable


def cpu_options(topology: CPUTopology, numa_nodes: int, **extra: Any) -> TopologyOptions:
    """The TopologyOptions the Go tests build: ``{CPUTopology, MaxRefCount 1}`` with cpu = CPUsPerNode (and
    ``extra`` resources, e.g. memory) on NUMA nodes ``0 .. numa_nodes-1``."""
    per_node = {"cpu": Fraction(topology.cpus_per_node()), **extra}
    return TopologyOptions(
        cpu_topology=topology,
        max_ref_count=1,
        numa_node_resources=tuple(NUMANodeResource(i, dict(per_node)) for i in range(numa_nodes)),
    )


def hint(raw: dict[str, Any]) -> NUMATopologyHint:
    affinity = raw["affinity"]
    return NUMATopologyHint(
        None if affinity is None else BitMask.of(*affinity),
        raw["unsatisfied"],
        raw["preferred"],
        raw["score"],
    )


def hint_list(raw: list[Any] | None) -> list[NUMATopologyHint] | None:
    return None if raw is None else [hint(h) for h in raw]


def provider(raw: dict[str, Any] | None) -> ProviderHints | None:
    if raw is None:
        return None
    return {name: hint_list(hints) for name, hints in raw.items()}


def pod(raw: dict[str, Any], name: str = "pod") -> Pod:
    """An ``st.MakePod()`` chain: one container with the requests, labels, priority, node, uid."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": raw.get("labels", {})}
    if "uid" in raw:
        metadata["uid"] = raw["uid"]
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": raw.get("requests", {})}}]}
    if "priority" in raw:
        spec["priority"] = raw["priority"]
    if "node" in raw:
        spec["nodeName"] = raw["node"]
    return pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def resources(raw: dict[str, str]) -> dict[str, Fraction]:
    return {name: Quantity.parse(text).amount for name, text in raw.items()}


def cpu_topology(raw: dict[str, Any] | None) -> CPUTopology | None:
    """``cpuTopology``: null = none (nil), ``{empty: true}`` = ``&CPUTopology{}``, else
    ``buildCPUTopologyForTest(sockets, nodesPerSocket, coresPerNode, cpusPerCore)``."""
    if raw is None:
        return None
    if raw.get("empty"):
        return CPUTopology()
    return cpu_topology_for_test(*raw["buildCPUTopologyForTest"])


def pod_object(raw: dict[str, Any] | None, name: str = "pod") -> Pod:
    """A pod literal: labels, annotations, priority and containers ``[{name, requests}]``; null is
    ``&corev1.Pod{}`` (no containers)."""
    raw = raw or {"containers": []}
    metadata = {
        "name": name,
        "namespace": "default",
        "labels": raw.get("labels", {}),
        "annotations": raw.get("annotations", {}),
    }
    containers = raw["containers"] or [{"name": "c"}]
    spec: dict[str, Any] = {
        "containers": [
            {"name": c["name"], "resources": {"requests": c.get("requests", {})}} for c in containers
        ]
    }
    if raw.get("priority") is not None:
        spec["priority"] = raw["priority"]
    built = pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    return built if raw["containers"] else replace(built, containers=())


def make_pod(raw: dict[str, Any] | None, name: str = "pod") -> Pod:
    """The Go helpers ``makePod`` / ``makePodOnNode(requests, node, isCPUSet)``: priority 9999; a cpuset pod
    is labelled LSR and, once on a node, annotated with the resource status cpuset ``0-(cpu-1)``."""
    if raw is None:
        return pod_object(None, name)
    labels = {ext.LABEL_POD_QOS: ext.QOS_LSR} if raw["cpuset"] else {}
    annotations = {}
    if raw["cpuset"] and raw.get("node"):
        cpus = int(resources(raw["requests"])["cpu"])
        status = {"cpuset": f"0-{cpus - 1}"}
        annotations[ext.ANNOTATION_RESOURCE_STATUS] = json.dumps(status, separators=(",", ":"))
    built = pod_object(
        {
            "labels": labels,
            "annotations": annotations,
            "priority": PRIORITY_PROD_VALUE_MAX,
            "containers": [{"name": "c", "requests": raw["requests"]}],
        },
        name,
    )
    return replace(built, node_name=raw.get("node"))


def requested(pods: list[Pod]) -> Resource:
    """A snapshot NodeInfo's ``Requested``: the sum of its pods' requests."""
    total = Resource()
    for item in pods:
        total.add(pod_request_list(item))
    return total


def amplified_node(raw: dict[str, Any]) -> tuple[dict[str, Fraction], dict[str, str]]:
    """The Go helper ``makeNode(name, capacity, ratio)``: (allocatable, annotations); allocatable is the
    capacity with cpu amplified by the ratio, the annotations hold the raw allocatable and the ratio."""
    capacity = resources(raw["capacity"])
    allocatable = dict(capacity)
    ratio = float(raw["cpuAmplificationRatio"])
    ext.amplify_resource_list(allocatable, {"cpu": ratio}, "cpu")
    annotations = {
        RAW_ALLOCATABLE: json.dumps(raw["capacity"], separators=(",", ":")),
        ext.ANNOTATION_NODE_AMPLIFICATION_RATIO: f'{{"cpu":{ratio:.2f}}}',
    }
    return allocatable, annotations


def scoring_strategy(raw: dict[str, Any]) -> ScoringStrategy:
    """``{type, resources: [{name, weight}]}``."""
    return ScoringStrategy(raw["type"], tuple((r["name"], r["weight"]) for r in raw["resources"]))
