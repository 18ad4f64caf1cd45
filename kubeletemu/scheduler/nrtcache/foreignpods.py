"""Foreign pods: pods bound to a node by someone other than this scheduler (scheduler-plugins
``pkg/noderesourcetopology/cache/foreign_pods.go`` and the wiring in ``pluginhelpers.go`` at commit
903da7df82cb8794dda8f2d510ba1156111662dd).

The detector listens to the cache's pod informer (Shared: the scheduler's, Dedicated: the cache's own). On
every Add, Update (the new object) and Delete (the last known object) of a bound pod whose
``spec.schedulerName`` is none of the registered profile names it calls ``NodeHasForeignPods`` on the pod's
node; with ``foreignPodsDetect: OnlyExclusiveResources`` only pods with exclusive resources (judged against
the resource names of the node's cached NRT) count. Registration replays the informer's current pods as
Adds, so pods already running under another scheduler mark their nodes as soon as the plugin starts.

Upstream keeps the profile names and the exclusive-only switch in package globals shared by every profile
(the last profile set up decides the switch); here each detector carries its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubeletemu.scheduler.nrtcache.exclusive import are_exclusive_for_pod
from kubeletemu.scheduler.nrtcache.informers import PodInformer, PodObject, WatchEvent
from kubeletemu.scheduler.nrtcache.overreserve import OverReserve

FOREIGN_PODS_DETECT_NONE = "None"
FOREIGN_PODS_DETECT_ALL = "All"
FOREIGN_PODS_DETECT_ONLY_EXCLUSIVE_RESOURCES = "OnlyExclusiveResources"


def is_foreign_pod(
    pod: PodObject,
    nrt_resources: frozenset[str] | None,
    profile_names: Iterable[str],
    only_exclusive_resources: bool,
) -> bool:
    """``IsForeignPod``."""
    if pod.node_name == "":
        return False
    if pod.scheduler_name in set(profile_names):
        return False
    if not only_exclusive_resources:
        return True
    return are_exclusive_for_pod(pod.pod, nrt_resources, pod.qos_class)


class ForeignPodsDetector:
    """``SetupForeignPodsDetector``: marks nodes of ``cache`` on ``informer`` events."""

    def __init__(
        self,
        cache: OverReserve,
        informer: PodInformer,
        profile_names: Iterable[str],
        only_exclusive_resources: bool = False,
    ) -> None:
        self.cache = cache
        self.profile_names = frozenset(profile_names)
        self.only_exclusive_resources = only_exclusive_resources
        informer.add_event_handler(self._on_event)

    def _on_event(self, event: WatchEvent, pod: PodObject) -> None:
        resources = self.cache.nrt_resource_names(pod.node_name)
        if is_foreign_pod(pod, resources, self.profile_names, self.only_exclusive_resources):
            self.cache.node_has_foreign_pods(pod.node_name, pod.pod)
