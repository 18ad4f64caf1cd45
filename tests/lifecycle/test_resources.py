"""``resourcehelper.PodRequests`` and the framework ``Resource`` view, worked out by hand.

Rule (KEP-753): app containers and sidecars (restartable init containers) run together and are summed;
an ordinary init container runs alone next to the sidecars declared before it; the pod needs the larger
of the two, per resource. Pod-level requests replace the containers' value for cpu, memory and
hugepages-*; overhead is added last. cpu is then read in millicores, everything else in whole units,
both rounded up once per pod.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import pytest

from kubeletemu.lifecycle import (
    Resource,
    is_scalar_resource_name,
    pod_request_list,
    pod_requests,
    sum_requests,
    without_missing_extended_resources,
)
from kubeletemu.pod import Pod
from tests.lifecycle.builders import ctr, make_pod

GI = 2**30
MI = 2**20


@dataclass(frozen=True)
class Row:
    id: str
    pod: Pod
    expected: dict[str, int]
    pod_level_resources: bool = True


ROWS = [
    Row("best-effort-requests-nothing", make_pod("be"), {}),
    Row(
        "app-containers-summed",
        # cpu 500m + 250m = 750m; memory 1Gi + 512Mi = 1610612736
        make_pod(
            "p", [ctr("a", {"cpu": "500m", "memory": "1Gi"}), ctr("b", {"cpu": "250m", "memory": "512Mi"})]
        ),
        {"cpu": 750, "memory": GI + 512 * MI},
    ),
    Row(
        "init-container-larger-wins",
        # apps: cpu 1+1 = 2000m, memory 1Gi+1Gi = 2Gi; init: cpu 3 (wins), memory 1Gi (loses)
        make_pod(
            "p",
            [ctr("a", {"cpu": "1", "memory": "1Gi"}), ctr("b", {"cpu": "1", "memory": "1Gi"})],
            init=[ctr("i", {"cpu": "3", "memory": "1Gi"})],
        ),
        {"cpu": 3000, "memory": 2 * GI},
    ),
    Row(
        "init-containers-max-not-sum",
        # two inits of 2 and 3 cpu run one after the other: max = 3000m; app 1 cpu
        make_pod("p", {"cpu": "1"}, init=[ctr("i1", {"cpu": "2"}), ctr("i2", {"cpu": "3"})]),
        {"cpu": 3000},
    ),
    Row(
        "sidecar-before-init-adds-to-both",
        # sidecar 500m then init 2: init phase = 2000 + 500 = 2500; running = app 1000 + sidecar 500 = 1500
        make_pod("p", {"cpu": "1"}, init=[ctr("s", {"cpu": "500m"}, sidecar=True), ctr("i", {"cpu": "2"})]),
        {"cpu": 2500},
    ),
    Row(
        "sidecar-after-init-not-added-to-it",
        # init 2 first (alone: 2000), then sidecar 500m; running = 1000 + 500 = 1500; max = 2000
        make_pod("p", {"cpu": "1"}, init=[ctr("i", {"cpu": "2"}), ctr("s", {"cpu": "500m"}, sidecar=True)]),
        {"cpu": 2000},
    ),
    Row(
        "sidecars-accumulate",
        # s1 300m, s2 200m, then init 1: init phase 1000 + 500 = 1500; running 2000 + 500 = 2500
        make_pod(
            "p",
            {"cpu": "2"},
            init=[
                ctr("s1", {"cpu": "300m"}, sidecar=True),
                ctr("s2", {"cpu": "200m"}, sidecar=True),
                ctr("i", {"cpu": "1"}),
            ],
        ),
        {"cpu": 2500},
    ),
    Row(
        "overhead-added-last",
        # max(app 1000, init 1500) = 1500, + overhead 250m = 1750; memory 1Gi + overhead 120Mi
        make_pod(
            "p",
            {"cpu": "1", "memory": "1Gi"},
            init=[ctr("i", {"cpu": "1500m"})],
            overhead={"cpu": "250m", "memory": "120Mi"},
        ),
        {"cpu": 1750, "memory": GI + 120 * MI},
    ),
    Row(
        "pod-level-cpu-replaces-containers",
        # containers 500m + 500m = 1000m, pod-level cpu 2 replaces it; memory stays the containers' 256Mi
        make_pod(
            "p",
            [ctr("a", {"cpu": "500m", "memory": "128Mi"}), ctr("b", {"cpu": "500m", "memory": "128Mi"})],
            pod_level={"cpu": "2"},
        ),
        {"cpu": 2000, "memory": 256 * MI},
    ),
    Row(
        "pod-level-ignored-with-gate-off",
        make_pod(
            "p",
            [ctr("a", {"cpu": "500m", "memory": "128Mi"}), ctr("b", {"cpu": "500m", "memory": "128Mi"})],
            pod_level={"cpu": "2"},
        ),
        {"cpu": 1000, "memory": 256 * MI},
        pod_level_resources=False,
    ),
    Row(
        "pod-level-hugepages-and-overhead",
        # pod-level hugepages-2Mi 64Mi replaces the container's 32Mi; overhead cpu 100m on pod-level 1 cpu
        make_pod(
            "p",
            {"cpu": "500m", "hugepages-2Mi": "32Mi"},
            pod_level={"cpu": "1", "hugepages-2Mi": "64Mi"},
            overhead={"cpu": "100m"},
        ),
        {"cpu": 1100, "hugepages-2Mi": 64 * MI},
    ),
    Row(
        "pod-level-unsupported-name-only-is-not-set",
        # ephemeral-storage is not a pod-level resource: IsPodLevelRequestsSet is false, containers win
        make_pod("p", {"ephemeral-storage": "1Gi"}, pod_level={"ephemeral-storage": "5Gi"}),
        {"ephemeral-storage": GI},
    ),
    Row(
        "scalar-kinds-kept-others-dropped",
        # extended, hugepages, kubernetes.io-prefixed and attachable-volumes are scalars; "pods" and an
        # unprefixed unknown name are not part of the fit
        make_pod(
            "p",
            {
                "example.com/dev": "2",
                "hugepages-1Gi": "2Gi",
                "foo.kubernetes.io/thing": "3",
                "attachable-volumes-csi-x": "1",
                "pods": "1",
                "widgets": "4",
            },
        ),
        {
            "example.com/dev": 2,
            "hugepages-1Gi": 2 * GI,
            "foo.kubernetes.io/thing": 3,
            "attachable-volumes-csi-x": 1,
        },
    ),
    Row(
        "zero-request-written-down-is-kept",
        make_pod("p", {"cpu": "0", "example.com/dev": "0"}),
        {"cpu": 0, "example.com/dev": 0},
    ),
    Row(
        "rounding-once-per-pod",
        # memory 500m + 500m = exactly 1 byte (not 1 + 1); cpu 0.1m + 0.1m = 0.2m -> MilliValue rounds up to 1
        make_pod(
            "p", [ctr("a", {"memory": "500m", "cpu": "100u"}), ctr("b", {"memory": "500m", "cpu": "100u"})]
        ),
        {"memory": 1, "cpu": 1},
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_pod_requests(row: Row) -> None:
    assert pod_requests(row.pod, pod_level_resources=row.pod_level_resources) == row.expected


def test_pod_request_list_is_exact_and_can_exclude_overhead() -> None:
    pod = make_pod("p", {"cpu": "333m", "memory": "1500m"}, overhead={"cpu": "1m"})
    assert pod_request_list(pod) == {"cpu": Fraction(334, 1000), "memory": Fraction(3, 2)}
    assert pod_request_list(pod, exclude_overhead=True) == {
        "cpu": Fraction(333, 1000),
        "memory": Fraction(3, 2),
    }


def test_sum_requests_rounds_each_pod_before_adding() -> None:
    # 1.5 bytes per pod rounds to 2 for each: 4, not ceil(3) = 3
    pods = [make_pod("a", {"memory": "1500m"}), make_pod("b", {"memory": "1500m"})]
    total = sum_requests(pods)
    assert (total.memory, total.milli_cpu, total.scalar_resources) == (4, 0, {})


def test_resource_from_list_reads_pods_and_scalars() -> None:
    node = Resource.from_list({"cpu": Fraction(7, 2), "pods": Fraction(110), "example.com/dev": Fraction(0)})
    assert node == Resource(milli_cpu=3500, allowed_pod_number=110, scalar_resources={"example.com/dev": 0})


@pytest.mark.parametrize(
    ("name", "scalar"),
    [
        ("example.com/dev", True),
        ("hugepages-2Mi", True),
        ("kubernetes.io/batteries", True),
        ("attachable-volumes-aws-ebs", True),
        ("cpu", False),
        ("widgets", False),
        ("requests.example.com/dev", False),
    ],
)
def test_is_scalar_resource_name(name: str, scalar: bool) -> None:
    assert is_scalar_resource_name(name) is scalar


def test_missing_extended_resources_dropped_from_containers_only() -> None:
    pod = make_pod(
        "p",
        {"cpu": "1", "example.com/dev": "1", "cluster.io/licence": "2"},
        init=[ctr("i", {"cluster.io/licence": "1"})],
        overhead={"cpu": "10m"},
    )
    fitted = without_missing_extended_resources(pod, ["example.com/dev", "hugepages-2Mi"])
    assert pod_requests(fitted) == {"cpu": 1010, "example.com/dev": 1}
    assert without_missing_extended_resources(fitted, ["example.com/dev"]) is fitted
