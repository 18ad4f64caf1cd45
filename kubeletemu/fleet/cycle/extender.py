"""The fleet's ``extender`` setup: kube-scheduler's default profile asking ``kubeletemu extender``, run with
the extender's own code (:mod:`kubeletemu.scheduler.extender`: its mirrors, ledger and verbs) on the
simulated clock.

What kube-scheduler does with an extender (``schedule_one.go``, kubernetes v1.36.3; ``extender.go``'s
``HTTPExtender`` in node-cache mode, no ``managedResources``, so interested in every pod):

* ``findNodesThatPassExtenders``: after the Filter plugins found their feasible nodes (``numFeasibleNodes
  ToFind`` of them, ``nextStartNodeIndex`` moved by those evaluated), the extender filters those. A node it
  fails gets ``Unschedulable`` (``FailedNodes``) or ``UnschedulableAndUnresolvable``
  (``FailedAndUnresolvableNodes``) with the extender's message and no plugin, and when it fails any
  node the cycle's rejectors gain the fake plugin ``Extender``, whose registration every pod and node event
  matches (so the queue retries the pod on the next event after its backoff). The nodes it passes keep the
  extender's order; the same Filter runs on a batch hint (``evaluateNominatedNode``).
* ``prioritizeNodes`` (not run when one node is feasible): each node's total is the plugins' weighted sum
  plus the extender's score × ``weight`` × ``MaxNodeScore / MaxExtenderPriority`` (10).

What the extender sees (:class:`FleetExtender`): each node's agent reports the node's full state
``feedLatency`` after it changed (changes within that time coalesce into one report, as the agent's feed
poll does), with the pods it refused most recently; the ledger opens an entry where Prioritize ranks first
(or on the one node Filter passes) and closes it on the agent's report (``closeOn: agent-report``) or its
TTL (``closeOn: ttl``). Agents never go silent here, so no node fails closed as stale.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from kubeletemu.emulator import NodeEmulator
from kubeletemu.fleet.cycle.diagnosis import NodeStatus
from kubeletemu.pod import Pod
from kubeletemu.scheduler.extender.engine import Engine
from kubeletemu.scheduler.extender.ledger import CLOSING_RULES, DEFAULT_TTL_S, AgentReport, Ledger
from kubeletemu.scheduler.extender.mirrors import Mirrors
from kubeletemu.scheduler.extender.protocol import MAX_EXTENDER_PRIORITY, ExtenderArgs
from kubeletemu.scheduler.framework import UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, NodeInfo
from kubeletemu.scheduler.noderesourcesfit import MAX_NODE_SCORE

EXTENDER = "extender"
DEFAULT_WEIGHT = 10  # docs/extender.md's snippet
DEFAULT_FEED_LATENCY_S = 0.05  # the agent's feed polls its nodes every 50 ms (kubeletemu.feed.hub)


@dataclass(frozen=True)
class ExtenderSettings:
    """The ``extender`` setup's args: the scheduler's ``weight`` for it, the ledger's closing rule and TTL,
    and how long after a node changes its agent's report reaches the extender."""

    weight: int = DEFAULT_WEIGHT
    close_on: str = AgentReport.name
    ttl_s: float = DEFAULT_TTL_S
    feed_latency_s: float = DEFAULT_FEED_LATENCY_S


class FleetExtender:
    """The extender's mirrors, ledger and verbs on the simulated ``clock``, for one run."""

    def __init__(self, settings: ExtenderSettings, clock: Callable[[], float]) -> None:
        self.settings = settings
        self.mirrors = Mirrors(math.inf, clock)
        self.ledger = Ledger(settings.ttl_s, CLOSING_RULES[settings.close_on](), clock)
        self.engine = Engine(self.mirrors, self.ledger)
        self._generations: dict[str, int] = {}

    def report(self, name: str, emulator: NodeEmulator) -> None:
        """The node's agent reports its full state now: a copy of the node, and the pods it refused."""
        generation = self._generations[name] = self._generations.get(name, 0) + 1
        self.mirrors.apply(name, generation, emulator.fork(), refused=tuple(emulator.refused))

    def filter(self, pod: Pod, feasible: list[NodeInfo]) -> tuple[list[NodeInfo], dict[str, NodeStatus]]:
        """``findNodesThatPassExtenders``: the nodes the extender passes, in its order, and the statuses
        of those it fails."""
        result = self.engine.filter(ExtenderArgs(pod, tuple(node.name for node in feasible)))
        by_name = {node.name: node for node in feasible}
        passed = [by_name[name] for name in result.node_names or () if name in by_name]
        failed = {
            name: NodeStatus(UNSCHEDULABLE, (message,), "")
            for name, message in (result.failed_nodes or {}).items()
        }
        for name, message in (result.failed_and_unresolvable_nodes or {}).items():
            failed[name] = NodeStatus(UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), "")
        return passed, failed

    def prioritize(self, pod: Pod, nodes: list[NodeInfo]) -> dict[str, int]:
        """What ``prioritizeNodes`` adds to each node's total: the score × weight × 10."""
        scale = self.settings.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        ranked = self.engine.prioritize(ExtenderArgs(pod, tuple(node.name for node in nodes)))
        return {host.host: host.score * scale for host in ranked}
