"""The kubelet's critical-pod preemption (``pkg/kubelet/preemption/preemption.go``,
``CriticalPodAdmissionHandler``), the predicate admit handler's ``AdmissionFailureHandler``.

When the node fit refuses a *critical* pod only for insufficient resources, the kubelet evicts a minimal set
of preemptable pods instead of refusing, then admits the pod. What is critical is
``pkg/kubelet/types/pod_update.go`` ``IsCriticalPod``: a static pod (a ``kubernetes.io/config.source``
annotation other than ``api``), a mirror pod (a ``kubernetes.io/config.mirror`` annotation), or a pod whose
``spec.priority`` is at least ``scheduling.SystemCriticalPriority`` (2000000000).

The victims are chosen by ``getPodsToPreempt``: the candidates (``Preemptable``) split by QoS class; the
guaranteed pods needed if every burstable and best-effort pod went, then the burstable pods needed if every
best-effort pod and those guaranteed went, then the best-effort pods needed; each group by
``getPodsToPreemptByDistance`` (the pod nearest to what is still missing, ties to the smaller memory then
cpu request, the later candidate winning a full tie). When the candidates cannot cover the shortfall, the
admission fails with ``UnexpectedAdmissionError`` and the text below. The algorithm and texts are the same
in v1.33.13, v1.34.9, v1.35.6, v1.36.3 and v1.37.2 (1.37 only skips resize operations, which are not
modelled here). Each victim is killed with phase ``Failed``, reason ``Preempting`` and message
``Preempted in order to admit critical pod``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kubeletemu.lifecycle.resources import PODS, milli_value, pod_request_list, value
from kubeletemu.pod import Pod, QOSClass, compute_qos

CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
API_SERVER_SOURCE = "api"
# scheduling.SystemCriticalPriority = 2 * HighestUserDefinablePriority.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000

# What killPodFunc writes into the victim's status (events.PreemptContainer and the handler's message).
PREEMPTED_PHASE = "Failed"
PREEMPTED_REASON = "Preempting"
PREEMPTED_MESSAGE = "Preempted in order to admit critical pod"
# predicateAdmitHandler's wrapping of the handler's error, then evictPodsToFreeRequests' own.
RECOVERY_ERROR_PREFIX = "Unexpected error while attempting to recover from admission failure: "
PREEMPTION_ERROR_PREFIX = "preemption: error finding a set of pods to preempt: "


class PreemptionError(Exception):
    """``getPodsToPreempt`` found no set of pods: the text is ``no set of running pods found ...``."""


def is_static_pod(pod: Pod) -> bool:
    """``IsStaticPod``: the config-source annotation is present and is not ``api``."""
    source = pod.annotations.get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != API_SERVER_SOURCE


def is_mirror_pod(pod: Pod) -> bool:
    """``IsMirrorPod``: the mirror annotation is present (whatever its value)."""
    return CONFIG_MIRROR_ANNOTATION in pod.annotations


def is_critical_pod(pod: Pod) -> bool:
    """``IsCriticalPod``: static, mirror, or ``spec.priority >= SystemCriticalPriority``."""
    if is_static_pod(pod) or is_mirror_pod(pod):
        return True
    return pod.priority is not None and pod.priority >= SYSTEM_CRITICAL_PRIORITY


def preemptable(preemptor: Pod, preemptee: Pod) -> bool:
    """``Preemptable``: a critical pod preempts any non-critical one; otherwise a strictly higher priority,
    both being set."""
    if is_critical_pod(preemptor) and not is_critical_pod(preemptee):
        return True
    if preemptor.priority is not None and preemptee.priority is not None:
        return preemptor.priority > preemptee.priority
    return False


def resource_request(pod: Pod, name: str, *, pod_level_resources: bool = False) -> int:
    """``resource.GetResourceRequest`` (``pkg/api/v1/resource/helpers.go``): ``pods`` is 1; otherwise the
    pod's effective request without overhead, the overhead added only when that is non-zero; cpu in
    millicores, anything else in whole units, both rounded up."""
    if name == PODS:
        return 1
    requests = pod_request_list(pod, pod_level_resources=pod_level_resources, exclude_overhead=True)
    amount = requests.get(name, Fraction(0))
    if amount != 0 and name in pod.overhead:
        amount += pod.overhead[name].amount
    return milli_value(amount) if name == "cpu" else value(amount)


@dataclass(frozen=True)
class Requirement:
    """``admissionRequirement``: how much of one resource is still missing."""

    resource_name: str
    quantity: int


class Requirements:
    """``admissionRequirementList`` with its ``distance``, ``subtract`` and ``toString``."""

    def __init__(self, items: Iterable[Requirement], *, pod_level_resources: bool = False) -> None:
        self.items = tuple(items)
        self.pod_level_resources = pod_level_resources

    def __len__(self) -> int:
        return len(self.items)

    def _request(self, pod: Pod, name: str) -> int:
        return resource_request(pod, name, pod_level_resources=self.pod_level_resources)

    def distance(self, pod: Pod) -> float:
        """The squared fractions of each requirement ``pod`` would leave unmet, summed."""
        dist = 0.0
        for req in self.items:
            remaining = float(req.quantity - self._request(pod, req.resource_name))
            if remaining > 0:
                fraction = remaining / float(req.quantity)
                dist += fraction * fraction  # math.Pow(x, 2) is exactly x*x
        return dist

    def subtract(self, pods: Sequence[Pod]) -> Requirements:
        """What would remain missing once ``pods`` were gone (met requirements dropped)."""
        left: list[Requirement] = []
        for req in self.items:
            quantity = req.quantity
            for pod in pods:
                quantity -= self._request(pod, req.resource_name)
                if quantity <= 0:
                    break
            if quantity > 0:
                left.append(Requirement(req.resource_name, quantity))
        return Requirements(left, pod_level_resources=self.pod_level_resources)

    def to_string(self) -> str:
        """``[(res: cpu, q: 500), ]``: Go's ``toString``, trailing separator included."""
        return "[" + "".join(f"(res: {r.resource_name}, q: {r.quantity}), " for r in self.items) + "]"


def _unmet(requirements: Requirements) -> PreemptionError:
    return PreemptionError(f"no set of running pods found to reclaim resources: {requirements.to_string()}")


def smaller_resource_request(pod1: Pod, pod2: Pod, *, pod_level_resources: bool = False) -> bool:
    """``smallerResourceRequest``: memory first, then cpu; equal requests count as smaller."""
    for name in ("memory", "cpu"):
        req1 = resource_request(pod1, name, pod_level_resources=pod_level_resources)
        req2 = resource_request(pod2, name, pod_level_resources=pod_level_resources)
        if req1 != req2:
            return req1 < req2
    return True


def pods_to_preempt_by_distance(pods: Sequence[Pod], requirements: Requirements) -> list[Pod]:
    """``getPodsToPreemptByDistance``: repeatedly the candidate nearest to the remaining requirements,
    removed from the candidates by swapping the last one into its place (as upstream does: the order
    decides later ties)."""
    candidates = list(pods)
    chosen: list[Pod] = []
    while len(requirements) > 0:
        if not candidates:
            raise _unmet(requirements)
        best_distance = float(len(requirements) + 1)
        best = 0
        for i, pod in enumerate(candidates):
            dist = requirements.distance(pod)
            if dist < best_distance or (
                dist == best_distance
                and smaller_resource_request(
                    pod, candidates[best], pod_level_resources=requirements.pod_level_resources
                )
            ):
                best_distance, best = dist, i
        victim = candidates[best]
        requirements = requirements.subtract([victim])
        chosen.append(victim)
        candidates[best] = candidates[-1]
        candidates.pop()
    return chosen


def pods_to_preempt(
    preemptor: Pod,
    pods: Iterable[Pod],
    requirements: Requirements,
    *,
    pod_level_resources: bool = False,
    fix_kubelet_qos_class: bool = False,
) -> list[Pod]:
    """``getPodsToPreempt``: the victims, best-effort first, then burstable, then guaranteed; raises
    :class:`PreemptionError` when the preemptable pods cannot cover ``requirements``. The QoS classes are
    ``v1qos.GetPodQOS``'s under the two gates (``compute_qos``)."""
    groups: Mapping[QOSClass, list[Pod]] = {q: [] for q in QOSClass}
    for pod in pods:
        if preemptable(preemptor, pod):
            groups[compute_qos(pod, pod_level_resources, fix_kubelet_qos_class)].append(pod)
    best_effort = groups[QOSClass.BEST_EFFORT]
    burstable = groups[QOSClass.BURSTABLE]
    guaranteed = groups[QOSClass.GUARANTEED]
    unmet = requirements.subtract([*best_effort, *burstable, *guaranteed])
    if len(unmet) > 0:
        raise _unmet(unmet)
    guaranteed_out = pods_to_preempt_by_distance(
        guaranteed, requirements.subtract([*best_effort, *burstable])
    )
    burstable_out = pods_to_preempt_by_distance(
        burstable, requirements.subtract([*best_effort, *guaranteed_out])
    )
    best_effort_out = pods_to_preempt_by_distance(
        best_effort, requirements.subtract([*burstable_out, *guaranteed_out])
    )
    return [*best_effort_out, *burstable_out, *guaranteed_out]


def refusal_message(err: PreemptionError) -> str:
    """The admit result's message when no set of pods suffices (reason ``UnexpectedAdmissionError``)."""
    return f"{RECOVERY_ERROR_PREFIX}{PREEMPTION_ERROR_PREFIX}{err}"


__all__ = [
    "API_SERVER_SOURCE",
    "CONFIG_MIRROR_ANNOTATION",
    "CONFIG_SOURCE_ANNOTATION",
    "PREEMPTED_MESSAGE",
    "PREEMPTED_PHASE",
    "PREEMPTED_REASON",
    "SYSTEM_CRITICAL_PRIORITY",
    "PreemptionError",
    "Requirement",
    "Requirements",
    "is_critical_pod",
    "is_mirror_pod",
    "is_static_pod",
    "pods_to_preempt",
    "pods_to_preempt_by_distance",
    "preemptable",
    "refusal_message",
    "resource_request",
    "smaller_resource_request",
]
