"""Static policy options: names, maturity gates, values, forbidden pairs, machine validation."""

from __future__ import annotations

import pytest

from kubeletemu.cpumanager import (
    OPTION_LEVELS,
    OptionLevel,
    PolicyOptionsError,
    StaticPolicyOptions,
    validate_static_policy_options,
)
from tests.cpumanager.helpers import FixedStore, conformance_topology

ALPHA_ON = {"CPUManagerPolicyAlphaOptions": True}


def test_maturity_levels_as_in_master() -> None:
    assert OPTION_LEVELS == {
        "full-pcpus-only": OptionLevel.STABLE,
        "distribute-cpus-across-numa": OptionLevel.BETA,
        "align-by-socket": OptionLevel.ALPHA,
        "distribute-cpus-across-cores": OptionLevel.ALPHA,
        # GA since kubernetes#134388 (1.35) and #137055 (1.36).
        "strict-cpu-reservation": OptionLevel.STABLE,
        "prefer-align-cpus-by-uncorecache": OptionLevel.STABLE,
    }


def test_values_parse_like_go_bools() -> None:
    opts = StaticPolicyOptions.from_map(
        {"full-pcpus-only": "1", "distribute-cpus-across-numa": "T", "strict-cpu-reservation": "FALSE"}
    )
    assert opts.full_physical_cpus_only and opts.distribute_cpus_across_numa
    assert not opts.strict_cpu_reservation
    assert opts.to_map() == {"full-pcpus-only": "true", "distribute-cpus-across-numa": "true"}
    assert StaticPolicyOptions.from_map(None) == StaticPolicyOptions()


@pytest.mark.parametrize(
    ("options", "gates", "message"),
    [
        ({"bogus": "true"}, None, 'unknown CPU Manager Policy option: "bogus"'),
        (
            {"align-by-socket": "true"},
            None,
            'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided',
        ),
        ({"align-by-socket": "false"}, None, "Alpha-level Options not enabled"),
        (
            {"distribute-cpus-across-numa": "true"},
            {"CPUManagerPolicyBetaOptions": False},
            "CPU Manager Policy Beta-level Options not enabled, but option "
            '"distribute-cpus-across-numa" provided',
        ),
        (
            {"full-pcpus-only": "yes"},
            None,
            'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax',
        ),
        (
            {"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"},
            ALPHA_ON,
            "static policy options full-pcpus-only and distribute-cpus-across-cores "
            "can not be used at the same time",
        ),
        (
            {"distribute-cpus-across-numa": "true", "distribute-cpus-across-cores": "true"},
            ALPHA_ON,
            "static policy options distribute-cpus-across-numa and distribute-cpus-across-cores "
            "can not be used at the same time",
        ),
        (
            {"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-cores": "true"},
            ALPHA_ON,
            "static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-cores "
            "can not be used at the same time",
        ),
        (
            {"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "true"},
            None,
            "static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa "
            "can not be used at the same time",
        ),
    ],
)
def test_option_errors(options: dict[str, str], gates: dict[str, bool] | None, message: str) -> None:
    with pytest.raises(PolicyOptionsError) as err:
        StaticPolicyOptions.from_map(options, gates)
    assert message in str(err.value)


def test_stable_option_needs_no_gate() -> None:
    gates = {"CPUManagerPolicyAlphaOptions": False, "CPUManagerPolicyBetaOptions": False}
    assert StaticPolicyOptions.from_map({"full-pcpus-only": "true"}, gates).full_physical_cpus_only


def test_align_by_socket_validation() -> None:
    opts = StaticPolicyOptions.from_map({"align-by-socket": "true"}, ALPHA_ON)
    multi = conformance_topology("cpu_assignment", "topoDualSocketMultiNumaPerSocketHT")
    validate_static_policy_options(opts, multi, FixedStore("best-effort"))
    with pytest.raises(PolicyOptionsError) as err:
        validate_static_policy_options(opts, multi, FixedStore("single-numa-node"))
    assert str(err.value) == (
        "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket "
        "policy option"
    )
    # 4 sockets over 2 NUMA nodes.
    more_sockets = conformance_topology("cpu_assignment", "fakeTopoMultiSocketDualSocketPerNumaHT")
    with pytest.raises(PolicyOptionsError) as err:
        validate_static_policy_options(opts, more_sockets, FixedStore("best-effort"))
    assert str(err.value) == (
        "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA"
    )
    # Without the option nothing is checked.
    validate_static_policy_options(StaticPolicyOptions(), more_sockets, FixedStore("single-numa-node"))
