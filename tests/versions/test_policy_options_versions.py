"""Policy options' maturity per kubelet version (issue 16, slice 2): both sides of each change."""

from __future__ import annotations

import pytest

import hostprobe
from hostprobe.synthetic import SyntheticHost, write_tree
from kubeletemu.config import parse_config
from kubeletemu.containermanager import ContainerManager
from kubeletemu.cpumanager import StaticPolicyOptions
from kubeletemu.cpumanager import policy_options as cpu_options
from kubeletemu.cpumanager.errors import PolicyOptionsError as CPUPolicyOptionsError
from kubeletemu.machine import Machine
from kubeletemu.topologymanager import policy_options as tm_options
from kubeletemu.versions import SUPPORTED
from kubeletemu.versions.policy_options import CPU_MANAGER, TOPOLOGY_MANAGER, maturity_at

CPU_BETA_OFF = {"CPUManagerPolicyBetaOptions": False}
TM_BETA_OFF = {"TopologyManagerPolicyBetaOptions": False}


def cpu_refusal(level: str, option: str) -> str:
    return f'CPU Manager Policy {level}-level Options not enabled, but option "{option}" provided'


def test_table_steps_cite_a_pr_and_start_at_the_oldest_version() -> None:
    for table in (CPU_MANAGER, TOPOLOGY_MANAGER):
        for steps in table.values():
            assert steps[0].since == SUPPORTED[0] and steps[0].pr == ""
            assert all(step.pr.startswith("kubernetes#") for step in steps[1:])


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.33", {"prefer-align-cpus-by-uncorecache": "alpha", "strict-cpu-reservation": "beta"}),
        ("1.34", {"prefer-align-cpus-by-uncorecache": "beta", "strict-cpu-reservation": "beta"}),
        ("1.35", {"prefer-align-cpus-by-uncorecache": "beta", "strict-cpu-reservation": "GA"}),
        ("1.36", {"prefer-align-cpus-by-uncorecache": "GA", "strict-cpu-reservation": "GA"}),
    ],
)
def test_cpu_manager_maturity_per_version(version: str, expected: dict[str, str]) -> None:
    assert maturity_at(CPU_MANAGER, version) == expected


def test_master_keeps_the_managers_tables() -> None:
    assert cpu_options.option_levels("master") == dict(cpu_options.OPTION_LEVELS)
    assert tm_options.option_levels("master") == dict(tm_options.OPTION_LEVELS)


def test_the_managers_master_tables_agree_with_the_last_step_of_each_option() -> None:
    """Master is the newest version: an option's last step is its level there (both CPU Manager options
    and max-allowable-numa-nodes are GA on master)."""
    for table, levels in (
        (CPU_MANAGER, cpu_options.OPTION_LEVELS),
        (TOPOLOGY_MANAGER, tm_options.OPTION_LEVELS),
    ):
        for option, steps in table.items():
            assert steps[-1].maturity == "GA"
            assert levels[option].value in ("stable", "GA"), option


def test_strict_cpu_reservation_needs_beta_gate_before_1_35() -> None:
    options = {"strict-cpu-reservation": "true"}
    with pytest.raises(CPUPolicyOptionsError) as err:
        StaticPolicyOptions.from_map(options, CPU_BETA_OFF, "1.34")
    assert str(err.value) == cpu_refusal("Beta", "strict-cpu-reservation")
    assert StaticPolicyOptions.from_map(options, CPU_BETA_OFF, "1.35").strict_cpu_reservation


def test_uncorecache_alpha_in_1_33_beta_in_1_34_ga_in_1_36() -> None:
    options = {"prefer-align-cpus-by-uncorecache": "true"}
    with pytest.raises(CPUPolicyOptionsError) as err:
        StaticPolicyOptions.from_map(options, None, "1.33")
    assert str(err.value) == cpu_refusal("Alpha", "prefer-align-cpus-by-uncorecache")
    assert StaticPolicyOptions.from_map(options, None, "1.34").prefer_align_by_uncore_cache
    with pytest.raises(CPUPolicyOptionsError) as err:
        StaticPolicyOptions.from_map(options, CPU_BETA_OFF, "1.35")
    assert str(err.value) == cpu_refusal("Beta", "prefer-align-cpus-by-uncorecache")
    assert StaticPolicyOptions.from_map(options, CPU_BETA_OFF, "1.36").prefer_align_by_uncore_cache


def test_max_allowable_numa_nodes_beta_before_1_35_with_lower_case_refusal() -> None:
    options = {"max-allowable-numa-nodes": "8"}
    for version in ("1.33", "1.34"):
        with pytest.raises(tm_options.PolicyOptionsError) as err:
            tm_options.PolicyOptions.from_map(options, TM_BETA_OFF, kubelet_version=version)
        assert str(err.value) == (
            'topology manager policy beta-level options not enabled, but option "max-allowable-numa-nodes" '
            "provided"
        )
        # The beta gate is on by default.
        assert (
            tm_options.PolicyOptions.from_map(options, kubelet_version=version).max_allowable_numa_nodes == 8
        )
    for version in ("1.35", "1.36", "1.37", "master"):
        parsed = tm_options.PolicyOptions.from_map(options, TM_BETA_OFF, kubelet_version=version)
        assert parsed.max_allowable_numa_nodes == 8


CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
topologyManagerPolicyOptions: {{max-allowable-numa-nodes: "8"}}
cpuManagerPolicy: static
cpuManagerPolicyOptions: {{strict-cpu-reservation: "true"}}
reservedSystemCPUs: "0"
featureGates: {{{gates}}}
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
kubeletVersion: "{version}"
"""


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    sys_root, proc_root = write_tree(tmp_path_factory.mktemp("versions"), SyntheticHost())
    return Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))


def test_container_manager_passes_the_configured_version(machine: Machine) -> None:
    """``kubeletVersion`` reaches both managers' option checks through the ContainerManager."""
    text = CONFIG.format(gates="TopologyManagerPolicyBetaOptions: false", version="1.34")
    with pytest.raises(tm_options.PolicyOptionsError, match="topology manager policy beta-level options"):
        ContainerManager(parse_config(text), machine)
    text = CONFIG.format(gates="CPUManagerPolicyBetaOptions: false", version="1.34")
    with pytest.raises(CPUPolicyOptionsError, match='Beta-level Options not enabled, but option "strict-cpu'):
        ContainerManager(parse_config(text), machine)
    both_off = "TopologyManagerPolicyBetaOptions: false, CPUManagerPolicyBetaOptions: false"
    manager = ContainerManager(parse_config(CONFIG.format(gates=both_off, version="1.35")), machine)
    assert manager.topology_manager_options == {"max-allowable-numa-nodes": "8"}
