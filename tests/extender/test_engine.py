"""The engine's bookkeeping around Bind (no HTTP): a bound pod's entry moves to the node it was really bound
to, a failed binding closes it, and a pod's new Filter closes its old entry."""

from __future__ import annotations

from kubeletemu.config import Config
from kubeletemu.machine import Machine
from kubeletemu.scheduler.extender.engine import Engine
from kubeletemu.scheduler.extender.ledger import (
    CLOSED_BY_BIND_ERROR,
    CLOSED_BY_REFILTER,
    OPENED_BY_BIND,
    OPENED_BY_PRIORITIZE,
    Ledger,
)
from kubeletemu.scheduler.extender.mirrors import Mirrors
from kubeletemu.scheduler.extender.protocol import ExtenderArgs
from tests.extender.conftest import FakeClock, emulator_with, make_pod


def engine_of(node_config: Config, machine: Machine, clock: FakeClock) -> Engine:
    mirrors = Mirrors(clock=clock)
    engine = Engine(mirrors, Ledger(clock=clock))
    for name in ("a", "b"):
        mirrors.apply(name, 1, emulator_with(node_config, machine))
    return engine


def test_bind_moves_the_entry_and_a_failed_bind_closes_it(
    node_config: Config, machine: Machine, clock: FakeClock
) -> None:
    engine = engine_of(node_config, machine, clock)
    pod = make_pod("p")
    args = ExtenderArgs(pod, ("a", "b"))
    assert engine.filter(args).node_names == ["a", "b"]
    engine.prioritize(args)
    entry = engine.ledger.entry(pod.uid)
    assert entry is not None and (entry.node, entry.opened_by) == ("a", OPENED_BY_PRIORITIZE)
    # The scheduler bound it to b after all (its own scores broke the tie): counted on b only.
    assert engine.bound(pod.uid, "b")
    entry = engine.ledger.entry(pod.uid)
    assert entry is not None and (entry.node, entry.opened_by) == ("b", OPENED_BY_BIND)
    assert engine.ledger.by_node == {"b": {pod.uid: pod}}
    assert engine.filter(ExtenderArgs(make_pod("q"), ("a", "b"))).node_names == ["a"]
    engine.bind_failed(pod.uid)
    assert engine.ledger.entry(pod.uid) is None and engine.ledger.closed[CLOSED_BY_BIND_ERROR] == 1
    # A pod Bind names that no Filter saw is not counted anywhere.
    assert not engine.bound("uid-unknown", "a")


def test_a_new_filter_for_the_pod_closes_its_old_entry(
    node_config: Config, machine: Machine, clock: FakeClock
) -> None:
    engine = engine_of(node_config, machine, clock)
    pod = make_pod("p")
    assert engine.filter(ExtenderArgs(pod, ("a",))).node_names == ["a"]  # one node: opened by Filter
    assert engine.ledger.entry(pod.uid) is not None
    # Asked again (its binding failed): its own old placement does not count against it.
    assert engine.filter(ExtenderArgs(pod, ("a",))).node_names == ["a"]
    assert engine.ledger.closed[CLOSED_BY_REFILTER] == 1
