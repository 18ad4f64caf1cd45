"""The node fit's hand-off of scalar requests to DRA per kubelet version (release-tag audit of the
Memory/Device Managers, podresources and the pod admit handlers).

What this pins, read in openshift/kubernetes as vendored in openshift/microshift (v1.33.13 release-4.20,
v1.34.9 release-4.21, v1.35.6 release-4.22, v1.36.3 release-4.23): the node fit's hand-off of scalar
requests to DRA (registry row ``admission.dra-extended-resource-fit``) on both sides of each change, through
``NodeEmulator`` at each ``kubeletVersion``; and the facts the existing rows of the area rest on where the
trees settle them.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.lifecycle.predicate import DRA_EXTENDED_RESOURCE_FIT, delegated_to_dra
from kubeletemu.machine import Machine
from kubeletemu.versions.behaviours import behaviours, step_at
from kubeletemu.versions.gates import default_gates
from tests.versions.helpers import pod, versioned_config

GATE = "DRAExtendedResource"
GI = 2**30

# two_nodes has no 1Gi pages: its allocatable lists hugepages-1Gi at 0 (and no hugepages-16Gi at all).
ZERO_LISTED = pod("huge", 'cpu: "1", memory: 256Mi, hugepages-1Gi: 1Gi')
ABSENT = pod("huge16", 'cpu: "1", memory: 256Mi, hugepages-16Gi: 16Gi')


def node(machine: Machine, version: str, gates: Mapping[str, bool] | None = None) -> NodeEmulator:
    """No CPU or Memory Manager policy: only the predicate handler's node fit can refuse."""
    return NodeEmulator(parse_config(versioned_config(version, "none", managers="", gates=gates)), machine)


def out_of(resource: str, requested: int) -> tuple[bool, str, str]:
    return (
        False,
        f"OutOf{resource}",
        f"Node didn't have enough resource: {resource}, requested: {requested}, used: 0, capacity: 0",
    )


def outcome(emulator: NodeEmulator, pod_: object) -> tuple[bool, str, str]:
    report = emulator.would_admit(pod_)  # type: ignore[arg-type]
    return report.admitted, report.reason, report.message


ADMITTED = (True, "", "")


# ---- registry --------------------------------------------------------------------------------------


def test_dra_fit_row_steps_per_version() -> None:
    row = behaviours()[DRA_EXTENDED_RESOURCE_FIT]
    assert [(c.since, c.ref) for c in row.changes] == [
        ("1.34", "kubernetes#130653"),
        ("1.35", "kubernetes#133784"),
        ("1.36", "kubernetes#135725"),
    ]
    versions = ("1.33", "1.34", "1.35", "1.36", "1.37", "master")
    assert [step_at(DRA_EXTENDED_RESOURCE_FIT, v) for v in versions] == [0, 1, 2, 3, 3, 3]


def test_dra_gate_defaults_the_row_relies_on() -> None:
    """No gate in 1.33; alpha/off in 1.34 and 1.35; on from 1.36 (so 1.36's change matters by default)."""
    assert GATE not in default_gates("1.33", (GATE,))
    assert [default_gates(v, (GATE,))[GATE] for v in ("1.34", "1.35", "1.36", "1.37", "master")] == [
        False,
        False,
        True,
        True,
        True,
    ]


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (0, (False, False, False)),
        (1, (False, False, True)),  # 1.34: only a name missing from allocatable
        (2, (False, True, True)),  # 1.35: missing or listed at 0
        (3, (False, False, False)),  # 1.36 on: never at the kubelet
    ],
)
def test_delegated_to_dra_by_step(step: int, expected: tuple[bool, bool, bool]) -> None:
    scalars = {"example.com/dev": 2, "hugepages-1Gi": 0}
    got = tuple(delegated_to_dra(name, scalars, step) for name in ("example.com/dev", "hugepages-1Gi", "x/y"))
    assert got == expected


# ---- through the emulator: a request listed at 0 ---------------------------------------------------


def test_allocatable_lists_the_missing_page_size_at_zero(two_nodes: Machine) -> None:
    allocatable = node(two_nodes, "master").allocatable.allocatable
    assert allocatable["hugepages-1Gi"].amount == 0
    assert "hugepages-16Gi" not in allocatable


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.35", "1.36", "1.37", "master"])
def test_zero_listed_scalar_refused_at_default_gates(two_nodes: Machine, version: str) -> None:
    """Default gates: 1.33 has no hand-off, 1.34/1.35 have the gate off, 1.36/master check whatever the
    gate (before the audit the emulator admitted here at 1.33, 1.36 and master)."""
    assert outcome(node(two_nodes, version), ZERO_LISTED) == out_of("hugepages-1Gi", GI)


def test_zero_listed_scalar_checked_at_134_with_gate(two_nodes: Machine) -> None:
    """1.34 hands off only names that are no key of the allocatable; hugepages-1Gi is listed (at 0)."""
    assert outcome(node(two_nodes, "1.34", {GATE: True}), ZERO_LISTED) == out_of("hugepages-1Gi", GI)


def test_zero_listed_scalar_left_to_dra_at_135_with_gate(two_nodes: Machine) -> None:
    assert outcome(node(two_nodes, "1.35", {GATE: True}), ZERO_LISTED) == ADMITTED


@pytest.mark.parametrize("version", ["1.36", "1.37", "master"])
def test_zero_listed_scalar_checked_from_136_with_gate(two_nodes: Machine, version: str) -> None:
    assert outcome(node(two_nodes, version, {GATE: True}), ZERO_LISTED) == out_of("hugepages-1Gi", GI)


# ---- through the emulator: a request the allocatable does not list --------------------------------


@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_absent_scalar_left_to_dra_at_134_and_135_with_gate(two_nodes: Machine, version: str) -> None:
    assert outcome(node(two_nodes, version, {GATE: True}), ABSENT) == ADMITTED


@pytest.mark.parametrize(
    ("version", "gates"),
    [
        ("1.33", None),
        ("1.34", None),
        ("1.35", None),
        ("1.36", None),
        ("1.36", {GATE: True}),
        ("master", None),
    ],
)
def test_absent_scalar_checked_otherwise(
    two_nodes: Machine, version: str, gates: Mapping[str, bool] | None
) -> None:
    assert outcome(node(two_nodes, version, gates), ABSENT) == out_of("hugepages-16Gi", 16 * GI)


def test_unlisted_extended_resource_dropped_in_every_version(two_nodes: Machine) -> None:
    """removeMissingExtendedResources (unchanged for pods without status) runs before the fit, so an
    extended resource the node does not list is no refusal in any version."""
    cluster_level = pod("licence", 'cpu: "1", memory: 256Mi, example.com/licence: "3"')
    for version in ("1.33", "1.34", "1.35", "1.36", "1.37", "master"):
        assert outcome(node(two_nodes, version), cluster_level) == ADMITTED, version


def test_would_admit_at_another_version_uses_that_versions_fit(two_nodes: Machine) -> None:
    """A 1.35 node with the gate on, asked about master: master's fit (checked)."""
    emulator = node(two_nodes, "1.35", {GATE: True})
    assert emulator.would_admit(ZERO_LISTED).admitted
    report = emulator.would_admit(ZERO_LISTED, kubelet_version="master")
    assert (report.admitted, report.reason) == (False, "OutOfhugepages-1Gi")
