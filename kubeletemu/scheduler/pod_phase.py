"""Terminated pods on the scheduler side: none of the modelled schedulers counts them on their node.

* kube-scheduler (v1.33.13 … v1.36.3, ``pkg/scheduler/scheduler.go`` ``newPodInformer``; the same code in
  the v1.35.7 scheduler-plugins and the v1.35.6 Koordinator build on): the pod informer's field selector is
  ``status.phase!=Succeeded,status.phase!=Failed``, so a pod that terminates leaves the informer as a
  Delete and its node's NodeInfo (requested resources, pod count) no longer holds it. The default
  NodeResourcesFit / BalancedAllocation, scheduler-plugins' NodeResourceTopologyMatch and Koordinator's
  plugins all read that NodeInfo.
* Koordinator (koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``): the NUMA plugin's,
  DeviceShare's and the reservation plugin's pod event handlers (``pod_eventhandler.go``,
  ``eventhandler_pod.go``) delete the allocation of a pod for which ``util.IsPodTerminated`` holds.
* scheduler-plugins' NRT cache (``podprovider.go`` at ``903da7df82cb8794dda8f2d510ba1156111662dd``) is the
  exception: its ``Dedicated`` informer has no field selector and ``IsPodRelevantDedicated`` keeps every
  bound pod that is not Pending, terminated ones included
  (:mod:`kubeletemu.scheduler.nrtcache.informers`).

The rule every scheduler-side view follows (the fleet's included): a pod is on its node for the scheduler
unless :func:`is_pod_terminated`; :class:`~kubeletemu.scheduler.framework.NodeInfo` drops such pods itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubeletemu.pod import Pod

# status.phase values of a pod that has terminated (v1.PodSucceeded, v1.PodFailed).
TERMINATED_PHASES = frozenset({"Succeeded", "Failed"})


def is_pod_terminated(pod: Pod) -> bool:
    """Koordinator's ``util.IsPodTerminated``; the pods kube-scheduler's informer never lists."""
    return pod.phase in TERMINATED_PHASES


def scheduler_visible(pods: Iterable[Pod]) -> tuple[Pod, ...]:
    """``pods`` without the terminated ones, in order: what the scheduler's cache holds of them."""
    return tuple(pod for pod in pods if not is_pod_terminated(pod))
