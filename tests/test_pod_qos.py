"""QoS class as Kubernetes computes it (ComputePodQOS): only cpu and memory count."""

from __future__ import annotations

from kubeletemu.pod import Container, Pod, QOSClass, ResourceRequirements, compute_qos
from kubeletemu.quantity import Quantity


def res(**values: str) -> dict[str, Quantity]:
    return {k.replace("_", "-"): Quantity.parse(v) for k, v in values.items()}


def pod(
    *containers: Container, init: tuple[Container, ...] = (), resources: ResourceRequirements | None = None
) -> Pod:
    return Pod(
        name="p", namespace="ns", uid="u", containers=containers, init_containers=init, resources=resources
    )


def test_best_effort_without_requests_or_limits() -> None:
    assert pod(Container("a")).qos_class is QOSClass.BEST_EFFORT
    # Only cpu and memory count: an extended resource alone leaves the pod BestEffort.
    assert pod(Container("a", requests=res(**{"example.com/dev": "1"}))).qos_class is QOSClass.BEST_EFFORT


def test_guaranteed_needs_equal_cpu_and_memory_limits_everywhere() -> None:
    full = Container("a", requests=res(cpu="2", memory="1Gi"), limits=res(cpu="2", memory="1Gi"))
    assert pod(full).qos_class is QOSClass.GUARANTEED
    assert pod(full, init=(full,)).qos_class is QOSClass.GUARANTEED
    cpu_only = Container("b", requests=res(cpu="2"), limits=res(cpu="2"))
    assert pod(full, cpu_only).qos_class is QOSClass.BURSTABLE
    unequal = Container("c", requests=res(cpu="1", memory="1Gi"), limits=res(cpu="2", memory="1Gi"))
    assert pod(unequal).qos_class is QOSClass.BURSTABLE


def test_zero_quantities_are_ignored() -> None:
    zero = Container("a", requests=res(cpu="0"), limits=res(cpu="0"))
    assert pod(zero).qos_class is QOSClass.BEST_EFFORT


def test_sum_over_containers_compared() -> None:
    # 1+1 requested vs 2 limit summed: equal sums, each container guaranteed -> Guaranteed.
    a = Container("a", requests=res(cpu="1", memory="1Gi"), limits=res(cpu="1", memory="1Gi"))
    b = Container("b", requests=res(cpu="1", memory="1Gi"), limits=res(cpu="1", memory="1Gi"))
    assert pod(a, b).qos_class is QOSClass.GUARANTEED


def test_pod_level_resources_decide_when_enabled() -> None:
    bare = Container("a")
    level = ResourceRequirements(requests=res(cpu="2", memory="1Gi"), limits=res(cpu="2", memory="1Gi"))
    p = pod(bare, resources=level)
    assert compute_qos(p, pod_level_resources_enabled=True) is QOSClass.GUARANTEED
    assert compute_qos(p, pod_level_resources_enabled=False) is QOSClass.BEST_EFFORT
