"""A fleet configuration's workload as ReplicaSets for a real cluster, from the fleet's own seeded arrival
stream (:func:`kubeletemu.fleet.workload.arrivals`), so the real run meets the pods the simulated one meets.

Each arrival is one slot of the fleet (its controller owes one pod from the arrival on and replaces a Failed
one): here a ReplicaSet of one replica, named as the fleet names the slot, created at the arrival's time.
kube-controller-manager's ReplicaSet controller creates its pod and replaces a Failed pod with a new one
(``FilterActivePods`` counts neither Failed nor Succeeded pods, ``pkg/controller/replicaset/replica_set.go``
v1.37.2), as the fleet's controller does. A slot whose lifetime ends (counted from its Running, as the
fleet counts it) has its ReplicaSet deleted (``propagationPolicy: Background``) and then its running pod
(grace period 0): the real nodes run no containers that could exit, so the deletion stands for the fleet's
Succeeded, which frees the pod's resources at once (:mod:`.measure`).

A ReplicaSet's pod template must restart Always (apps/v1 validation); the kubelet here runs no container, so
that changes nothing a run measures.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from kubeletemu.fleet.spec import ConfigurationSpec
from kubeletemu.fleet.workload import arrivals

SLOT_LABEL = "fleet.kubeletemu.io/slot"
TEMPLATE_LABEL = "fleet.kubeletemu.io/template"
DEFAULT_IMAGE = "registry.k8s.io/pause:3.10"  # the API server requires an image; nothing pulls it


@dataclass(frozen=True)
class PlannedSlot:
    """One arrival: when (seconds from the run's start), its ReplicaSet, and how long it runs once Running
    (None: to the end of the run)."""

    at: float
    name: str
    template: str
    lifetime: float | None
    replica_set: dict[str, Any]


def plan(config: ConfigurationSpec, namespace: str, scheduler_name: str | None = None) -> list[PlannedSlot]:
    """The configuration's arrivals for its seed, each with its ReplicaSet in ``namespace``, its pods for
    ``scheduler_name`` (None: the template's own, else the default scheduler)."""
    workload = config.workload
    if workload.trace or any(t.replicas is not None for t in workload.templates):
        raise ValueError("the real run takes weighted templates only (no trace, no replicas templates)")
    out = []
    for arrival in arrivals(workload, config.seed):
        template = workload.templates[arrival.template]
        manifest = json.loads(template.manifest)
        rs = replica_set(manifest, arrival.name, template.name, namespace, scheduler_name)
        out.append(PlannedSlot(arrival.at, arrival.name, template.name, arrival.lifetime, rs))
    return out


def replica_set(
    pod: dict[str, Any], name: str, template: str, namespace: str, scheduler_name: str | None
) -> dict[str, Any]:
    """A ReplicaSet of one replica whose pod is the template's, labelled with its slot."""
    labels = {SLOT_LABEL: name, TEMPLATE_LABEL: template}
    metadata = pod.get("metadata") or {}
    spec = copy.deepcopy(pod.get("spec") or {})
    for container in spec.get("containers") or []:
        container.setdefault("image", DEFAULT_IMAGE)
    spec["restartPolicy"] = "Always"
    if scheduler_name is not None:
        spec["schedulerName"] = scheduler_name
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {SLOT_LABEL: name}},
            "template": {
                "metadata": {
                    "labels": {**(metadata.get("labels") or {}), **labels},
                    "annotations": dict(metadata.get("annotations") or {}),
                },
                "spec": spec,
            },
        },
    }
