"""Reading the nrt_cache_* conformance tables: NRT and pod manifests, by value or by fixture name."""

from __future__ import annotations

import json
from typing import Any

from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod
from kubeletemu.scheduler.nrtcache import DEFAULT_SCHEDULER_NAME, InformerStore, PodObject
from kubeletemu.scheduler.objects import NodeResourceTopology, parse_objects
from tests.conformance.loader import load

# Upstream's &corev1.Pod{}: no name, no namespace, no containers.
PLACEHOLDER_POD = Pod(name="", namespace="", uid="", containers=())


class Tables:
    def __init__(self, name: str) -> None:
        self.doc = load(name)
        self.fixtures: dict[str, Any] = self.doc.get("fixtures", {})

    def nrt(self, raw: Any) -> NodeResourceTopology:
        if isinstance(raw, str):
            raw = self.fixtures["nrts"][raw]
        (obj,) = parse_objects(json.dumps(raw), "table")
        assert isinstance(obj, NodeResourceTopology)
        return obj

    def maybe_nrt(self, raw: Any) -> NodeResourceTopology | None:
        return None if raw is None else self.nrt(raw)

    def pod_object(self, raw: Any) -> PodObject:
        if raw is None:
            return PodObject(PLACEHOLDER_POD)
        if isinstance(raw, str):
            raw = self.fixtures["pods"][raw]
        spec = raw.get("spec", {})
        status = raw.get("status", {})
        return PodObject(
            pod_from_manifest(raw, source="table"),
            scheduler_name=spec.get("schedulerName", DEFAULT_SCHEDULER_NAME),
            qos_class=status.get("qosClass"),
        )

    def pod(self, raw: Any) -> Pod:
        return self.pod_object(raw).pod

    def add_pod(self, store: InformerStore, raw: Any) -> None:
        obj = self.pod_object(raw)
        store.add_pod(obj.pod, scheduler_name=obj.scheduler_name, qos_class=obj.qos_class)
