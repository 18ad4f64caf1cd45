"""``cpu_hints.json``: GetTopologyHints / GetPodTopologyHints of the static policy and podGuaranteedCPUs.

Setup as the file's ``encoding`` says: a static policy with no reserved CPUs and the row's options and
feature gates, the state's default set and assignments from the row, reusable CPUs from the row, and the
pod's pod-level resources when the row sets them. Hints are compared as an unordered set (the Go test sorts
both sides); an empty expectation is the non-nil empty list; a ``null`` expectation is nil: no CPU hints at
all (TestTopologyHintsPodLevelResources compares with reflect.DeepEqual, so an empty list would fail there).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kubeletemu.cpumanager import CPUSet, StaticPolicy
from kubeletemu.cpumanager.pod_requests import RequestCalculator
from kubeletemu.cpumanager.state import MemoryState
from kubeletemu.pod import Container, Pod, ResourceRequirements
from kubeletemu.quantity import Quantity
from tests.conformance.loader import load, versioned_rows
from tests.cpumanager.helpers import FixedStore, conformance_topology, container, pod

FILE = "cpu_hints"
DATA = load(FILE)
# align-by-socket is alpha; the upstream test enables the alpha options gate.
GATES = {"CPUManagerPolicyAlphaOptions": True}


def _params(section: str) -> list[Any]:
    return versioned_rows(
        FILE,
        section,
        key="id",
        label=lambda index, row: f"{row.get('id', f'{index:02d}')}-{row['description']}",
    )


def _containers(raw: list[dict[str, Any]], prefix: str) -> list[Container]:
    out = []
    for index, c in enumerate(raw):
        # Memory request == limit on every container (the upstream helpers set it alike), so a container
        # is Guaranteed-equivalent iff its CPU request equals its limit and is non-zero.
        cpu = c["cpu_request"]
        out.append(
            container(
                c.get("name", f"{prefix}-{index}"),
                cpu,
                f"{cpu}Gi",
                limit_cpu=c["cpu_limit"],
                restart_policy=c.get("restart_policy"),
            )
        )
    return out


def _pod(raw: dict[str, Any], uid: str) -> Pod:
    """The row's pod; ``pod_resources`` (cpu request/limit, memory alike) become ``spec.resources``."""
    base = pod(uid, _containers(raw["containers"], "app"), _containers(raw["init_containers"], "init"))
    level = raw.get("pod_resources")
    if level is None:
        return base
    memory = Quantity.parse(f"{level['cpu_request']}Gi")
    resources = ResourceRequirements(
        requests={"cpu": Quantity(level["cpu_request"]), "memory": memory},
        limits={"cpu": Quantity(level["cpu_limit"]), "memory": memory},
    )
    return replace(base, resources=resources)


def test_table_sizes() -> None:
    assert len(DATA["cases"]) == 39
    assert len(DATA["pod_guaranteed_cpus_cases"]) == 13


@pytest.mark.parametrize(("row", "version"), _params("cases"))
def test_hints(row: dict[str, Any], version: str) -> None:
    topo = conformance_topology(FILE, row["topology"])
    policy = StaticPolicy(
        topo,
        0,
        CPUSet(row["reserved_cpus"]),
        FixedStore(),
        row["policy_options"],
        {**GATES, **row.get("feature_gates", {})},
        kubelet_version=version,
    )
    state = MemoryState()
    state.set_default_cpu_set(CPUSet(row["state"]["default_cpu_set"]))
    state.set_cpu_assignments(
        {
            uid: {name: CPUSet(cpus) for name, cpus in containers.items()}
            for uid, containers in row["state"]["assignments"].items()
        }
    )
    test_pod = _pod(row["pod"], row["pod"]["uid"])
    policy.cpus_to_reuse[test_pod.uid] = CPUSet(row["reusable_cpus"])

    if row["api"] == "GetTopologyHints":
        target = test_pod.container(row["container"])
        assert target is not None
        hints = policy.get_topology_hints(state, test_pod, target)
    else:
        assert row["api"] == "GetPodTopologyHints"
        hints = policy.get_pod_topology_hints(state, test_pod)

    if row["expected_hints"] is None:
        # nil: no "cpu" entry at all (an empty list is a different answer, see the module docstring).
        assert hints is None or hints.get("cpu") is None, f"expected nil CPU hints, got {hints}"
        return
    assert hints is not None and set(hints) == {"cpu"}
    cpu_hints = hints["cpu"]
    assert cpu_hints is not None, "a nil list where the kubelet returns a (possibly empty) list"
    got = [(h.affinity.bits() if h.affinity is not None else None, h.preferred) for h in cpu_hints]
    expected = [(h["numa_affinity"], h["preferred"]) for h in row["expected_hints"]]
    assert len(got) == len(set(map(repr, got))), "duplicate hints"
    assert sorted(got, key=repr) == sorted(expected, key=repr)


@pytest.mark.parametrize(("row", "version"), _params("pod_guaranteed_cpus_cases"))
def test_pod_guaranteed_cpus(row: dict[str, Any], version: str) -> None:
    test_pod = _pod(row, "pod")
    calculator = RequestCalculator(row.get("feature_gates"), kubelet_version=version)
    assert calculator.pod_guaranteed_cpus(test_pod) == row["expected_cpus"]
