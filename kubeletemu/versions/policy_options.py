"""Policy options whose maturity changed between 1.33 and master, per kubelet version (issue 16).

The CPU Manager's and the Topology Manager's policy options each have a maturity level (alpha, beta, GA)
that decides which options gate must be on (``CPUManagerPolicyAlphaOptions`` / ``BetaOptions``,
``TopologyManagerPolicyAlphaOptions`` / ``BetaOptions``; a GA option needs none). The managers keep
master's levels (``OPTION_LEVELS`` in ``kubeletemu/cpumanager/policy_options.py`` and
``kubeletemu/topologymanager/policy_options.py``); this table holds only the options whose level moved
within the supported range (1.33 … master), each step with the PR that made it and the first release
carrying it. Options not listed here have master's level in every supported version; for ``master`` the
managers' own tables apply (which agree with the last step of each entry here).

The refusal texts need no entry: the Topology Manager's lower-case texts (``topology manager policy
beta-level options not enabled, but option "…" provided``) are in 1.33 already (v1.32.x still had
``Topology Manager Policy Beta-level Options …``), and the CPU Manager's stay capitalised
(``CPU Manager Policy Beta-level Options …``) through master.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kubeletemu.versions.gates import binary_version
from kubeletemu.versions.version import MASTER

Maturity = Literal["alpha", "beta", "GA"]


@dataclass(frozen=True)
class Step:
    """From kubelet ``since`` (``"1.34"``) on, the option is ``maturity``; ``pr`` made it so (``""`` for
    the level already in effect at 1.33, the oldest supported version)."""

    since: str
    maturity: Maturity
    pr: str = ""


# CPU Manager static policy options (KEP-2625 and its follow-ups).
CPU_MANAGER: Mapping[str, tuple[Step, ...]] = {
    # Alpha in 1.33; beta in 1.34 (kubernetes#132970); GA in 1.36 (kubernetes#137055).
    "prefer-align-cpus-by-uncorecache": (
        Step("1.33", "alpha"),
        Step("1.34", "beta", "kubernetes#132970"),
        Step("1.36", "GA", "kubernetes#137055"),
    ),
    # Beta in 1.33 and 1.34; GA in 1.35 (kubernetes#134388).
    "strict-cpu-reservation": (
        Step("1.33", "beta"),
        Step("1.35", "GA", "kubernetes#134388"),
    ),
}

# Topology Manager policy options (KEP-3545).
TOPOLOGY_MANAGER: Mapping[str, tuple[Step, ...]] = {
    # Beta in 1.33 and 1.34; GA in 1.35 (kubernetes#134614).
    "max-allowable-numa-nodes": (
        Step("1.33", "beta"),
        Step("1.35", "GA", "kubernetes#134614"),
    ),
}


def _key(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def maturity_at(table: Mapping[str, tuple[Step, ...]], version: str = MASTER) -> dict[str, Maturity]:
    """Each option of ``table`` with its maturity at kubelet ``version`` (``master`` is binary 1.37).

    Raises ``ValueError`` for an unsupported version.
    """
    emulated = _key(binary_version(version))
    out: dict[str, Maturity] = {}
    for option, steps in table.items():
        in_effect = [step for step in steps if _key(step.since) <= emulated]
        if in_effect:
            out[option] = in_effect[-1].maturity
    return out
