"""CachedTopology's node versions: what the kept node answers compare to know that nothing a Filter reads
through the NRT cache changed. Equal versions must mean no change reported between the two readings."""

from __future__ import annotations

import random

from kubeletemu.fleet.scheduling import CachedTopology
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.nrtcache.informers import InformerStore
from kubeletemu.scheduler.nrtcache.passthrough import Passthrough

NAMES = [f"node-{i}" for i in range(6)]


def test_versions_change_exactly_with_the_changes_reported() -> None:
    """Random changes of one node and of all: after each, a node's version equals an earlier reading of
    it exactly when no change naming it (or all nodes) came between; versions() agrees with version()."""
    source = CachedTopology(Passthrough(InformerStore()))
    nodes = [NodeInfo(name) for name in NAMES]
    rng = random.Random(7)
    readings: list[tuple[list[object], list[set[str]]]] = []  # each reading, and what changed since it
    for _ in range(300):
        if rng.random() < 0.15:
            source.changed_all()
            changed = set(NAMES)
        else:
            name = rng.choice(NAMES)
            source.changed(name)
            changed = {name}
        for _, since in readings:
            since[0] |= changed
        versions = source.versions(nodes)
        assert versions == [source.version(node) for node in nodes]
        for earlier, since in readings[-20:]:
            for index, name in enumerate(NAMES):
                assert (versions[index] == earlier[index]) == (name not in since[0]), (name, since)
        readings.append((versions, [set()]))


def test_without_memo_every_version_is_none() -> None:
    source = CachedTopology(Passthrough(InformerStore()), memo=False)
    nodes = [NodeInfo(name) for name in NAMES]
    source.changed("node-1")
    assert source.versions(nodes) == [None] * len(NAMES)
    assert source.version(nodes[0]) is None
