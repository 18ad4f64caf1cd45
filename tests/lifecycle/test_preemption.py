"""Critical-pod preemption against the facts of the kubelet's own table
(``pkg/kubelet/preemption/preemption_test.go``, v1.37.2: TestGetPodsToPreempt,
TestAdmissionRequirementsDistance, TestAdmissionRequirementsSubtract, TestSmallerResourceRequest), and
the predicate handler's use of it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kubeletemu.admission import UNEXPECTED_ADMISSION_ERROR
from kubeletemu.lifecycle.predicate import PredicateAdmitHandler
from kubeletemu.lifecycle.preemption import (
    CONFIG_MIRROR_ANNOTATION,
    CONFIG_SOURCE_ANNOTATION,
    PreemptionError,
    Requirement,
    Requirements,
    is_critical_pod,
    pods_to_preempt,
    smaller_resource_request,
)
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from tests.lifecycle.builders import rl

MI = 1 << 20


def pod(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    *,
    guaranteed: bool = False,
    priority: int | None = None,
    annotations: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
) -> Pod:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None} | (extra or {})
    container = Container(
        f"{name}-container", requests=rl(requests), limits=rl(requests) if guaranteed else {}
    )
    return Pod(
        name,
        "default",
        f"uid-{name}",
        (container,),
        priority=priority,
        annotations=annotations or {},
    )


# getTestPods().
PODS = {
    "bestEffort": pod("bestEffort"),
    "burstable": pod("burstable", "100m", "100Mi"),
    "guaranteed": pod("guaranteed", "100m", "100Mi", guaranteed=True),
    "highRequestBurstable": pod("highRequestBurstable", "300m", "300Mi"),
    "highRequestGuaranteed": pod("highRequestGuaranteed", "300m", "300Mi", guaranteed=True),
    "clusterCritical": pod("clusterCritical", "100m", "100Mi", priority=2_000_000_000),
    "nodeCritical": pod("nodeCritical", "100m", "100Mi", priority=2_000_000_100),
}


def reqs(cpu: int, memory: int, pods: int) -> Requirements:
    """getAdmissionRequirementList(cpu millicores, memory Mi, pods)."""
    items = [
        Requirement(name, q) for name, q in (("cpu", cpu), ("memory", memory * MI), ("pods", pods)) if q > 0
    ]
    return Requirements(items)


# (name, preemptor, input pods, requirements (cpu, memory, pods), expected victims or None for an error)
GET_PODS_TO_PREEMPT: list[tuple[str, str, list[str], tuple[int, int, int], list[str] | None]] = [
    ("no requirements", "clusterCritical", [], (0, 0, 0), []),
    ("no pods", "clusterCritical", [], (0, 0, 1), None),
    ("equal pods and resources requirements", "clusterCritical", ["burstable"], (100, 100, 1), ["burstable"]),
    ("higher requirements than pod requests", "clusterCritical", ["burstable"], (200, 200, 2), None),
    (
        "choose between bestEffort and burstable",
        "clusterCritical",
        ["burstable", "bestEffort"],
        (0, 0, 1),
        ["bestEffort"],
    ),
    (
        "choose between burstable and guaranteed",
        "clusterCritical",
        ["burstable", "guaranteed"],
        (0, 0, 1),
        ["burstable"],
    ),
    (
        "choose lower request burstable if it meets requirements",
        "clusterCritical",
        ["bestEffort", "highRequestBurstable", "burstable"],
        (100, 100, 0),
        ["burstable"],
    ),
    (
        "choose higher request burstable if lower does not meet requirements",
        "clusterCritical",
        ["bestEffort", "burstable", "highRequestBurstable"],
        (150, 150, 0),
        ["highRequestBurstable"],
    ),
    (
        "multiple pods required",
        "clusterCritical",
        ["bestEffort", "burstable", "highRequestBurstable", "guaranteed", "highRequestGuaranteed"],
        (350, 350, 0),
        ["burstable", "highRequestBurstable"],
    ),
    (
        "evict guaranteed when we have to, and dont evict the extra burstable",
        "clusterCritical",
        ["bestEffort", "burstable", "highRequestBurstable", "guaranteed", "highRequestGuaranteed"],
        (0, 550, 0),
        ["highRequestBurstable", "highRequestGuaranteed"],
    ),
    (
        "evict cluster critical pod for node critical pod",
        "nodeCritical",
        ["clusterCritical"],
        (100, 0, 0),
        ["clusterCritical"],
    ),
    (
        "can not evict node critical pod for cluster critical pod",
        "clusterCritical",
        ["nodeCritical"],
        (100, 0, 0),
        None,
    ),
]


@pytest.mark.parametrize(
    ("preemptor", "inputs", "requirements", "expected"),
    [row[1:] for row in GET_PODS_TO_PREEMPT],
    ids=[row[0] for row in GET_PODS_TO_PREEMPT],
)
def test_get_pods_to_preempt(
    preemptor: str, inputs: Sequence[str], requirements: tuple[int, int, int], expected: list[str] | None
) -> None:
    victims = [PODS[n] for n in inputs]
    if expected is None:
        with pytest.raises(PreemptionError, match=r"^no set of running pods found to reclaim resources: "):
            pods_to_preempt(PODS[preemptor], victims, reqs(*requirements))
        return
    chosen = pods_to_preempt(PODS[preemptor], victims, reqs(*requirements))
    assert sorted(p.name for p in chosen) == sorted(expected)


@pytest.mark.parametrize(
    ("requirements", "name", "expected"),
    [
        ((0, 0, 0), "burstable", 0.0),
        ((100, 100, 1), "bestEffort", 2.0),
        ((100, 100, 1), "burstable", 0.0),
        ((50, 50, 0), "burstable", 0.0),
    ],
)
def test_distance(requirements: tuple[int, int, int], name: str, expected: float) -> None:
    assert reqs(*requirements).distance(PODS[name]) == expected


@pytest.mark.parametrize(
    ("initial", "name", "expected"),
    [
        ((0, 0, 0), "burstable", (0, 0, 0)),
        ((100, 100, 1), "bestEffort", (100, 100, 0)),
        ((100, 100, 1), "burstable", (0, 0, 0)),
        ((50, 50, 0), "burstable", (0, 0, 0)),
        ((200, 200, 1), "burstable", (100, 100, 0)),
    ],
)
def test_subtract(initial: tuple[int, int, int], name: str, expected: tuple[int, int, int]) -> None:
    assert reqs(*initial).subtract([PODS[name]]).items == reqs(*expected).items


def test_smaller_resource_request() -> None:
    none, low = pod("no-requests"), pod("low-memory", "100m", "50Mi")
    high_mem, high_cpu = pod("high-memory", "100m", "200Mi"), pod("high-cpu", "200m", "50Mi")
    assert not smaller_resource_request(low, none)
    assert smaller_resource_request(low, high_mem)
    assert not smaller_resource_request(high_mem, high_cpu)
    assert smaller_resource_request(low, low)
    assert smaller_resource_request(
        pod("s", extra={"storage": "300Mi"}), pod("t", extra={"storage": "200Mi"})
    )


def test_what_is_critical() -> None:
    assert is_critical_pod(pod("static", annotations={CONFIG_SOURCE_ANNOTATION: "file"}))
    assert not is_critical_pod(pod("api", annotations={CONFIG_SOURCE_ANNOTATION: "api"}))
    assert is_critical_pod(pod("mirror", annotations={CONFIG_MIRROR_ANNOTATION: ""}))
    assert is_critical_pod(pod("p", priority=2_000_000_000))
    assert not is_critical_pod(pod("p", priority=1_999_999_999))
    assert not is_critical_pod(pod("plain"))


ALLOCATABLE = {"cpu": Quantity.parse("1"), "memory": Quantity.parse("1Gi"), "pods": 110}
STATIC = {CONFIG_SOURCE_ANNOTATION: "file"}


def test_handler_refuses_a_critical_pod_with_the_kubelets_text() -> None:
    """The real kubelet's answer for a static pod asking 500m more than is free (docs/shadow.md)."""
    handler = PredicateAdmitHandler(ALLOCATABLE)
    running = [pod("critical-running", "1", annotations=STATIC)]
    decision = handler.decide(pod("static", "500m", annotations=STATIC), running)
    assert decision.result.reason == UNEXPECTED_ADMISSION_ERROR
    assert decision.result.message == (
        "Unexpected error while attempting to recover from admission failure: preemption: error finding a "
        "set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 500), ]"
    )
    assert decision.preempted == ()
    # The same pod without the annotation is an ordinary refusal.
    assert handler.admit(pod("api", "500m"), running).reason == "OutOfcpu"


def test_handler_admits_a_critical_pod_by_evicting() -> None:
    handler = PredicateAdmitHandler(ALLOCATABLE)
    running = [pod("g", "600m", "100Mi", guaranteed=True), pod("b", "300m"), pod("be")]
    decision = handler.decide(pod("static", "500m", annotations=STATIC), running)
    assert decision.result.admit
    # 400m missing: the burstable 300m is not enough alone, so the guaranteed 600m goes (burstable kept).
    assert [p.name for p in decision.preempted] == ["g"]


def test_pods_shortfall_counts_one_per_pod() -> None:
    handler = PredicateAdmitHandler(ALLOCATABLE, max_pods=2)
    running = [pod("b", "100m"), pod("be")]
    decision = handler.decide(pod("static", annotations=STATIC), running)
    assert decision.result.admit and [p.name for p in decision.preempted] == ["be"]
