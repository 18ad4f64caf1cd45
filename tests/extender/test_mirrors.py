"""The mirrors: applied by generation, failing closed with the reason when never reported, stale or
disconnected, and back when the agent reports its full state again; the ledger's entries close when a
mirror holds or refused the pod, or at the TTL."""

from __future__ import annotations

from kubeletemu.config import Config
from kubeletemu.machine import Machine
from kubeletemu.scheduler.extender.ledger import (
    CLOSED_BY_AGENT,
    CLOSED_BY_TTL,
    OPENED_BY_PRIORITIZE,
    Ledger,
    TTLOnly,
)
from kubeletemu.scheduler.extender.mirrors import DISCONNECTED, FRESH, NEVER_REPORTED, STALE, Mirrors
from tests.extender.conftest import FakeClock, emulator_with, make_pod


def test_apply_by_generation(node_config: Config, machine: Machine, clock: FakeClock) -> None:
    mirrors = Mirrors(stale_after=30, clock=clock)
    first = emulator_with(node_config, machine)
    second = emulator_with(node_config, machine, make_pod("a"))
    assert mirrors.apply("n1", 5, first)
    assert mirrors.lookup("n1").emulator is first
    assert not mirrors.apply("n1", 5, second)  # not newer
    assert not mirrors.apply("n1", 4, second)
    assert mirrors.lookup("n1").emulator is first
    assert mirrors.apply("n1", 6, second)
    assert mirrors.lookup("n1").emulator is second
    assert (mirrors.generation("n1"), mirrors.generation("n2")) == (6, None)
    assert mirrors.emulators == {"n1": second}


def test_fail_closed_reasons(node_config: Config, machine: Machine, clock: FakeClock) -> None:
    mirrors = Mirrors(stale_after=30, clock=clock, expected=("n1", "n2"))
    never = mirrors.lookup("n2")
    assert (never.state, never.mirror) == (NEVER_REPORTED, None)
    assert never.reason == "node 'n2' fails closed: its agent never reported"
    assert mirrors.lookup("unknown").state == NEVER_REPORTED
    mirrors.apply("n1", 1, emulator_with(node_config, machine))
    assert mirrors.lookup("n1").state == FRESH
    assert mirrors.counts() == {FRESH: 1, NEVER_REPORTED: 1, STALE: 0, DISCONNECTED: 0}

    clock.advance(29)
    mirrors.heartbeat("n1")
    clock.advance(29)
    assert mirrors.lookup("n1").state == FRESH  # the heartbeat kept it fresh
    clock.advance(2)
    stale = mirrors.lookup("n1")
    assert stale.state == STALE and stale.mirror is None
    assert stale.reason == "node 'n1' fails closed: its agent was last heard 31.0s ago (staleAfter 30s)"
    mirrors.heartbeat("n1")
    assert mirrors.lookup("n1").state == FRESH

    mirrors.disconnected("n1", "stream reset")
    gone = mirrors.lookup("n1")
    assert gone.state == DISCONNECTED
    assert gone.reason == "node 'n1' fails closed: its agent disconnected: stream reset"
    mirrors.heartbeat("n1")
    assert mirrors.lookup("n1").state == DISCONNECTED  # alive, but its state is not known yet
    # A reconnecting agent resends its full state, from whatever generation it counts.
    back = emulator_with(node_config, machine)
    assert mirrors.apply("n1", 1, back)
    assert mirrors.lookup("n1").emulator is back


def test_ledger_closed_by_the_agents_report(node_config: Config, machine: Machine, clock: FakeClock) -> None:
    mirrors = Mirrors(stale_after=30, clock=clock)
    ledger = Ledger(ttl=60, clock=clock)
    mirrors.on_apply(ledger.mirror_applied)
    pod, other = make_pod("a"), make_pod("b")
    mirrors.apply("n1", 1, emulator_with(node_config, machine))
    ledger.open(pod, "n1", OPENED_BY_PRIORITIZE)
    ledger.open(other, "n1", OPENED_BY_PRIORITIZE)
    assert ledger.by_node == {"n1": {"uid-a": pod, "uid-b": other}}
    # n2 holds pod a (the scheduler picked another node than ranked first): closed wherever it was counted.
    mirrors.apply("n2", 1, emulator_with(node_config, machine, pod))
    assert ledger.entry("uid-a") is None
    assert ledger.by_node == {"n1": {"uid-b": other}}
    # n1 refused pod b.
    mirrors.apply("n1", 2, emulator_with(node_config, machine), refused=["uid-b"])
    assert len(ledger) == 0 and ledger.by_node == {}
    assert ledger.closed[CLOSED_BY_AGENT] == 2


def test_ledger_ttl(node_config: Config, machine: Machine, clock: FakeClock) -> None:
    mirrors = Mirrors(clock=clock)
    ledger = Ledger(ttl=60, rule=TTLOnly(), clock=clock)
    mirrors.on_apply(ledger.mirror_applied)
    pod = make_pod("a")
    ledger.open(pod, "n1", OPENED_BY_PRIORITIZE)
    mirrors.apply("n1", 1, emulator_with(node_config, machine, pod))
    assert ledger.entry("uid-a") is not None  # the TTL-only rule ignores reports
    clock.advance(59)
    assert ledger.expire() == 0
    clock.advance(1)
    assert ledger.expire() == 1
    assert ledger.closed[CLOSED_BY_TTL] == 1 and ledger.by_node == {}
