"""Static policy options (``cpuManagerPolicyOptions``), mirroring ``policy_options.go`` in master.

Alpha options need the ``CPUManagerPolicyAlphaOptions`` gate (off by default), beta options
``CPUManagerPolicyBetaOptions`` (on by default); stable options need no gate. The levels follow the
emulated kubelet version (:func:`option_levels`, from ``kubeletemu.versions.policy_options``:
``prefer-align-cpus-by-uncorecache`` alpha in 1.33, beta in 1.34 and 1.35, GA in 1.36;
``strict-cpu-reservation`` beta before 1.35, GA from 1.35); :data:`OPTION_LEVELS` is master's (both GA
there). Error texts are the kubelet's, the same from 1.33 to master. Options are checked in the order given
(the kubelet walks a Go map, in random order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from kubeletemu.cpumanager.errors import PolicyOptionsError
from kubeletemu.cpumanager.topology import CPUTopology
from kubeletemu.golang import GoSyntaxError, go_parse_bool, go_quote
from kubeletemu.versions import policy_options as versioned
from kubeletemu.versions.gates import default_gates
from kubeletemu.versions.version import MASTER

FULL_PCPUS_ONLY = "full-pcpus-only"
DISTRIBUTE_CPUS_ACROSS_NUMA = "distribute-cpus-across-numa"
ALIGN_BY_SOCKET = "align-by-socket"
DISTRIBUTE_CPUS_ACROSS_CORES = "distribute-cpus-across-cores"
STRICT_CPU_RESERVATION = "strict-cpu-reservation"
PREFER_ALIGN_CPUS_BY_UNCORECACHE = "prefer-align-cpus-by-uncorecache"

ALPHA_GATE = "CPUManagerPolicyAlphaOptions"
BETA_GATE = "CPUManagerPolicyBetaOptions"
POD_LEVEL_RESOURCES_GATE = "PodLevelResources"
POD_LEVEL_RESOURCE_MANAGERS_GATE = "PodLevelResourceManagers"
# The gates the CPU manager reads, with their defaults in master, from the kubelet's versioned feature
# specs (alpha off, beta on, PodLevelResources on, PodLevelResourceManagers off). A caller emulating another
# version passes that version's gates (``kubeletemu.versions.effective_gates``), which win.
DEFAULT_FEATURE_GATES: Mapping[str, bool] = default_gates(
    MASTER, (ALPHA_GATE, BETA_GATE, POD_LEVEL_RESOURCES_GATE, POD_LEVEL_RESOURCE_MANAGERS_GATE)
)

SINGLE_NUMA_NODE_POLICY = "single-numa-node"


class OptionLevel(StrEnum):
    ALPHA = "alpha"
    BETA = "beta"
    STABLE = "stable"


OPTION_LEVELS: Mapping[str, OptionLevel] = {
    FULL_PCPUS_ONLY: OptionLevel.STABLE,
    DISTRIBUTE_CPUS_ACROSS_NUMA: OptionLevel.BETA,
    ALIGN_BY_SOCKET: OptionLevel.ALPHA,
    DISTRIBUTE_CPUS_ACROSS_CORES: OptionLevel.ALPHA,
    # GA on master: kubernetes#134388 (1.35) and #137055 (1.36).
    STRICT_CPU_RESERVATION: OptionLevel.STABLE,
    PREFER_ALIGN_CPUS_BY_UNCORECACHE: OptionLevel.STABLE,
}
_LEVEL_OF_MATURITY: Mapping[str, OptionLevel] = {
    "alpha": OptionLevel.ALPHA,
    "beta": OptionLevel.BETA,
    "GA": OptionLevel.STABLE,
}


def option_levels(version: str = MASTER) -> dict[str, OptionLevel]:
    """The maturity table of the kubelet of ``version``: :data:`OPTION_LEVELS` for master, else with the
    steps of ``kubeletemu.versions.policy_options.CPU_MANAGER`` applied."""
    levels = dict(OPTION_LEVELS)
    if version == MASTER:
        return levels
    for name, maturity in versioned.maturity_at(versioned.CPU_MANAGER, version).items():
        levels[name] = _LEVEL_OF_MATURITY[maturity]
    return levels


# Options that cannot be combined, in the order the kubelet checks them.
_FORBIDDEN_PAIRS = (
    (FULL_PCPUS_ONLY, DISTRIBUTE_CPUS_ACROSS_CORES),
    (DISTRIBUTE_CPUS_ACROSS_NUMA, DISTRIBUTE_CPUS_ACROSS_CORES),
    (PREFER_ALIGN_CPUS_BY_UNCORECACHE, DISTRIBUTE_CPUS_ACROSS_CORES),
    (PREFER_ALIGN_CPUS_BY_UNCORECACHE, DISTRIBUTE_CPUS_ACROSS_NUMA),
)

_FIELDS = {
    FULL_PCPUS_ONLY: "full_physical_cpus_only",
    DISTRIBUTE_CPUS_ACROSS_NUMA: "distribute_cpus_across_numa",
    ALIGN_BY_SOCKET: "align_by_socket",
    DISTRIBUTE_CPUS_ACROSS_CORES: "distribute_cpus_across_cores",
    STRICT_CPU_RESERVATION: "strict_cpu_reservation",
    PREFER_ALIGN_CPUS_BY_UNCORECACHE: "prefer_align_by_uncore_cache",
}


def merged_gates(feature_gates: Mapping[str, bool] | None) -> dict[str, bool]:
    return {**DEFAULT_FEATURE_GATES, **(feature_gates or {})}


def check_policy_option_available(
    name: str, feature_gates: Mapping[str, bool] | None = None, kubelet_version: str = MASTER
) -> None:
    """``CheckPolicyOptionAvailable``: unknown, or its maturity level (at ``kubelet_version``) has its
    gate off."""
    gates = merged_gates(feature_gates)
    levels = OPTION_LEVELS if kubelet_version == MASTER else option_levels(kubelet_version)
    level = levels.get(name)
    if level is None:
        raise PolicyOptionsError(f"unknown CPU Manager Policy option: {go_quote(name)}")
    if level is OptionLevel.ALPHA and not gates[ALPHA_GATE]:
        raise PolicyOptionsError(
            f"CPU Manager Policy Alpha-level Options not enabled, but option {go_quote(name)} provided"
        )
    if level is OptionLevel.BETA and not gates[BETA_GATE]:
        raise PolicyOptionsError(
            f"CPU Manager Policy Beta-level Options not enabled, but option {go_quote(name)} provided"
        )


@dataclass(frozen=True)
class StaticPolicyOptions:
    """``StaticPolicyOptions``: every option is a boolean, false by default."""

    full_physical_cpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    align_by_socket: bool = False
    distribute_cpus_across_cores: bool = False
    strict_cpu_reservation: bool = False
    prefer_align_by_uncore_cache: bool = False

    @classmethod
    def from_map(
        cls,
        options: Mapping[str, str] | None,
        feature_gates: Mapping[str, bool] | None = None,
        kubelet_version: str = MASTER,
    ) -> StaticPolicyOptions:
        """``NewStaticPolicyOptions``: availability (at ``kubelet_version``), the boolean value, then the
        forbidden pairs."""
        values: dict[str, bool] = {}
        for name, value in (options or {}).items():
            check_policy_option_available(name, feature_gates, kubelet_version)
            if not isinstance(value, str):
                raise PolicyOptionsError(
                    f"bad value for option {go_quote(name)}: expected a string, got {value!r}"
                )
            try:
                values[_FIELDS[name]] = go_parse_bool(value)
            except GoSyntaxError as err:
                raise PolicyOptionsError(f"bad value for option {go_quote(name)}: {err}") from None
        opts = cls(**values)
        for first, second in _FORBIDDEN_PAIRS:
            if opts.is_set(first) and opts.is_set(second):
                raise PolicyOptionsError(
                    f"static policy options {first} and {second} can not be used at the same time"
                )
        return opts

    def is_set(self, name: str) -> bool:
        return bool(getattr(self, _FIELDS[name]))

    def to_map(self) -> dict[str, str]:
        """The options that are on, in the kubelet's spelling."""
        return {name: "true" for name in _FIELDS if self.is_set(name)}


class _NamedPolicy(Protocol):
    @property
    def name(self) -> str: ...


class _PolicyStore(Protocol):
    def get_policy(self) -> _NamedPolicy: ...


def validate_static_policy_options(
    opts: StaticPolicyOptions, topology: CPUTopology, store: _PolicyStore
) -> None:
    """``ValidateStaticPolicyOptions``: align-by-socket against the Topology Manager policy and hardware."""
    if not opts.align_by_socket:
        return
    if store.get_policy().name == SINGLE_NUMA_NODE_POLICY:
        raise PolicyOptionsError(
            f"Topolgy manager {SINGLE_NUMA_NODE_POLICY} policy is incompatible with CPUManager "
            f"{ALIGN_BY_SOCKET} policy option"
        )
    if topology.num_sockets > topology.num_numa_nodes:
        raise PolicyOptionsError(
            "Align by socket is not compatible with hardware where number of sockets are more than "
            "number of NUMA"
        )
