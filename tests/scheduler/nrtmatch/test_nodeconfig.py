"""Policy, scope and maxNUMA as the plugin reads them (nodeconfig/topologymanager.go at 903da7d)."""

from __future__ import annotations

import pytest

from kubeletemu.scheduler.nrtmatch.nodeconfig import TopologyManagerConfig, topology_manager_config
from kubeletemu.scheduler.objects import AttributeInfo, NodeResourceTopology


def read(
    policies: tuple[str, ...] = (), attributes: tuple[tuple[str, str], ...] = ()
) -> TopologyManagerConfig:
    return topology_manager_config(
        NodeResourceTopology(
            "n", topology_policies=policies, attributes=tuple(AttributeInfo(*a) for a in attributes)
        )
    )


def test_defaults() -> None:
    assert read() == TopologyManagerConfig("none", "container", 8)
    assert str(read()) == "policy=none scope=container maxNUMANodes=8"


@pytest.mark.parametrize(
    ("legacy", "policy", "scope"),
    [
        ("SingleNUMANodePodLevel", "single-numa-node", "pod"),
        ("SingleNUMANodeContainerLevel", "single-numa-node", "container"),
        # The level-qualified best-effort and restricted names set policy and scope too (updateFromPolicies).
        ("BestEffortPodLevel", "best-effort", "pod"),
        ("RestrictedContainerLevel", "restricted", "container"),
        # The bare names set nothing.
        ("BestEffort", "none", "container"),
        ("Restricted", "none", "container"),
        ("None", "none", "container"),
        ("single-numa-node", "none", "container"),
    ],
)
def test_legacy_policy_names(legacy: str, policy: str, scope: str) -> None:
    assert (read((legacy,)).policy, read((legacy,)).scope) == (policy, scope)


def test_only_the_first_legacy_policy_counts() -> None:
    assert read(("Restricted", "SingleNUMANodePodLevel")) == TopologyManagerConfig()
    assert read(("RestrictedPodLevel", "SingleNUMANodeContainerLevel")).policy == "restricted"


def test_attributes_override_the_legacy_list_one_by_one() -> None:
    conf = read(("SingleNUMANodePodLevel",), (("topologyManagerPolicy", "best-effort"),))
    # The scope from the legacy name stays: attributes override one field at a time.
    assert (conf.policy, conf.scope) == ("best-effort", "pod")


def test_invalid_attribute_values_are_ignored_and_a_later_valid_one_wins() -> None:
    conf = read(
        (),
        (
            ("topologyManagerPolicy", "single-numa-node"),
            ("topologyManagerPolicy", "Restricted"),  # invalid (case): ignored
            ("topologyManagerScope", "Pod"),
            ("topologyManagerScope", "pod"),
            ("topologyManagerPolicy", "restricted"),
        ),
    )
    assert (conf.policy, conf.scope) == ("restricted", "pod")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (("16",), 16),
        (("1",), 8),  # counts only above 1
        (("0",), 8),
        (("-2",), 8),
        (("A",), 8),
        (("4.0",), 8),  # strconv.Atoi
        (("+4",), 4),
        (("65535",), 1024),  # capped
        (("16", "x", "2"), 2),
    ],
)
def test_max_numa_nodes(values: tuple[str, ...], expected: int) -> None:
    assert read((), tuple(("topologyManagerMaxNUMANodes", v) for v in values)).max_numa_nodes == expected
