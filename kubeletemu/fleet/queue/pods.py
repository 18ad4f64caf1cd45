"""What the scheduling queue reads of a pod: the project's :class:`~kubeletemu.pod.Pod`, and
:class:`SchedulingPod` for the few fields only kube-scheduler reads (``status.nominatedNodeName``,
``spec.schedulingGates``, ``spec.tolerations``, ``spec.schedulerName``, ``metadata.resourceVersion``).

A plain ``Pod`` is a pod with none of them set: not nominated, not gated, the default scheduler's. The
accessors below answer for both, so the queue takes any ``Pod``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import memo

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(frozen=True)
class AffinityTerm:
    """A required pod-affinity term as ``framework.AffinityTerm`` matches it: the namespaces it selects
    (the pod's own when the term names none) and a label selector of required labels (``match_labels``)
    and required keys (``exists``, the ``Exists`` operator). Only
    ``getUnschedulablePodsWithCrossTopologyTerm``
    (QueueingHints off) reads it."""

    namespaces: tuple[str, ...]
    match_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    exists: tuple[str, ...] = ()

    def matches(self, pod: Pod) -> bool:
        if pod.namespace not in self.namespaces:
            return False
        labels = dict(pod.labels)
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            key in labels for key in self.exists
        )


@dataclass(frozen=True)
class SchedulingPod(Pod):
    """A pod with the scheduler-only fields (``v1.Pod`` as kube-scheduler's informer delivers it)."""

    nominated_node_name: str = ""
    scheduling_gates: tuple[str, ...] = ()
    # Only the number of tolerations matters to the queue (UpdatePodToleration: tolerations can only be
    # added); each is kept as its text.
    tolerations: tuple[str, ...] = ()
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    resource_version: str = ""
    required_affinity_terms: tuple[AffinityTerm, ...] = ()


def nominated_node_name(pod: Pod) -> str:
    return pod.nominated_node_name if isinstance(pod, SchedulingPod) else ""


def scheduling_gates(pod: Pod) -> tuple[str, ...]:
    return pod.scheduling_gates if isinstance(pod, SchedulingPod) else ()


def tolerations(pod: Pod) -> tuple[str, ...]:
    return pod.tolerations if isinstance(pod, SchedulingPod) else ()


def required_affinity_terms(pod: Pod) -> tuple[AffinityTerm, ...]:
    return pod.required_affinity_terms if isinstance(pod, SchedulingPod) else ()


def scheduler_name(pod: Pod) -> str:
    return pod.scheduler_name if isinstance(pod, SchedulingPod) else DEFAULT_SCHEDULER_NAME


def priority(pod: Pod) -> int:
    """``corev1helpers.PodPriority``: ``spec.priority``, 0 when unset."""
    return pod.priority if pod.priority is not None else 0


def pod_key(pod: Pod) -> str:
    """The queues' key (``cache.NewObjectName(namespace, name)``): ``namespace/name``, or ``name``. Kept
    on the (frozen) pod outside its fields, as its QoS class is: the queues ask for it several times an
    attempt."""
    key: str | None = pod.__dict__.get("_queue_key")  # memo's store, read without building its lambda
    if key is not None:
        return key
    return memo(pod, "_queue_key", lambda: f"{pod.namespace}/{pod.name}" if pod.namespace else pod.name)


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """``isPodUpdated``: anything besides the status (phase, nominated node), the resource version
    changed."""
    return _strip(old) != _strip(new)


def _strip(pod: Pod) -> Pod:
    stripped = dataclasses.replace(pod, phase="")
    if isinstance(stripped, SchedulingPod):
        stripped = dataclasses.replace(stripped, nominated_node_name="", resource_version="")
    return stripped
