"""The pod set a resync compares with an NRT's fingerprint (scheduler-plugins
``pkg/noderesourcetopology/cache/overreserve.go`` and ``cache.go``: ``podData``,
``makeNodeToPodDataMap``, ``podFingerprintForNodeTopology``, ``checkPodFingerprintForNode``, at commit
903da7df82cb8794dda8f2d510ba1156111662dd).

* The expected fingerprint is the NRT attribute ``nodeTopologyPodsFingerprint`` when present; then
  ``OnlyExclusiveResources`` counts only pods with exclusive resources, and ``Autodetect`` does so only when
  the attribute ``nodeTopologyPodsFingerprintMethod`` is exactly ``with-exclusive-resources``. Without the
  attribute the legacy annotation ``topology.node.k8s.io/fingerprint`` is read, always counting every pod.
* The pods are the lister's pods that pass the relevance filter, grouped by ``spec.nodeName``; a pod's
  exclusive-resource verdict uses the resource names of its node's *cached* NRT.
* The check is the podfingerprint library's: a malformed or other-version expected value is an error,
  like a mismatch, and the node is not flushed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum

from kubeletemu.podresources import fingerprint as pfp
from kubeletemu.scheduler.framework import memo
from kubeletemu.scheduler.nrtcache.exclusive import are_exclusive_for_pod, exclusive_container_names
from kubeletemu.scheduler.nrtcache.informers import PodFilter, PodObject
from kubeletemu.scheduler.objects import NodeResourceTopology

RESYNC_AUTODETECT = "Autodetect"
RESYNC_ALL = "All"
RESYNC_ONLY_EXCLUSIVE_RESOURCES = "OnlyExclusiveResources"
PREEMPTION_DISABLED = "Disabled"
PREEMPTION_ENABLED = "Enabled"

ResourceNamesLookup = Callable[[str], frozenset[str] | None]


class ExclusiveResources(IntEnum):
    """``ExclusiveResourceState``."""

    UNKNOWN = 0
    NONE = 1
    ALLOC = 2


@dataclass(frozen=True)
class PodData:
    """``podData``: what a resync keeps of a pod. With preemption enabled the exclusive containers are
    listed and ``exclusive_resources`` stays UNKNOWN; otherwise only the verdict is kept."""

    namespace: str
    name: str
    pinned_containers: tuple[str, ...] = ()
    exclusive_resources: ExclusiveResources = ExclusiveResources.UNKNOWN

    def has_exclusive_resources(self) -> bool:
        if self.exclusive_resources is not ExclusiveResources.UNKNOWN:
            return self.exclusive_resources is ExclusiveResources.ALLOC
        return len(self.pinned_containers) > 0


def categorize_pod(pod: PodObject, nrt_resources: frozenset[str] | None) -> PodData:
    # A function of the (frozen) pod: kept on it, as every resync lists every pod of the cluster again.
    answers: dict[tuple[frozenset[str] | None, str | None], bool] = memo(pod.pod, "_nrtcache_exclusive", dict)
    key = (nrt_resources, pod.qos_class)
    exclusive = answers.get(key)
    if exclusive is None:
        exclusive = answers[key] = are_exclusive_for_pod(pod.pod, nrt_resources, pod.qos_class)
    state = ExclusiveResources.ALLOC if exclusive else ExclusiveResources.NONE
    return PodData(pod.pod.namespace, pod.pod.name, exclusive_resources=state)


def categorize_pod_for_preemption(pod: PodObject, nrt_resources: frozenset[str] | None) -> PodData:
    pinned = exclusive_container_names(pod.pod, nrt_resources, pod.qos_class)
    return PodData(pod.pod.namespace, pod.pod.name, pinned_containers=pinned)


def make_node_to_pod_data_map(
    pods: Iterable[PodObject],
    is_pod_relevant: PodFilter,
    nrt_resources_lookup: ResourceNamesLookup,
    preemption_mode: str = PREEMPTION_DISABLED,
) -> dict[str, list[PodData]]:
    """``makeNodeToPodDataMap``: relevant pods by node name, in lister order."""
    categorize = categorize_pod_for_preemption if preemption_mode == PREEMPTION_ENABLED else categorize_pod
    out: dict[str, list[PodData]] = {}
    for pod in pods:
        if not is_pod_relevant(pod):
            continue
        out.setdefault(pod.node_name, []).append(categorize(pod, nrt_resources_lookup(pod.node_name)))
    return out


def pod_fingerprint_for_node_topology(nrt: NodeResourceTopology, method: str) -> tuple[str, bool]:
    """``podFingerprintForNodeTopology``: (expected fingerprint, count only exclusive-resource pods)."""
    value = nrt.attribute(pfp.ATTRIBUTE)
    if value is not None:
        only_exclusive = method == RESYNC_ONLY_EXCLUSIVE_RESOURCES or (
            method == RESYNC_AUTODETECT
            and nrt.attribute(pfp.ATTRIBUTE_METHOD) == pfp.METHOD_WITH_EXCLUSIVE_RESOURCES
        )
        return value, only_exclusive
    return nrt.annotations.get(pfp.ANNOTATION, ""), False


def check_pod_fingerprint_for_node(
    objs: Iterable[PodData], expected: str, only_exclusive: bool
) -> pfp.FingerprintError | None:
    """``checkPodFingerprintForNode``: None when ``expected`` signs the pods, else the library's error."""
    fingerprint = pfp.Fingerprint()
    fingerprint.add_all(
        (o.namespace, o.name) for o in objs if not only_exclusive or o.has_exclusive_resources()
    )
    try:
        fingerprint.check(expected)
    except pfp.FingerprintError as err:
        return err
    return None
