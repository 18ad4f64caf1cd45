"""Version-table rows (docs/kubelet-versions.md) derived from data that already exists elsewhere (issue 16).

Policy options' maturity (``policy_options.py``) and feature gates (``data/feature_gates.json``) differ
between the supported kubelets too; their rows are computed from those tables, so no fact is written
twice. Only gates that change within the supported range and that the emulated admission reads or that
decide a resource-manager behaviour are shown (:data:`TABLE_GATES`); the podresources gates have their
own rows in ``data/behaviours/podresources.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubeletemu.versions import policy_options
from kubeletemu.versions.gates import GateSpec, binary_version, feature_gates

# In table order: the managers' option gates, then the pod-level and container-model gates.
TABLE_GATES: tuple[str, ...] = (
    "TopologyManagerPolicyOptions",
    "MemoryManager",
    "PodLevelResources",
    "PodLevelResourceManagers",
    "InPlacePodVerticalScaling",
    "InPlacePodLevelResourcesVerticalScaling",
    "SidecarContainers",
    "LegacySidecarContainers",
    "DevicePluginCDIDevices",
    "DynamicResourceAllocation",
    "DRAExtendedResource",
)


# The change behind each gate's steps: its KEP, and the PR of a step where it is known
# (``shared/spec/kubelet-versions.md``; a step without a known PR cites the KEP). Keyed by the first
# version showing the new state.
GATE_REFS: Mapping[str, tuple[str, Mapping[str, str]]] = {
    "TopologyManagerPolicyOptions": ("KEP-3545", {"1.36": "kubernetes#136380"}),
    "MemoryManager": ("KEP-1769", {"1.36": "kubernetes#136381"}),
    "PodLevelResources": ("KEP-2837", {"1.34": "kubernetes#132999"}),
    "PodLevelResourceManagers": (
        "KEP-5526",
        {"1.36": "kubernetes#134768", "1.37": "kubernetes#140573, kubernetes#141209"},
    ),
    "InPlacePodVerticalScaling": ("KEP-1287", {}),
    "InPlacePodLevelResourcesVerticalScaling": ("KEP-5419", {"1.36": "kubernetes#137684"}),
    "SidecarContainers": ("KEP-753", {"1.37": "kubernetes#137755"}),
    "LegacySidecarContainers": ("KEP-753", {"1.34": "kubernetes#131463"}),
    "DevicePluginCDIDevices": ("KEP-4009", {"1.34": "kubernetes#132083"}),
    "DynamicResourceAllocation": ("KEP-4381", {}),
    "DRAExtendedResource": ("KEP-5004", {}),
}


@dataclass(frozen=True)
class Row:
    """One table row: ``label`` and a cell per version."""

    label: str
    cells: tuple[str, ...]


def _gate_cell(spec: GateSpec | None, known_before: bool) -> str:
    if spec is None:
        return "removed" if known_before else "—"
    state = "on" if spec.default else "off"
    stage = spec.stage if spec.stage == "GA" else spec.stage.lower()
    return f"{stage}, locked {state}" if spec.locked else f"{stage}, {state}"


def gate_rows(versions: Sequence[str]) -> list[Row]:
    """A row per :data:`TABLE_GATES` entry whose spec differs between ``versions``."""
    specs: list[Mapping[str, GateSpec]] = [feature_gates(v) for v in versions]
    rows = []
    for name in TABLE_GATES:
        kep, prs = GATE_REFS[name]
        states: list[str] = []
        known = False
        for gates in specs:
            spec = gates.get(name)
            states.append(_gate_cell(spec, known))
            known = known or spec is not None
        if len(set(states)) > 1:
            # A cell where the state changes from the version before cites the change.
            cells = [
                f"{state} ({prs.get(version, kep)})" if index and state != states[index - 1] else state
                for index, (version, state) in enumerate(zip(versions, states, strict=True))
            ]
            rows.append(Row(f"feature gate `{name}`", tuple(cells)))
    return rows


def _option_rows(
    component: str, table: Mapping[str, tuple[policy_options.Step, ...]], versions: Sequence[str]
) -> list[Row]:
    rows = []
    for option, steps in table.items():
        cells = []
        for index, version in enumerate(versions):
            level = policy_options.maturity_at({option: steps}, version)[option]
            minor = binary_version(version)
            # master shares 1.37's binary version: a step lands in the first column of its minor only.
            first = index == 0 or binary_version(versions[index - 1]) != minor
            landed = [s.pr for s in steps if first and s.since == minor and s.pr]
            cells.append(f"{level} ({landed[0]})" if landed else level)
        rows.append(Row(f"{component}: option `{option}`", tuple(cells)))
    return rows


def option_rows(versions: Sequence[str]) -> list[Row]:
    """A row per policy option whose maturity moved within the supported range."""
    return [
        *_option_rows("CPU Manager", policy_options.CPU_MANAGER, versions),
        *_option_rows("Topology Manager", policy_options.TOPOLOGY_MANAGER, versions),
    ]


def derived_rows(versions: Sequence[str]) -> list[Row]:
    """Policy-option rows, then gate rows."""
    return [*option_rows(versions), *gate_rows(versions)]
