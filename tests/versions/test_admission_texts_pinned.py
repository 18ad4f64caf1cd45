"""Admission-path texts that are the same in every supported kubelet (issue 16), pinned.

Read: the v1.32.10 kubelet vendored verbatim at kubeedge/kubeedge@16cd8548eedb81af293b94f27844144c080eaa89
(``vendor/k8s.io/kubernetes/pkg/kubelet``: ``cm/topologymanager/topology_manager.go``,
``cm/admission/errors.go``, ``cm/cpumanager/{policy_static,cpu_assignment,policy_options}.go``,
``cm/memorymanager/policy_static.go``, ``cm/devicemanager/manager.go``, ``lifecycle/predicate.go``) as the
lower bound, and master-era versions in the kubernetes/kubernetes code index as the upper one (the
pod-level Memory Manager ``policy_static.go``, ``cpu_assignment.go`` with the resize steps,
``lifecycle/predicate.go``, ``cm/topologymanager/policy_options.go`` with ``NUMAAllocationStrategy``). Every
text below is identical at both ends, so 1.33 … master share it; the only version-dependent refusal found
is the pod-features handler's (``data/behaviours/errors.json``, ``test_behaviours_errors.py``). The
Topology Manager's option-refusal texts are lower-case at master and capitalised at v1.32.10; their first
lower-case release (1.33, per ``kubeletemu/versions/policy_options.py``) was not re-read here.

The chain texts are checked through ``NodeEmulator`` admission at every supported version; the others
(paths a test cannot reach without a contrived state) are pinned on the error objects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletemu.admission import get_pod_admit_result
from kubeletemu.config import parse_config
from kubeletemu.cpumanager.errors import CPUAllocationError, SMTAlignmentError
from kubeletemu.emulator import NodeEmulator
from kubeletemu.lifecycle.predicate import InsufficientResource
from kubeletemu.machine import Machine
from kubeletemu.topologymanager.errors import TopologyAffinityError
from kubeletemu.versions import SUPPORTED
from tests.versions.helpers import pod, versioned_config

# The static CPU Manager with full-pcpus-only; CPU 0 reserved: 15000m allocatable on two_nodes (CPUs
# 8n .. 8n+7 on node n). One device, on node 1.
FULL_PCPUS_ONLY = (
    'cpuManagerPolicy: static\ncpuManagerPolicyOptions: {full-pcpus-only: "true"}\nreservedSystemCPUs: "0"\n'
)


def refusal(machine: Machine, version: str, limits: str, policy: str = "best-effort") -> tuple[str, str]:
    config = versioned_config(version, policy, managers=FULL_PCPUS_ONLY, device_numa=1)
    report = NodeEmulator(parse_config(config), machine).would_admit(pod("p", limits))
    assert not report.admitted
    return report.reason, report.message


@pytest.mark.parametrize("version", SUPPORTED)
def test_topology_affinity_error(two_nodes: Machine, version: str) -> None:
    assert refusal(two_nodes, version, 'cpu: "10", memory: 1Gi', "single-numa-node") == (
        "TopologyAffinityError",
        "Resources cannot be allocated with Topology locality",
    )


@pytest.mark.parametrize("version", SUPPORTED)
def test_smt_alignment_error(two_nodes: Machine, version: str) -> None:
    assert refusal(two_nodes, version, 'cpu: "3", memory: 1Gi') == (
        "SMTAlignmentError",
        "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2",
    )


@pytest.mark.parametrize("version", SUPPORTED)
def test_device_shortage_is_unexpected(two_nodes: Machine, version: str) -> None:
    assert refusal(two_nodes, version, 'cpu: "2", memory: 1Gi, example.com/dev: "2"') == (
        "UnexpectedAdmissionError",
        "Allocate failed due to requested number of devices unavailable for example.com/dev. "
        "Requested: 2, Available: 1, which is unexpected",
    )


@pytest.mark.parametrize("version", SUPPORTED)
def test_predicate_out_of_cpu(two_nodes: Machine, version: str) -> None:
    # 20.5 CPUs: a fraction, so the static policy pins none and the predicate handler decides.
    assert refusal(two_nodes, version, 'cpu: "20.5", memory: 1Gi') == (
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 20500, used: 0, capacity: 15000",
    )


def test_texts_on_the_error_objects() -> None:
    def unexpected(err: Exception) -> str:
        result = get_pod_admit_result(err)
        assert result.reason == "UnexpectedAdmissionError"
        return result.message

    assert str(TopologyAffinityError()) == "Resources cannot be allocated with Topology locality"
    assert str(SMTAlignmentError(4, 2, 2, caused_by_physical_cpus=True)) == (
        "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 2, "
        "requested CPUs = 4, CPUs per core = 2"
    )
    assert unexpected(CPUAllocationError("failed to allocate cpus")) == (
        "Allocate failed due to failed to allocate cpus, which is unexpected"
    )
    shortage = InsufficientResource("hugepages-2Mi", 4194304, 0, 2097152)
    assert (shortage.reason, shortage.message) == (
        "OutOfhugepages-2Mi",
        "Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 0, capacity: 2097152",
    )
    pods = InsufficientResource("pods", 1, 110, 110)
    assert (pods.reason, pods.scheduler_reason) == ("OutOfpods", "Too many pods")


# The allocation failures the managers raise as plain errors (so ``UnexpectedAdmissionError``), in the
# kubelet's wording; each must occur verbatim in the module that raises it.
RAISED_TEXTS: dict[str, tuple[str, ...]] = {
    "kubeletemu/cpumanager/cpu_assignment.py": (
        "not enough cpus available to satisfy request: requested=",
        "failed to allocate cpus",
        "accounting error, not enough CPUs allocated, remaining: ",
        "accounting error, too many CPUs allocated, remaining: ",
    ),
    "kubeletemu/memorymanager/policy_static.py": (
        "[memorymanager] failed to find the default preferred hint",
        "[memorymanager] failed to find the extended preferred hint",
        "[memorymanager] preferred hint violates NUMA node allocation",
        "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory ",
        "is available",
        "[memorymanager] failed to find NUMA nodes to extend the current topology hint",
    ),
    "kubeletemu/devicemanager/allocation.py": (
        "changed request for resource",
        "cannot allocate unregistered device ",
        "no healthy devices present; cannot allocate unhealthy devices ",
        "previously allocated devices are no longer healthy; ",
        "cannot allocate unhealthy devices ",
        "requested number of devices unavailable for ",
        "unexpectedly allocated less resources than required. ",
    ),
    "kubeletemu/devicemanager/manager.py": ("unknown Device Plugin ",),
}


@pytest.mark.parametrize("path", sorted(RAISED_TEXTS))
def test_raised_texts_in_the_kubelets_wording(path: str) -> None:
    source = (Path(__file__).resolve().parents[2] / path).read_text(encoding="utf-8")
    missing = [text for text in RAISED_TEXTS[path] if text not in source]
    assert not missing, f"{path}: texts differ from the kubelet's: {missing}"
