"""Objects of the upstream Go tables, read as the Go tests build them.

The Go tests construct ``v1.Pod`` structs directly: no API-server defaulting or validation (empty or
repeated container names, extended resources requested without limits, names like ``gpu``). So a
table's pod is read literally here; where the API server would accept it too, the drivers check that
:func:`kubeletemu.manifest.pod_from_manifest` gives the same answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeletemu.manifest import ManifestError, pod_from_manifest
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.objects import Node, NodeResourceTopology, parse_objects


def _resources(raw: Mapping[str, Any] | None) -> dict[str, Quantity]:
    return {name: Quantity.parse(value) for name, value in (raw or {}).items()}


def _container(raw: Mapping[str, Any]) -> Container:
    resources = raw.get("resources", {})
    return Container(
        raw.get("name", ""),
        requests=_resources(resources.get("requests")),
        limits=_resources(resources.get("limits")),
        restart_policy=raw.get("restartPolicy"),
    )


def literal_pod(manifest: Mapping[str, Any]) -> Pod:
    metadata = manifest.get("metadata", {})
    spec = manifest.get("spec", {})
    name = metadata.get("name", "")
    return Pod(
        name,
        metadata.get("namespace", "default"),
        f"uid-{name}",
        tuple(_container(c) for c in spec.get("containers", [])),
        tuple(_container(c) for c in spec.get("initContainers", [])),
        overhead=_resources(spec.get("overhead")),
    )


def api_pod(manifest: Mapping[str, Any]) -> Pod | None:
    """The pod as the API server would store it, None when the API server would refuse it."""
    try:
        return pod_from_manifest(dict(manifest))
    except ManifestError:
        return None


def topology(manifest: Mapping[str, Any]) -> NodeResourceTopology:
    (obj,) = parse_objects(json.dumps(manifest), "table")
    assert isinstance(obj, NodeResourceTopology)
    return obj


def node(manifest: Mapping[str, Any]) -> Node:
    (obj,) = parse_objects(json.dumps(manifest), "table")
    assert isinstance(obj, Node)
    return obj
