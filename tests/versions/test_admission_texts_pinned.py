"""Admission-path texts and policy-option refusals of each supported kubelet (issue 16), pinned.

Read at each release tag, in the openshift/kubernetes tree that openshift/microshift vendors under
``deps/github.com/openshift/kubernetes`` (its ``go.mod`` names the upstream tag), ``pkg/kubelet/``:
``cm/topologymanager/{topology_manager,scope_container,scope_pod,policy_options}.go``,
``cm/admission/errors.go``, ``cm/cpumanager/{policy_static,cpu_assignment,policy_options}.go``,
``cm/memorymanager/policy_static.go``, ``cm/devicemanager/manager.go``, ``lifecycle/predicate.go``; and
``pkg/features/kube_features.go``, ``pkg/scheduler/framework/plugins/noderesources/fit.go``:

* 1.33: v1.33.13, branch ``release-4.20`` @ 78a395343031f8800b7139df070665e03b42f934;
* 1.34: v1.34.9, ``release-4.21`` @ 473c3de15d9aeeb399aa95250672c07655554015;
* 1.35: v1.35.6, ``release-4.22`` @ 5019821e0eb2f9a74e00e2aab215144336c4b981;
* 1.36: v1.36.3, ``release-4.23`` @ ab25d11482f8984db7b860ed44c6955f231cf18f;
* master: the master-era files of the kubernetes/kubernetes code index (the pod-level ``policy_static.go``
  of both managers, ``cpu_assignment.go``, ``lifecycle/predicate.go``, ``cm/topologymanager`` with
  ``NUMAAllocationStrategy``), as before.

What the four trees show:

* Every text pinned below by :func:`refusal` and on the error objects (Topology Manager, SMT alignment,
  unexpected-admission wrapper, device shortage, predicate ``OutOf…`` / ``Too many pods``) and every text
  of :data:`RAISED_TEXTS` is the same at all four tags and at master. Only formatting verbs moved where the
  output cannot differ (1.35's ``validateState`` prints cpusets with ``%q`` instead of ``"%s"``).
* From 1.36, with ``PodLevelResourceManagers`` on (an alpha gate 1.33 … 1.35 do not know) and
  ``spec.resources`` set, a Topology Manager refusal is ``PodLevelTopologyAffinityError``: reason
  ``TopologyAffinityError``, message "Pod Scope " + what the scope says; and the pod-level budget checks
  of both managers (``validatePodScopeResources``) refuse with ``EmptyPodSharedPoolError``. Master adds
  a third check there (a regular init container's exclusive request larger than the pool left by the
  sidecars: "pod rejected, largest exclusive init container requests …") that v1.36.3 does not have; it is
  version-gated (``cpumemorymanager.pod-level-init-pool-check``) and pinned on both sides in
  ``test_pod_level_136.py``.
* Policy options: the Topology Manager's refusals are lower-case at every tag (``topology manager policy
  beta-level options not enabled, …``; capitalised only up to v1.32.x, kubeedge/kubeedge@16cd8548 vendor/),
  the CPU Manager's capitalised at every tag. Maturity per tag is :data:`CPU_OPTION_LEVELS` /
  :data:`TM_OPTION_LEVELS`; the option gates' defaults (alpha off, beta on) do not change within the range.
  The Memory Manager has no policy options at any tag.
* Not upstream, so not emulated: v1.33.13's OpenShift carry that lets ``prefer-align-cpus-by-uncorecache``
  (then alpha) through without the alpha gate when ``/etc/kubernetes/openshift-llc-alignment`` exists
  (``checkPolicyOptionHasEnablementFile``, ``pkg/kubelet/llcalign``); gone from v1.34.9 on.

The chain texts are checked through ``NodeEmulator`` admission at every supported version; the others
(paths a test cannot reach without a contrived state) are pinned on the error objects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletemu.admission import get_pod_admit_result
from kubeletemu.config import ConfigError, parse_config
from kubeletemu.cpumanager import policy_options as cpu_options
from kubeletemu.cpumanager.errors import CPUAllocationError, SMTAlignmentError
from kubeletemu.cpumanager.errors import PolicyOptionsError as CPUPolicyOptionsError
from kubeletemu.emulator import NodeEmulator
from kubeletemu.lifecycle.predicate import InsufficientResource
from kubeletemu.machine import Machine
from kubeletemu.topologymanager import policy_options as tm_options
from kubeletemu.topologymanager.errors import TopologyAffinityError
from kubeletemu.versions import SUPPORTED
from tests.versions.helpers import pod, versioned_config

# The static CPU Manager with full-pcpus-only; CPU 0 reserved: 15000m allocatable on two_nodes (CPUs
# 4n .. 4n+3 and 4n+8 .. 4n+11 on node n). One device, on node 1.
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


# A Guaranteed pod with ``spec.resources`` of 10 CPUs: no single NUMA node of two_nodes holds them.
POD_LEVEL_TEN = ("p", 'cpu: "10", memory: 1Gi', 'limits: {cpu: "10", memory: 1Gi}')
PLRM = "PodLevelResourceManagers"
GENERIC = ("TopologyAffinityError", "Resources cannot be allocated with Topology locality")


def pod_level_refusal(machine: Machine, version: str, scope: str, plrm: bool) -> tuple[bool, str, str]:
    config = versioned_config(version, "single-numa-node", scope, gates={PLRM: True} if plrm else None)
    report = NodeEmulator(parse_config(config), machine).would_admit(pod(*POD_LEVEL_TEN))
    return report.admitted, report.reason, report.message


@pytest.mark.parametrize(
    ("scope", "says"),
    [
        ("pod", "pod with pod-level resources failed admission under pod-scope topology manager"),
        (
            "container",
            "pod with pod-level resources failed admission with a container-level topology manager",
        ),
    ],
)
@pytest.mark.parametrize("version", ["1.36", "1.37", "master"])
def test_pod_level_topology_refusal_from_1_36(
    two_nodes: Machine, version: str, scope: str, says: str
) -> None:
    """``PodLevelTopologyAffinityError`` (v1.36.3 ``topology_manager.go``, ``scope_{pod,container}.go``):
    with the gate on, the pod-level message; with it off (its default) the managers leave the pod alone
    (kubernetes#134768), so it is admitted."""
    assert pod_level_refusal(two_nodes, version, scope, plrm=True) == (False, GENERIC[0], "Pod Scope " + says)
    assert pod_level_refusal(two_nodes, version, scope, plrm=False)[0]


@pytest.mark.parametrize("scope", ["pod", "container"])
@pytest.mark.parametrize("version", ["1.33", "1.34", "1.35"])
def test_no_pod_level_topology_refusal_before_1_36(two_nodes: Machine, version: str, scope: str) -> None:
    """The gate does not exist before 1.36: asking for it is a configuration error. 1.33 ignores
    ``spec.resources`` (``PodLevelResources`` off) and refuses the containers with the generic text; 1.34
    and 1.35 leave pods with pod-level resources to the shared pool (kubernetes#133279)."""
    with pytest.raises(ConfigError, match=f"unrecognized feature gate: {PLRM}"):
        pod_level_refusal(two_nodes, version, scope, plrm=True)
    expected = (False, *GENERIC) if version == "1.33" else (True, "", "")
    assert pod_level_refusal(two_nodes, version, scope, plrm=False) == expected


# Each option's maturity at each tag (``alphaOptions`` / ``betaOptions`` / ``stableOptions`` of the
# managers' ``policy_options.go`` in the four trees); master is the managers' own tables.
_A, _B, _S = "alpha", "beta", "stable"
CPU_OPTION_LEVELS: dict[str, dict[str, str]] = {
    "1.33": {
        "full-pcpus-only": _S,
        "distribute-cpus-across-numa": _B,
        "align-by-socket": _A,
        "distribute-cpus-across-cores": _A,
        "strict-cpu-reservation": _B,
        "prefer-align-cpus-by-uncorecache": _A,
    },
    "1.34": {
        "full-pcpus-only": _S,
        "distribute-cpus-across-numa": _B,
        "align-by-socket": _A,
        "distribute-cpus-across-cores": _A,
        "strict-cpu-reservation": _B,
        "prefer-align-cpus-by-uncorecache": _B,
    },
    "1.35": {
        "full-pcpus-only": _S,
        "distribute-cpus-across-numa": _B,
        "align-by-socket": _A,
        "distribute-cpus-across-cores": _A,
        "strict-cpu-reservation": _S,
        "prefer-align-cpus-by-uncorecache": _B,
    },
    "1.36": {
        "full-pcpus-only": _S,
        "distribute-cpus-across-numa": _B,
        "align-by-socket": _A,
        "distribute-cpus-across-cores": _A,
        "strict-cpu-reservation": _S,
        "prefer-align-cpus-by-uncorecache": _S,
    },
}
# Upstream Topology Manager options only (the KEP-6007 ones are the emulator's alpha extension).
TM_OPTION_LEVELS: dict[str, dict[str, str]] = {
    "1.33": {"prefer-closest-numa-nodes": _S, "max-allowable-numa-nodes": _B},
    "1.34": {"prefer-closest-numa-nodes": _S, "max-allowable-numa-nodes": _B},
    "1.35": {"prefer-closest-numa-nodes": _S, "max-allowable-numa-nodes": _S},
    "1.36": {"prefer-closest-numa-nodes": _S, "max-allowable-numa-nodes": _S},
}


@pytest.mark.parametrize("version", sorted(CPU_OPTION_LEVELS))
def test_option_maturity_at_each_tag(version: str) -> None:
    assert {k: v.value for k, v in cpu_options.option_levels(version).items()} == CPU_OPTION_LEVELS[version]
    tm_levels = tm_options.option_levels(version)
    assert {k: tm_levels[k].value for k in TM_OPTION_LEVELS[version]} == TM_OPTION_LEVELS[version]


@pytest.mark.parametrize("version", SUPPORTED)
def test_option_refusal_texts_at_every_version(version: str) -> None:
    """CPU Manager capitalised, Topology Manager lower-case, at every tag; unknown options alike."""
    with pytest.raises(CPUPolicyOptionsError) as err:
        cpu_options.StaticPolicyOptions.from_map({"align-by-socket": "true"}, None, version)
    assert (
        str(err.value)
        == 'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided'
    )
    with pytest.raises(CPUPolicyOptionsError) as err:
        cpu_options.StaticPolicyOptions.from_map(
            {"distribute-cpus-across-numa": "true"}, {"CPUManagerPolicyBetaOptions": False}, version
        )
    assert str(err.value) == (
        'CPU Manager Policy Beta-level Options not enabled, but option "distribute-cpus-across-numa" provided'
    )
    with pytest.raises(CPUPolicyOptionsError) as err:
        cpu_options.StaticPolicyOptions.from_map({"no-such": "true"}, None, version)
    assert str(err.value) == 'unknown CPU Manager Policy option: "no-such"'
    with pytest.raises(tm_options.PolicyOptionsError) as tm_err:
        tm_options.PolicyOptions.from_map({"no-such": "true"}, kubelet_version=version)
    assert str(tm_err.value) == 'unknown Topology Manager Policy option: "no-such"'
    # Beta only in 1.33 and 1.34; from 1.35 it is GA and needs no gate.
    beta_off = {"TopologyManagerPolicyBetaOptions": False}
    if version in ("1.33", "1.34"):
        with pytest.raises(tm_options.PolicyOptionsError) as tm_err:
            tm_options.PolicyOptions.from_map(
                {"max-allowable-numa-nodes": "8"}, beta_off, kubelet_version=version
            )
        assert str(tm_err.value) == (
            'topology manager policy beta-level options not enabled, but option "max-allowable-numa-nodes" '
            "provided"
        )
    else:
        parsed = tm_options.PolicyOptions.from_map(
            {"max-allowable-numa-nodes": "8"}, beta_off, kubelet_version=version
        )
        assert parsed.max_allowable_numa_nodes == 8


# The allocation failures the managers raise as plain errors (so ``UnexpectedAdmissionError``), in the
# kubelet's wording; each must occur verbatim in the module that raises it.
RAISED_TEXTS: dict[str, tuple[str, ...]] = {
    # 1.36+ with PodLevelResourceManagers (v1.36.3 cpumanager/policy_static.go, validatePodScopeResources).
    "kubeletemu/cpumanager/policy_static.py": (
        "pod rejected, pod has shared init containers but no cpus available for them",
        "pod rejected, sum of exclusive container cpu requests equals pod budget, ",
        "leaving no cpus for shared containers",
    ),
    # The same for memory (v1.36.3 memorymanager/policy_static.go).
    "kubeletemu/memorymanager/pod_level.py": (
        "pod rejected, pod has shared init containers but no {name} available for them",
        "pod rejected, sum of exclusive container {name} requests equals pod budget, ",
        "leaving no memory for shared containers",
    ),
    "kubeletemu/topologymanager/errors.py": (
        "Resources cannot be allocated with Topology locality",
        "Pod Scope ",
        "pod with pod-level resources failed admission under pod-scope topology manager",
        "pod with pod-level resources failed admission with a container-level topology manager",
    ),
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
