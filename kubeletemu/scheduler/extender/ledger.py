"""The ledger of in-flight placements: pods the scheduler has (very likely) placed on a node that the node's
agent has not reported yet. kube-scheduler asks about the next pod before the last one is bound and never
tells an extender of an Unreserve, so without the ledger two pods in a row could both be given the last
NUMA node that fits. Every Filter, Prioritize and Preempt counts the open entries: the node is asked as a
fork that has admitted them (:class:`kubeletemu.scheduler.exact.WouldAdmit`'s assumed pods).

**What opens an entry** (one per pod UID; a later one replaces it):

* Prioritize: the node it ranks first (the first in request order among the top scores). With the
  extender's ``weight`` dominating the score plugins, that is the node the scheduler picks; it is the only
  placement an extender learns before the scheduler's next cycle, since Bind (when this extender binds at
  all) comes in the binding cycle, which runs beside the next pods' scheduling cycles.
* Filter, when exactly one node passes: the scheduler then takes it without scoring, and Prioritize is not
  called (``schedulePod`` in ``schedule_one.go``).
* Bind, when enabled: the node the pod was really bound to (the entry moves there).

A Filter for a pod that has an entry closes it first: the scheduler asks again only when the last attempt
did not end in a binding.

**What closes it** is pluggable (:class:`ClosingRule`), to measure each way:

* :class:`AgentReport` (the default): a mirror applied whose node holds the pod, or reports it refused;
* :class:`TTLOnly`: nothing but the TTL (what an extender blind to the agents' reports would do);
* and always the TTL (``ttl`` seconds after opening): a pod bound elsewhere than predicted, or never bound,
  stops counting then.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kubeletemu.pod import Pod
from kubeletemu.scheduler.extender.mirrors import Mirror

DEFAULT_TTL_S = 60.0

OPENED_BY_PRIORITIZE = "prioritize"
OPENED_BY_FILTER = "filter"
OPENED_BY_BIND = "bind"

CLOSED_BY_AGENT = "agent"
CLOSED_BY_TTL = "ttl"
CLOSED_BY_REFILTER = "refilter"
CLOSED_BY_BIND_ERROR = "bind-error"
CLOSE_REASONS = (CLOSED_BY_AGENT, CLOSED_BY_TTL, CLOSED_BY_REFILTER, CLOSED_BY_BIND_ERROR)


@dataclass(frozen=True)
class Entry:
    """One in-flight placement: the pod, the node, when and by what it was opened."""

    pod: Pod
    node: str
    opened: float
    opened_by: str


class ClosingRule(Protocol):
    """When an agent's report closes an entry (the TTL closes every entry regardless)."""

    name: str

    def closes(self, entry: Entry, mirror: Mirror) -> bool: ...


class AgentReport:
    """Closed by the first mirror, of any node, that holds the pod or reports it refused: the pod is then
    counted by its node's own state (or nowhere)."""

    name = "agent-report"

    def closes(self, entry: Entry, mirror: Mirror) -> bool:
        return mirror.reported(entry.pod.uid)


class TTLOnly:
    """Never closed by a report, only by the TTL (a pod the node already holds is not counted twice: the
    fork skips it)."""

    name = "ttl"

    def closes(self, entry: Entry, mirror: Mirror) -> bool:
        return False


CLOSING_RULES: dict[str, Callable[[], ClosingRule]] = {AgentReport.name: AgentReport, TTLOnly.name: TTLOnly}


@dataclass
class Ledger:
    """The open entries, by pod UID and by node (``by_node``: the assumed pods the exact filter reads)."""

    ttl: float = DEFAULT_TTL_S
    rule: ClosingRule = field(default_factory=AgentReport)
    clock: Callable[[], float] = time.monotonic
    entries: dict[str, Entry] = field(default_factory=dict)
    by_node: dict[str, dict[str, Pod]] = field(default_factory=dict)
    closed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLOSE_REASONS, 0))

    def __len__(self) -> int:
        return len(self.entries)

    def open(self, pod: Pod, node: str, opened_by: str) -> None:
        """The pod is (about to be) placed on ``node``: it counts there from now on."""
        self._drop(pod.uid)
        self.entries[pod.uid] = Entry(pod, node, self.clock(), opened_by)
        self.by_node.setdefault(node, {})[pod.uid] = pod

    def entry(self, uid: str) -> Entry | None:
        return self.entries.get(uid)

    def close(self, uid: str, reason: str) -> bool:
        """Close the pod's entry, counting ``reason``; False when it had none."""
        if not self._drop(uid):
            return False
        self.closed[reason] = self.closed.get(reason, 0) + 1
        return True

    def expire(self) -> int:
        """Close the entries older than the TTL; how many."""
        deadline = self.clock() - self.ttl
        old = [uid for uid, e in self.entries.items() if e.opened <= deadline]
        for uid in old:
            self.close(uid, CLOSED_BY_TTL)
        return len(old)

    def mirror_applied(self, mirror: Mirror) -> None:
        """A node's agent reported: close what the rule says its report settles (a mirror listener)."""
        done = [uid for uid, e in self.entries.items() if self.rule.closes(e, mirror)]
        for uid in done:
            self.close(uid, CLOSED_BY_AGENT)

    def _drop(self, uid: str) -> bool:
        entry = self.entries.pop(uid, None)
        if entry is None:
            return False
        pods = self.by_node.get(entry.node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self.by_node[entry.node]
        return True
