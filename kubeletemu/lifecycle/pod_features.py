"""The kubelet's pod-features admit handler (``lifecycle/handlers.go`` ``podFeaturesAdmitHandler``,
``features_linux.go`` ``isPodLevelResourcesSupported``): a pod that sets pod-level resources is refused
while the ``PodLevelResources`` gate is off.

Upstream read: ``features_linux.go`` at kubernetes/kubernetes 873c3ca26a00e5230a9584335ab2b5c7cf0c0b37
(reason ``PodLevelResourcesNotSupported``, message ``PodLevelResources feature gate is disabled``), and
``NewMainKubelet`` in a master ``kubelet.go`` of the code index (1.36 era, with NodeDeclaredFeatures): the
handler is appended after the resource allocator, the predicate handler and the AppArmor handler, before
the node-shutdown handler. ``IsPodLevelResourcesSet`` (kubernetes/component-helpers ``resource/helpers.go``,
identical at v0.33.0 957dcb7b … v0.36.0 6f41fd6d and master 1961876b): requests or limits name cpu, memory
or a ``hugepages-*`` resource.

The handler is the same in every supported kubelet; what moves is the gate's default: off in 1.33
(alpha), on from 1.34 (beta, kubernetes#132999). So a 1.33 kubelet refuses such a pod unless the gate is
turned on, and 1.34+ refuse it only with the gate turned off (registered as
``admission.pod-level-resources-gate-default`` in ``versions/data/behaviours/errors.json``).
"""

from __future__ import annotations

from collections.abc import Mapping

from kubeletemu.admission import PodAdmitResult
from kubeletemu.lifecycle.resources import is_supported_pod_level_resource
from kubeletemu.pod import Pod

POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON = "PodLevelResourcesNotSupported"
POD_LEVEL_RESOURCES_DISABLED_MESSAGE = "PodLevelResources feature gate is disabled"
POD_LEVEL_RESOURCES_GATE = "PodLevelResources"


def is_pod_level_resources_set(pod: Pod) -> bool:
    """``IsPodLevelResourcesSet``: ``spec.resources`` requests or limits name a supported resource."""
    spec = pod.resources
    if spec is None:
        return False
    return any(is_supported_pod_level_resource(name) for name in (*spec.requests, *spec.limits))


class PodFeaturesAdmitHandler:
    """``podFeaturesAdmitHandler`` on Linux. ``feature_gates`` are the kubelet's effective gates
    (``kubeletemu.versions.effective_gates``); a missing ``PodLevelResources`` entry is an error, not a
    silent default, since the default differs between versions."""

    def __init__(self, feature_gates: Mapping[str, bool]) -> None:
        if POD_LEVEL_RESOURCES_GATE not in feature_gates:
            raise ValueError(f"feature_gates: no {POD_LEVEL_RESOURCES_GATE} entry (pass the effective gates)")
        self.pod_level_resources = feature_gates[POD_LEVEL_RESOURCES_GATE]

    def admit(self, pod: Pod) -> PodAdmitResult:
        if not self.pod_level_resources and is_pod_level_resources_set(pod):
            return PodAdmitResult(
                admit=False,
                reason=POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON,
                message=POD_LEVEL_RESOURCES_DISABLED_MESSAGE,
            )
        return PodAdmitResult(admit=True)


__all__ = [
    "POD_LEVEL_RESOURCES_DISABLED_MESSAGE",
    "POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON",
    "PodFeaturesAdmitHandler",
    "is_pod_level_resources_set",
]
