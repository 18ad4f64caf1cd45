"""``cpu_hints.json``: GetTopologyHints / GetPodTopologyHints of the static policy and podGuaranteedCPUs.

Setup as the file's ``encoding`` says: a static policy with no reserved CPUs and the row's options, the
state's default set and assignments from the row, reusable CPUs from the row. Hints are compared as an
unordered set (the Go test sorts both sides); an empty expectation is the non-nil empty list.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.cpumanager import CPUSet, StaticPolicy
from kubeletemu.cpumanager.pod_requests import RequestCalculator
from kubeletemu.cpumanager.state import MemoryState
from kubeletemu.pod import Container
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
        # request == limit everywhere in these tables; memory alike, so Guaranteed iff cpu > 0.
        assert c["cpu_request"] == c["cpu_limit"]
        cpu = c["cpu_request"]
        out.append(
            container(
                c.get("name", f"{prefix}-{index}"),
                cpu,
                f"{cpu}Gi",
                restart_policy=c.get("restart_policy"),
            )
        )
    return out


def test_table_sizes() -> None:
    assert len(DATA["cases"]) == 25
    assert len(DATA["pod_guaranteed_cpus_cases"]) == 12


@pytest.mark.parametrize(("row", "version"), _params("cases"))
def test_hints(row: dict[str, Any], version: str) -> None:
    topo = conformance_topology(FILE, row["topology"])
    policy = StaticPolicy(
        topo,
        0,
        CPUSet(row["reserved_cpus"]),
        FixedStore(),
        row["policy_options"],
        GATES,
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
    test_pod = pod(
        row["pod"]["uid"],
        _containers(row["pod"]["containers"], "app"),
        _containers(row["pod"]["init_containers"], "init"),
    )
    policy.cpus_to_reuse[test_pod.uid] = CPUSet(row["reusable_cpus"])

    if row["api"] == "GetTopologyHints":
        target = test_pod.container(row["container"])
        assert target is not None
        hints = policy.get_topology_hints(state, test_pod, target)
    else:
        assert row["api"] == "GetPodTopologyHints"
        hints = policy.get_pod_topology_hints(state, test_pod)

    assert hints is not None and set(hints) == {"cpu"}
    cpu_hints = hints["cpu"]
    assert cpu_hints is not None, "a nil list where the kubelet returns a (possibly empty) list"
    got = [(h.affinity.bits() if h.affinity is not None else None, h.preferred) for h in cpu_hints]
    expected = [(h["numa_affinity"], h["preferred"]) for h in row["expected_hints"]]
    assert len(got) == len(set(map(repr, got))), "duplicate hints"
    assert sorted(got, key=repr) == sorted(expected, key=repr)


@pytest.mark.parametrize(("row", "version"), _params("pod_guaranteed_cpus_cases"))
def test_pod_guaranteed_cpus(row: dict[str, Any], version: str) -> None:
    test_pod = pod("pod", _containers(row["containers"], "app"), _containers(row["init_containers"], "init"))
    calculator = RequestCalculator(kubelet_version=version)
    assert calculator.pod_guaranteed_cpus(test_pod) == row["expected_cpus"]
