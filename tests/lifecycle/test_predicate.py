"""The predicate admit handler's node fit (``predicate.go`` + ``noderesources.fitsRequest``), by hand.

Node used by most rows (``node.status.allocatable``):
    cpu 4 (4000m), memory 8Gi (8589934592), ephemeral-storage 10Gi (10737418240),
    hugepages-2Mi 1Gi (1073741824), example.com/dev 2, pods 110.
A check fails when request > 0 and request > allocatable − used; checks run pods, cpu, memory,
ephemeral-storage, then scalars; only the first failure is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from kubeletemu.admission import PodAdmitResult
from kubeletemu.lifecycle import (
    OUT_OF_CPU,
    OUT_OF_EPHEMERAL_STORAGE,
    OUT_OF_MEMORY,
    OUT_OF_PODS,
    InsufficientResource,
    PredicateAdmitError,
    PredicateAdmitHandler,
    admit_pod,
)
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.versions.version import MASTER
from tests.lifecycle.builders import ctr, make_pod

GI = 2**30

NODE: dict[str, Quantity | int | str] = {
    "cpu": "4",
    "memory": "8Gi",
    "ephemeral-storage": "10Gi",
    "hugepages-2Mi": "1Gi",
    "example.com/dev": "2",
    "pods": "110",
}


def msg(resource: str, requested: int, used: int, capacity: int) -> str:
    """``InsufficientResourceError.Error()``'s format."""
    return (
        f"Node didn't have enough resource: {resource}, "
        f"requested: {requested}, used: {used}, capacity: {capacity}"
    )


def used(n: int) -> list[Pod]:
    """``n`` BestEffort pods: they take pod slots and nothing else."""
    return [make_pod(f"be-{i}") for i in range(n)]


@dataclass(frozen=True)
class Row:
    id: str
    pod: Pod
    admitted: Sequence[Pod] = ()
    expected: tuple[str, str] | None = None  # (reason, message); None = admitted
    node: Mapping[str, Quantity | int | str] = field(default_factory=lambda: NODE)
    max_pods: int | None = None
    gates: Mapping[str, bool] | None = None
    allocated_devices: Mapping[str, int] | None = None
    version: str = MASTER  # the kubelet emulated (its gate defaults, its DRA hand-off)


ROWS = [
    Row("fits-empty-node", make_pod("p", {"cpu": "1", "memory": "1Gi"})),
    Row(
        "out-of-cpu",
        # 1000 > 4000 - 3500 = 500
        make_pod("p", {"cpu": "1"}),
        [make_pod("a", {"cpu": "3500m"})],
        (OUT_OF_CPU, msg("cpu", 1000, 3500, 4000)),
    ),
    Row(
        "cpu-exact-fit",
        # 1000 > 4000 - 3000 = 1000 is false
        make_pod("p", {"cpu": "1"}),
        [make_pod("a", {"cpu": "3"})],
    ),
    Row(
        "out-of-memory",
        # 2147483648 > 8589934592 - 7516192768 = 1073741824
        make_pod("p", {"memory": "2Gi"}),
        [make_pod("a", {"memory": "7Gi"})],
        (OUT_OF_MEMORY, msg("memory", 2 * GI, 7 * GI, 8 * GI)),
    ),
    Row(
        "out-of-ephemeral-storage",
        # 11811160064 > 10737418240 - 0
        make_pod("p", {"ephemeral-storage": "11Gi"}),
        expected=(OUT_OF_EPHEMERAL_STORAGE, msg("ephemeral-storage", 11 * GI, 0, 10 * GI)),
    ),
    Row(
        "out-of-pods",
        # len(pods) + 1 = 3 > maxPods 2
        make_pod("p", {"cpu": "1"}),
        used(2),
        (OUT_OF_PODS, msg("pods", 1, 2, 2)),
        max_pods=2,
    ),
    Row(
        "pods-from-allocatable-when-max-pods-not-given",
        make_pod("p", {"cpu": "1"}),
        used(1),
        (OUT_OF_PODS, msg("pods", 1, 1, 1)),
        node={**NODE, "pods": "1"},
    ),
    Row(
        "pods-reported-before-cpu",
        # both fail: pods 2 + 1 > 2 and cpu 5000 > 4000; the pod count is checked first
        make_pod("p", {"cpu": "5"}),
        used(2),
        (OUT_OF_PODS, msg("pods", 1, 2, 2)),
        max_pods=2,
    ),
    Row(
        "cpu-reported-before-memory",
        # cpu 5000 > 4000 and memory 9Gi > 8Gi both fail: only cpu is reported
        make_pod("p", {"cpu": "5", "memory": "9Gi"}),
        expected=(OUT_OF_CPU, msg("cpu", 5000, 0, 4000)),
    ),
    Row(
        "memory-reported-before-ephemeral-storage",
        make_pod("p", {"memory": "9Gi", "ephemeral-storage": "11Gi"}),
        expected=(OUT_OF_MEMORY, msg("memory", 9 * GI, 0, 8 * GI)),
    ),
    Row(
        "ephemeral-storage-reported-before-scalars",
        make_pod("p", {"ephemeral-storage": "11Gi", "example.com/dev": "3"}),
        expected=(OUT_OF_EPHEMERAL_STORAGE, msg("ephemeral-storage", 11 * GI, 0, 10 * GI)),
    ),
    Row(
        "out-of-hugepages",
        # 2147483648 > 1073741824 - 0
        make_pod("p", {"hugepages-2Mi": "2Gi", "memory": "1Gi"}),
        expected=("OutOfhugepages-2Mi", msg("hugepages-2Mi", 2 * GI, 0, GI)),
    ),
    Row(
        "out-of-extended-resource",
        # 1 > 2 - 2
        make_pod("p", {"example.com/dev": "1"}),
        [make_pod("a", {"example.com/dev": "2"})],
        ("OutOfexample.com/dev", msg("example.com/dev", 1, 2, 2)),
    ),
    Row(
        "scalars-in-name-order",
        # both fail; upstream walks a Go map, we report the first name in sorted order
        # example.com/dev 3 > 2 - 0 and a.example.com/x 1 > 1 - 1 both fail
        make_pod("p", {"example.com/dev": "3", "a.example.com/x": "1"}),
        [make_pod("a", {"a.example.com/x": "1"})],
        ("OutOfa.example.com/x", msg("a.example.com/x", 1, 1, 1)),
        node={**NODE, "a.example.com/x": "1"},
    ),
    Row(
        "extended-resource-not-advertised-dropped",
        # cluster.io/licence is unknown to the node: removed before the fit (cluster-level resource)
        make_pod("p", {"cpu": "1", "cluster.io/licence": "5"}),
    ),
    Row(
        "extended-resource-not-advertised-dropped-without-dra-gate",
        # dropped by removeMissingExtendedResources, not by the DRA delegation: no OutOfcluster.io/licence
        make_pod("p", {"cpu": "1", "cluster.io/licence": "5"}),
        gates={"DRAExtendedResource": False},
    ),
    Row(
        "only-unadvertised-request-leaves-pod-count",
        # after dropping cluster.io/licence the pod requests nothing: only the pod count is checked
        make_pod("p", {"cluster.io/licence": "5"}),
        used(2),
        (OUT_OF_PODS, msg("pods", 1, 2, 2)),
        max_pods=2,
    ),
    Row(
        "best-effort-ignores-exhausted-cpu",
        # used cpu 4000 = capacity, but a BestEffort pod requests nothing: pods 1 + 1 <= 110
        make_pod("be"),
        [make_pod("a", {"cpu": "4", "memory": "8Gi"})],
    ),
    Row(
        "best-effort-out-of-pods",
        make_pod("be"),
        used(3),
        (OUT_OF_PODS, msg("pods", 1, 3, 3)),
        max_pods=3,
    ),
    Row(
        "burstable-counts-its-requests",
        # a Burstable admitted pod (request 3 cpu, no limit) still uses 3000m
        make_pod("p", {"cpu": "1500m"}),
        [Pod("b", "default", "uid-b", (Container("app", requests={"cpu": Quantity.parse("3")}),))],
        (OUT_OF_CPU, msg("cpu", 1500, 3000, 4000)),
    ),
    Row(
        "init-container-request",
        # request = max(app 1000 + 1000, init 3000) = 3000 > 4000 - 1500 = 2500
        make_pod("p", [ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})], init=[ctr("i", {"cpu": "3"})]),
        [make_pod("a", {"cpu": "1500m"})],
        (OUT_OF_CPU, msg("cpu", 3000, 1500, 4000)),
    ),
    Row(
        "sidecar-raises-init-phase",
        # sidecar 500m before init 2: max(1000 + 500, 2000 + 500) = 2500 > 4000 - 2000
        make_pod("p", {"cpu": "1"}, init=[ctr("s", {"cpu": "500m"}, sidecar=True), ctr("i", {"cpu": "2"})]),
        [make_pod("a", {"cpu": "2"})],
        (OUT_OF_CPU, msg("cpu", 2500, 2000, 4000)),
    ),
    Row(
        "sidecar-after-init-fits",
        # init 2 alone, then sidecar: max(1000 + 500, 2000) = 2000 <= 4000 - 2000
        make_pod("p", {"cpu": "1"}, init=[ctr("i", {"cpu": "2"}), ctr("s", {"cpu": "500m"}, sidecar=True)]),
        [make_pod("a", {"cpu": "2"})],
    ),
    Row(
        "admitted-sidecar-pod-uses-sidecar-sum",
        # admitted pod: app 1 + sidecar 1 = 2000 used; new 2500 > 4000 - 2000
        make_pod("p", {"cpu": "2500m"}),
        [make_pod("a", {"cpu": "1"}, init=[ctr("s", {"cpu": "1"}, sidecar=True)])],
        (OUT_OF_CPU, msg("cpu", 2500, 2000, 4000)),
    ),
    Row(
        "overhead-counted",
        # 1000 + overhead 250 = 1250 > 4000 - 3000
        make_pod("p", {"cpu": "1"}, overhead={"cpu": "250m"}),
        [make_pod("a", {"cpu": "3"})],
        (OUT_OF_CPU, msg("cpu", 1250, 3000, 4000)),
    ),
    Row(
        "admitted-overhead-counted-as-used",
        # used 3000 + 500 overhead = 3500; 1000 > 500
        make_pod("p", {"cpu": "1"}),
        [make_pod("a", {"cpu": "3"}, overhead={"cpu": "500m"})],
        (OUT_OF_CPU, msg("cpu", 1000, 3500, 4000)),
    ),
    Row(
        "pod-level-resources",
        # containers 500m + 500m, pod-level cpu 2: 2000 > 4000 - 2500
        make_pod("p", [ctr("a", {"cpu": "500m"}), ctr("b", {"cpu": "500m"})], pod_level={"cpu": "2"}),
        [make_pod("a", {"cpu": "2500m"})],
        (OUT_OF_CPU, msg("cpu", 2000, 2500, 4000)),
    ),
    Row(
        "pod-level-resources-gate-off",
        # PodLevelResources off: the containers' 1000 <= 1500
        make_pod("p", [ctr("a", {"cpu": "500m"}), ctr("b", {"cpu": "500m"})], pod_level={"cpu": "2"}),
        [make_pod("a", {"cpu": "2500m"})],
        gates={"PodLevelResources": False},
    ),
    Row(
        "admitted-pod-level-resources-used",
        # the admitted pod's pod-level 3 cpu (containers only 1): 1500 > 4000 - 3000
        make_pod("p", {"cpu": "1500m"}),
        [make_pod("a", {"cpu": "1"}, pod_level={"cpu": "3"})],
        (OUT_OF_CPU, msg("cpu", 1500, 3000, 4000)),
    ),
    Row(
        "overcommitted-cpu-ignored-without-cpu-request",
        # used 5000 > 4000 already, but the pod asks no cpu: only memory is compared (1Gi <= 8Gi)
        make_pod("p", {"memory": "1Gi"}),
        [make_pod("a", {"cpu": "5"})],
    ),
    Row(
        "zero-scalar-request-skipped",
        # example.com/dev 0 is a request (no early exit) but zero amounts are never compared
        make_pod("p", {"example.com/dev": "0"}),
        [make_pod("a", {"cpu": "5", "example.com/dev": "3"})],
    ),
    Row(
        "rounded-per-pod",
        # admitted 1.5 bytes -> used 2; new 1.5 bytes -> 2 > 3 - 2 (the exact sum 3 would have fitted)
        make_pod("p", {"memory": "1500m"}),
        [make_pod("a", {"memory": "1500m"})],
        (OUT_OF_MEMORY, msg("memory", 2, 2, 3)),
        node={"memory": "3", "pods": "110"},
    ),
    Row(
        "fractional-allocatable-cpu",
        # allocatable 3500m: 1000 > 3500 - 3000
        make_pod("p", {"cpu": "1"}),
        [make_pod("a", {"cpu": "3"})],
        (OUT_OF_CPU, msg("cpu", 1000, 3000, 3500)),
        node={"cpu": "3500m", "pods": "110"},
    ),
    Row(
        "missing-allocatable-is-zero",
        # no ephemeral-storage entry at all: capacity 0
        make_pod("p", {"ephemeral-storage": "1"}),
        expected=(OUT_OF_EPHEMERAL_STORAGE, msg("ephemeral-storage", 1, 0, 0)),
        node={"cpu": "4", "pods": "110"},
    ),
    Row(
        "zero-allocatable-scalar-left-to-dra-at-1.35",
        # 1.35 with DRAExtendedResource: example.com/gone has allocatable 0, so the fit skips it
        make_pod("p", {"example.com/gone": "1"}),
        node={**NODE, "example.com/gone": "0"},
        gates={"DRAExtendedResource": True},
        version="1.35",
    ),
    Row(
        "zero-allocatable-scalar-checked-with-dra-gate",
        # master (gate on): no DRA manager at the kubelet, nothing is handed off: 1 > 0 - 0
        make_pod("p", {"example.com/gone": "1"}),
        expected=("OutOfexample.com/gone", msg("example.com/gone", 1, 0, 0)),
        node={**NODE, "example.com/gone": "0"},
    ),
    Row(
        "zero-allocatable-scalar-without-dra-gate",
        # gate off: 1 > 0 - 0
        make_pod("p", {"example.com/gone": "1"}),
        expected=("OutOfexample.com/gone", msg("example.com/gone", 1, 0, 0)),
        node={**NODE, "example.com/gone": "0"},
        gates={"DRAExtendedResource": False},
    ),
    Row(
        "absent-hugepages-size-left-to-dra-at-1.35",
        # 1.35: no hugepages-1Gi on the node: with DRAExtendedResource the fit skips it too
        make_pod("p", {"hugepages-1Gi": "1Gi", "memory": "1Gi"}),
        gates={"DRAExtendedResource": True},
        version="1.35",
    ),
    Row(
        "absent-hugepages-size-checked-with-dra-gate",
        # master (gate on): checked
        make_pod("p", {"hugepages-1Gi": "1Gi", "memory": "1Gi"}),
        expected=("OutOfhugepages-1Gi", msg("hugepages-1Gi", GI, 0, 0)),
    ),
    Row(
        "absent-hugepages-size-without-dra-gate",
        make_pod("p", {"hugepages-1Gi": "1Gi", "memory": "1Gi"}),
        expected=("OutOfhugepages-1Gi", msg("hugepages-1Gi", GI, 0, 0)),
        gates={"DRAExtendedResource": False},
    ),
    Row(
        "positive-but-short-scalar-still-fails-with-dra-gate",
        # allocatable 2 > 0, so not delegated: 3 > 2 - 0
        make_pod("p", {"example.com/dev": "3"}),
        expected=("OutOfexample.com/dev", msg("example.com/dev", 3, 0, 2)),
    ),
    Row(
        "allocated-devices-raise-allocatable",
        # the plugin lost a device (allocatable 2) but 3 are handed out (2 to a, 1 to p): capacity -> 3,
        # 1 > 3 - 2 is false
        make_pod("p", {"example.com/dev": "1"}),
        [make_pod("a", {"example.com/dev": "2"})],
        allocated_devices={"example.com/dev": 3},
    ),
    Row(
        "allocated-devices-add-missing-resource",
        # example.com/x is not on the node; the device manager holds 1 (for a): the resource now exists
        # (capacity 1), so p's request is no longer dropped: 1 > 1 - 1
        make_pod("p", {"example.com/x": "1"}),
        [make_pod("a", {"example.com/x": "1"})],
        ("OutOfexample.com/x", msg("example.com/x", 1, 1, 1)),
        allocated_devices={"example.com/x": 1},
    ),
    Row(
        "allocated-devices-below-allocatable-change-nothing",
        make_pod("p", {"example.com/dev": "1"}),
        [make_pod("a", {"example.com/dev": "2"})],
        ("OutOfexample.com/dev", msg("example.com/dev", 1, 2, 2)),
        allocated_devices={"example.com/dev": 1},
    ),
    Row(
        "integer-allocatable-values",
        make_pod("p", {"nvidia.com/gpu": "2"}),
        [make_pod("a", {"nvidia.com/gpu": "7"})],
        ("OutOfnvidia.com/gpu", msg("nvidia.com/gpu", 2, 7, 8)),
        node={"nvidia.com/gpu": 8, "pods": 110},
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_predicate_admit(row: Row) -> None:
    handler = PredicateAdmitHandler(
        row.node, row.max_pods, feature_gates=row.gates, kubelet_version=row.version
    )
    result = handler.admit(row.pod, row.admitted, allocated_devices=row.allocated_devices)
    if row.expected is None:
        assert result == PodAdmitResult(admit=True)
    else:
        reason, message = row.expected
        assert result == PodAdmitResult(admit=False, reason=reason, message=message)
    # the one-shot function answers the same
    assert (
        admit_pod(
            row.node,
            row.max_pods,
            row.admitted,
            row.pod,
            feature_gates=row.gates,
            allocated_devices=row.allocated_devices,
            kubelet_version=row.version,
        )
        == result
    )


def test_all_failures_collected_in_order() -> None:
    handler = PredicateAdmitHandler(NODE, 1)
    pod = make_pod("p", {"cpu": "5", "memory": "9Gi", "ephemeral-storage": "11Gi", "example.com/dev": "3"})
    failures = handler.insufficient_resources(pod, used(1))
    assert failures == [
        InsufficientResource("pods", 1, 1, 1),
        InsufficientResource("cpu", 5000, 0, 4000),
        InsufficientResource("memory", 9 * GI, 0, 8 * GI),
        InsufficientResource("ephemeral-storage", 11 * GI, 0, 10 * GI),
        InsufficientResource("example.com/dev", 3, 0, 2),
    ]
    assert [f.reason for f in failures] == [
        "OutOfpods",
        "OutOfcpu",
        "OutOfmemory",
        "OutOfephemeral-storage",
        "OutOfexample.com/dev",
    ]
    assert [f.scheduler_reason for f in failures[:2]] == ["Too many pods", "Insufficient cpu"]


def test_handler_is_reusable_and_does_not_keep_sanitized_allocatable() -> None:
    handler = PredicateAdmitHandler(NODE)
    pod = make_pod("p", {"example.com/dev": "1"})
    others = [make_pod("a", {"example.com/dev": "2"})]
    assert handler.admit(pod, others, allocated_devices={"example.com/dev": 3}).admit
    assert not handler.admit(pod, others).admit


@pytest.mark.parametrize(
    ("node", "max_pods", "devices", "text"),
    [
        ({"cpu": "four"}, None, None, "allocatable[cpu]: quantities must match"),
        ({"cpu": 1.5}, None, None, "allocatable[cpu]: expected a quantity, got float 1.5"),
        ({"cpu": True}, None, None, "allocatable[cpu]: expected a quantity, got True"),
        ({"memory": "-1Gi"}, None, None, "allocatable[memory]: must not be negative, got -1Gi"),
        ({"cpu": "1"}, -1, None, "max_pods: must be a non-negative integer, got -1"),
        (
            {"cpu": "1"},
            None,
            {"example.com/dev": -2},
            "allocated_devices[example.com/dev]: must be a non-negative",
        ),
    ],
)
def test_bad_input_is_a_readable_error(
    node: Mapping[str, object], max_pods: int | None, devices: Mapping[str, int] | None, text: str
) -> None:
    with pytest.raises(PredicateAdmitError) as info:
        handler = PredicateAdmitHandler(node, max_pods)  # type: ignore[arg-type]
        handler.admit(make_pod("p", {"cpu": "1"}), [], allocated_devices=devices)
    assert text in str(info.value)


def test_messages_byte_for_byte() -> None:
    """Literal texts, independent of the table's message helper."""
    cpu = admit_pod(NODE, None, [make_pod("a", {"cpu": "3500m"})], make_pod("p", {"cpu": "1"}))
    assert cpu.reason == "OutOfcpu"
    assert cpu.message == "Node didn't have enough resource: cpu, requested: 1000, used: 3500, capacity: 4000"
    pods = admit_pod(NODE, 0, [], make_pod("be"))
    assert (pods.reason, pods.message) == (
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 0, capacity: 0",
    )
    huge = admit_pod(NODE, None, [], make_pod("p", {"hugepages-2Mi": "1026Mi"}))
    assert (huge.reason, huge.message) == (
        "OutOfhugepages-2Mi",
        "Node didn't have enough resource: hugepages-2Mi, requested: 1075838976, used: 0, "
        "capacity: 1073741824",
    )


def test_handler_follows_the_admitted_pods_of_each_call() -> None:
    handler = PredicateAdmitHandler(NODE)
    a, b = make_pod("a", {"cpu": "2"}), make_pod("b", {"cpu": "1500m"})
    pod = make_pod("p", {"cpu": "1"})
    assert handler.admit(pod, [a]).admit  # 1000 <= 4000 - 2000
    assert handler.admit(pod, [a, b]).message == msg("cpu", 1000, 3500, 4000)
    assert handler.admit(pod, [b]).admit  # a is gone: 1000 <= 4000 - 1500
    assert handler.admit(pod, [make_pod("a", {"cpu": "3500m"}), b]).message == msg("cpu", 1000, 5000, 4000)
