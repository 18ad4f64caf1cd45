"""Topology Manager policy options (``topologyManagerPolicyOptions``), mirroring ``policy_options.go``.

Each option has a maturity level; alpha options need the ``TopologyManagerPolicyAlphaOptions`` gate (off by
default), beta options ``TopologyManagerPolicyBetaOptions`` (on by default). The levels follow the emulated
kubelet version (:func:`option_levels`, from ``kubeletemu.versions.policy_options``:
``max-allowable-numa-nodes`` is beta before 1.35); the KEP-6007 options exist at ``master`` only (behaviour
``topologymanager.kep6007-options``): 1.33 … 1.37 know neither draft and refuse them as unknown. The
lower-case error strings are the kubelet's since v1.33, the oldest version emulated.

Before any option is parsed, the kubelet's ``run`` (``cmd/kubelet/app/server.go``, v1.33.13 … v1.36.3) refuses
options given while the ``TopologyManagerPolicyOptions`` gate is off (:func:`check_options_gate`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kubeletemu.golang import go_atoi, go_format_string_map, go_parse_bool, go_quote
from kubeletemu.versions import policy_options as versioned
from kubeletemu.versions.behaviours import in_effect
from kubeletemu.versions.gates import default_gates
from kubeletemu.versions.version import MASTER

log = logging.getLogger(__name__)

PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"
# KEP-6007, both drafts (not merged upstream; alpha here). Shape 2's parsing and error texts follow the
# open kubernetes PR #142226 branch.
PREFER_MOST_ALLOCATED_NUMA_NODE = "prefer-most-allocated-numa-node"
NUMA_ALLOCATION_STRATEGY = "numa-allocation-strategy"
NUMA_SCORE_WEIGHTS = "numa-score-weights"

OPTIONS_GATE = "TopologyManagerPolicyOptions"
ALPHA_GATE = "TopologyManagerPolicyAlphaOptions"
BETA_GATE = "TopologyManagerPolicyBetaOptions"
# Their defaults in master (alpha off, beta on), from the kubelet's versioned feature specs.
DEFAULT_FEATURE_GATES: Mapping[str, bool] = default_gates(MASTER, (ALPHA_GATE, BETA_GATE))
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8
MIN_NUMA_SCORE_WEIGHT = 0
MAX_NUMA_SCORE_WEIGHT = 100
DEFAULT_NUMA_SCORE_WEIGHT = 1
# policy.POLICY_SINGLE_NUMA_NODE; not imported, policy.py imports this module.
_POLICY_SINGLE_NUMA_NODE = "single-numa-node"


class OptionLevel(StrEnum):
    ALPHA = "alpha"
    BETA = "beta"
    STABLE = "stable"


# Maturity in the kubelet's master branch; the KEP-6007 options are the emulator's alpha extension.
OPTION_LEVELS: dict[str, OptionLevel] = {
    PREFER_CLOSEST_NUMA_NODES: OptionLevel.STABLE,
    MAX_ALLOWABLE_NUMA_NODES: OptionLevel.STABLE,
    PREFER_MOST_ALLOCATED_NUMA_NODE: OptionLevel.ALPHA,
    NUMA_ALLOCATION_STRATEGY: OptionLevel.ALPHA,
    NUMA_SCORE_WEIGHTS: OptionLevel.ALPHA,
}
# KEP-6007's options (both drafts) and the version-table row saying which kubelets know them.
KEP_6007_OPTIONS = (PREFER_MOST_ALLOCATED_NUMA_NODE, NUMA_ALLOCATION_STRATEGY, NUMA_SCORE_WEIGHTS)
KEP_6007_BEHAVIOUR = "topologymanager.kep6007-options"
_LEVEL_OF_MATURITY: Mapping[str, OptionLevel] = {
    "alpha": OptionLevel.ALPHA,
    "beta": OptionLevel.BETA,
    "GA": OptionLevel.STABLE,
}


def option_levels(version: str = MASTER) -> dict[str, OptionLevel]:
    """The maturity table of the kubelet of ``version``: :data:`OPTION_LEVELS` for master, else with the
    steps of ``kubeletemu.versions.policy_options.TOPOLOGY_MANAGER`` applied and without the KEP-6007
    options, which only ``master`` (the emulator's what-if of the KEP's target) knows."""
    levels = dict(OPTION_LEVELS)
    if not in_effect(KEP_6007_BEHAVIOUR, version):
        for name in KEP_6007_OPTIONS:
            del levels[name]
    if version == MASTER:
        return levels
    for name, maturity in versioned.maturity_at(versioned.TOPOLOGY_MANAGER, version).items():
        levels[name] = _LEVEL_OF_MATURITY[maturity]
    return levels


class PolicyOptionsError(ValueError):
    """``str()`` is the kubelet's error text."""


class NUMAAllocationStrategy(StrEnum):
    NONE = "none"
    MOST_ALLOCATED = "most-allocated"
    LEAST_ALLOCATED = "least-allocated"


@dataclass(frozen=True)
class PolicyOptions:
    prefer_closest_numa: bool = False
    max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES
    prefer_most_allocated_numa_node: bool = False
    numa_allocation_strategy: NUMAAllocationStrategy = NUMAAllocationStrategy.NONE
    numa_score_weights: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_map(
        cls,
        options: Mapping[str, str] | None,
        feature_gates: Mapping[str, bool] | None = None,
        levels: Mapping[str, OptionLevel] | None = None,
        kubelet_version: str = MASTER,
    ) -> PolicyOptions:
        """``NewPolicyOptions``: availability first, then each option's parser; the first refusal stops.

        The maturity table is that of ``kubelet_version`` (:func:`option_levels`); ``levels`` overrides it
        (the upstream tests register fake options this way). Options are checked in the order given: the
        kubelet ranges over its map in Go's random order, so with two refusable options it may report
        either; here the first one listed is reported, every time.
        """
        gates = {**DEFAULT_FEATURE_GATES, **(feature_gates or {})}
        table = option_levels(kubelet_version) if levels is None else levels
        values: dict[str, object] = {}
        for name, value in (options or {}).items():
            check_policy_option_available(name, gates, table)
            if name == PREFER_CLOSEST_NUMA_NODES:
                values["prefer_closest_numa"] = _parse_bool(name, value)
            elif name == MAX_ALLOWABLE_NUMA_NODES:
                values["max_allowable_numa_nodes"] = _parse_max_numa(value)
            elif name == PREFER_MOST_ALLOCATED_NUMA_NODE:
                values["prefer_most_allocated_numa_node"] = _parse_bool(name, value)
            elif name == NUMA_ALLOCATION_STRATEGY:
                values["numa_allocation_strategy"] = _parse_strategy(value)
            elif name == NUMA_SCORE_WEIGHTS:
                values["numa_score_weights"] = _parse_weights(value)
            else:
                raise PolicyOptionsError(f'unsupported topologymanager option: "{name}" ({value})')
        return cls(**values)  # type: ignore[arg-type]

    def to_map(self) -> dict[str, str]:
        """The non-default options in the kubelet's spelling (for reports and NRT attributes)."""
        out: dict[str, str] = {}
        if self.prefer_closest_numa:
            out[PREFER_CLOSEST_NUMA_NODES] = "true"
        if self.max_allowable_numa_nodes != DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
            out[MAX_ALLOWABLE_NUMA_NODES] = str(self.max_allowable_numa_nodes)
        if self.prefer_most_allocated_numa_node:
            out[PREFER_MOST_ALLOCATED_NUMA_NODE] = "true"
        if self.numa_allocation_strategy is not NUMAAllocationStrategy.NONE:
            out[NUMA_ALLOCATION_STRATEGY] = self.numa_allocation_strategy.value
        if self.numa_score_weights:
            out[NUMA_SCORE_WEIGHTS] = ",".join(f"{k}={v}" for k, v in sorted(self.numa_score_weights.items()))
        return out


def validate_policy_options(policy_name: str, options: PolicyOptions) -> None:
    """The KEP-6007 options checked against the policy and against each other (``NewManager`` time).

    Neither draft is merged upstream and no error text for these cases could be found on the closed PR
    #138321 (the last revision of its KEP accepts the option with other policies and ignores it); we refuse,
    as the emulator's issue asks, with texts of our own in the kubelet's style:

    - ``prefer-most-allocated-numa-node`` (first draft) breaks ties between single-node hints, which only
      the single-numa-node policy merges: any other policy with the option on is refused.
    - the two drafts are two answers to one question: the first draft's option together with a
      ``numa-allocation-strategy`` other than none is refused. ``numa-score-weights`` on its own is
      accepted and does nothing without a strategy, as on the PR #142226 branch.
    """
    if not options.prefer_most_allocated_numa_node:
        return
    if policy_name != _POLICY_SINGLE_NUMA_NODE:
        raise PolicyOptionsError(
            f'topology manager policy option "{PREFER_MOST_ALLOCATED_NUMA_NODE}" is only supported with the '
            f'"{_POLICY_SINGLE_NUMA_NODE}" policy, not "{policy_name}"'
        )
    if options.numa_allocation_strategy is not NUMAAllocationStrategy.NONE:
        raise PolicyOptionsError(
            f'topology manager policy options "{PREFER_MOST_ALLOCATED_NUMA_NODE}" and '
            f'"{NUMA_ALLOCATION_STRATEGY}" can not be used at the same time'
        )


def check_policy_option_available(
    name: str, feature_gates: Mapping[str, bool], levels: Mapping[str, OptionLevel] | None = None
) -> None:
    """``CheckPolicyOptionAvailable``: unknown, or gated off by its maturity level."""
    gates = {**DEFAULT_FEATURE_GATES, **feature_gates}
    level = (OPTION_LEVELS if levels is None else levels).get(name)
    if level is None:
        raise PolicyOptionsError(f"unknown Topology Manager Policy option: {go_quote(name)}")
    if level is OptionLevel.ALPHA and not gates.get(ALPHA_GATE, False):
        raise PolicyOptionsError(
            f"topology manager policy alpha-level options not enabled, but option {go_quote(name)} provided"
        )
    if level is OptionLevel.BETA and not gates.get(BETA_GATE, False):
        raise PolicyOptionsError(
            f"topology manager policy beta-level options not enabled, but option {go_quote(name)} provided"
        )


def check_options_gate(given: bool, options: Mapping[str, str], feature_gates: Mapping[str, bool]) -> None:
    """``run`` in ``cmd/kubelet/app/server.go`` (v1.33.13 … v1.36.3): options given (a non-nil map, so an
    explicit ``{}`` too) while the ``TopologyManagerPolicyOptions`` gate is off stop the kubelet before
    its container manager is built, whatever the policy. The gate is GA and on by default, and locked on
    from 1.36, where turning it off is refused earlier (``featureGates``)."""
    if given and not feature_gates.get(OPTIONS_GATE, True):
        raise PolicyOptionsError(
            f"topology manager policy options {go_format_string_map(options)} require feature gates "
            f"{go_quote(OPTIONS_GATE)} enabled"
        )


def _parse_bool(name: str, value: str) -> bool:
    try:
        return go_parse_bool(value)
    except ValueError as err:
        raise PolicyOptionsError(f'bad value for option "{name}": {err}') from None


_WARNED_MAX_NUMA: set[int] = set()


def _parse_max_numa(value: str) -> int:
    try:
        count = go_atoi(value)
    except ValueError as err:
        raise PolicyOptionsError(
            f'unable to convert policy option to integer "{MAX_ALLOWABLE_NUMA_NODES}": {err}'
        ) from None
    if count < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
        raise PolicyOptionsError(
            f'the minimum value of "{MAX_ALLOWABLE_NUMA_NODES}" should not be less than '
            f"{DEFAULT_MAX_ALLOWABLE_NUMA_NODES}"
        )
    if count > DEFAULT_MAX_ALLOWABLE_NUMA_NODES and count not in _WARNED_MAX_NUMA:
        # The kubelet logs it once, when it starts; the options are parsed again for every node, fork and
        # restart modelled here, so once per value and process.
        _WARNED_MAX_NUMA.add(count)
        log.warning(
            "WARNING: the value of max-allowable-numa-nodes is more than the default recommended value; "
            "admission may be slow. value=%d defaultValue=%d",
            count,
            DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
        )
    return count


def _parse_strategy(value: str) -> NUMAAllocationStrategy:
    """An empty value means none, so the option can be neutralised without removing the key."""
    if value == "":
        return NUMAAllocationStrategy.NONE
    try:
        return NUMAAllocationStrategy(value)
    except ValueError:
        allowed = " ".join(f'"{s.value}"' for s in sorted(NUMAAllocationStrategy, key=lambda s: s.value))
        raise PolicyOptionsError(
            f'bad value for option "{NUMA_ALLOCATION_STRATEGY}": "{value}" must be one of [{allowed}]'
        ) from None


def _parse_weights(value: str) -> dict[str, int]:
    """``resource=weight,...``; blanks around items and empty items (a trailing comma) are tolerated.

    Weights are 0..100 (0 excludes the resource); unnamed resources weigh ``DEFAULT_NUMA_SCORE_WEIGHT``.
    """
    weights: dict[str, int] = {}
    try:
        for raw_item in value.split(","):
            item = raw_item.strip()
            if not item:
                continue
            name, sep, raw = item.partition("=")
            if not sep:
                raise ValueError(f'invalid weight entry "{item}": expected resource=weight')
            name = name.strip()
            if not name:
                raise ValueError(f'empty resource name in weight entry "{item}"')
            try:
                weights[name] = go_atoi(raw.strip())
            except ValueError as err:
                raise ValueError(f'invalid weight value for "{name}": {err}') from None
        for name in sorted(weights):
            if not MIN_NUMA_SCORE_WEIGHT <= weights[name] <= MAX_NUMA_SCORE_WEIGHT:
                raise ValueError(
                    f'weight for "{name}" must be in range [{MIN_NUMA_SCORE_WEIGHT}, '
                    f"{MAX_NUMA_SCORE_WEIGHT}], got {weights[name]}"
                )
    except ValueError as err:
        raise PolicyOptionsError(f'bad value for option "{NUMA_SCORE_WEIGHTS}": {err}') from None
    return weights
