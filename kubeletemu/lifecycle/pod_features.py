"""The kubelet's pod-features admit handler (``lifecycle/handlers.go`` ``podFeaturesAdmitHandler``,
``features_linux.go`` ``isPodLevelResourcesSupported``): from 1.34, a pod that sets pod-level resources is
refused while the ``PodLevelResources`` gate is off. A 1.33 kubelet has no such handler.

Sources read (the kubelet's own code at each release, from the openshift/kubernetes copy that
openshift/microshift keeps in ``deps/github.com/openshift/kubernetes``, its ``go.mod`` naming the upstream
tag; snapshot 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b):

* v1.33.13 (branch ``release-4.20``, 78a395343031f8800b7139df070665e03b42f934): ``pkg/kubelet/lifecycle``
  has no ``features_*.go``, no ``PodLevelResourcesNotAdmittedReason`` and no pod-features handler;
  ``NewMainKubelet`` registers eviction, sysctl, the resource allocator, the predicate handler, AppArmor and
  node shutdown, nothing else. With the gate off (1.33's default) such a pod is admitted and its
  ``spec.resources`` ignored: the node fit, the pod cgroup and the QoS read ``SkipPodLevelResources`` =
  not the gate (``scheduler/framework/types.go``, ``cm/helpers_linux.go``). The same holds at v1.32.10
  (kubeedge/kubeedge 16cd8548eedb81af293b94f27844144c080eaa89 ``vendor/``).
* v1.34.9 (``release-4.21``, 473c3de15d9aeeb399aa95250672c07655554015) and v1.35.6 (``release-4.22``):
  ``features_linux.go`` (reason ``PodLevelResourcesNotSupported``, message ``PodLevelResources feature gate
  is disabled``), identical to kubernetes/kubernetes 873c3ca26a00e5230a9584335ab2b5c7cf0c0b37; the handler
  appended after the AppArmor handler (and, in 1.35, before NodeDeclaredFeatures'). It came with
  kubernetes#133046 (merged July 2025, the 1.34 cycle), which also refuses such pods on Windows nodes.
* 1.36/master: the same handler (a 1.36-era ``kubelet.go`` of the code index).

Only a kubelet whose gate is on admits such a pod through an API server whose gate is off: there
``dropDisabledPodLevelResources`` (``pkg/api/pod/util.go``, v1.33.13) drops ``spec.resources`` on create, so
the handler meets the field from a skewed API server or a static pod. ``IsPodLevelResourcesSet``
(kubernetes/component-helpers ``resource/helpers.go``, identical at v0.33.0
957dcb7ba3735d9bb7b603781d325474eb3ccc7b … master 1961876b9c5704173fa79ed20e27a0710ce169fd): requests or
limits name cpu, memory or a ``hugepages-*`` resource. Registered as ``admission.pod-features-handler`` in
``versions/data/behaviours/errors.json``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubeletemu.admission import PodAdmitResult
from kubeletemu.pod import Pod, is_pod_level_resources_set
from kubeletemu.versions.behaviours import in_effect

POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON = "PodLevelResourcesNotSupported"
POD_LEVEL_RESOURCES_DISABLED_MESSAGE = "PodLevelResources feature gate is disabled"
POD_LEVEL_RESOURCES_GATE = "PodLevelResources"
# The behaviour row: which kubelet versions register the handler at all.
POD_FEATURES_HANDLER = "admission.pod-features-handler"


class PodFeaturesAdmitHandler:
    """``podFeaturesAdmitHandler`` on Linux. ``feature_gates`` are the kubelet's effective gates
    (``kubeletemu.versions.effective_gates``); a missing ``PodLevelResources`` entry is an error, not a
    silent default, since the default differs between versions. ``kubelet_version`` decides whether the
    kubelet has the handler (1.34 on); a kubelet without it admits every pod here."""

    def __init__(self, feature_gates: Mapping[str, bool], kubelet_version: str) -> None:
        if POD_LEVEL_RESOURCES_GATE not in feature_gates:
            raise ValueError(f"feature_gates: no {POD_LEVEL_RESOURCES_GATE} entry (pass the effective gates)")
        self.pod_level_resources = feature_gates[POD_LEVEL_RESOURCES_GATE]
        self.registered = in_effect(POD_FEATURES_HANDLER, kubelet_version)

    def admit(self, pod: Pod) -> PodAdmitResult:
        if self.registered and not self.pod_level_resources and is_pod_level_resources_set(pod):
            return PodAdmitResult(
                admit=False,
                reason=POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON,
                message=POD_LEVEL_RESOURCES_DISABLED_MESSAGE,
            )
        return PodAdmitResult(admit=True)


__all__ = [
    "POD_FEATURES_HANDLER",
    "POD_LEVEL_RESOURCES_DISABLED_MESSAGE",
    "POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON",
    "PodFeaturesAdmitHandler",
    "is_pod_level_resources_set",
]
