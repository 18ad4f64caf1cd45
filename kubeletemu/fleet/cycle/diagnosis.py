"""What a scheduling cycle found out about the nodes it did not pick: each rejected node's status with
the plugin that rejected it, and the plugins the scheduling queue must hear from before it retries the pod
(``framework.Diagnosis``, ``Diagnosis.AddPluginStatus`` and ``FitError.Error`` of ``framework/types.go``,
identical in kube-scheduler 1.32 – 1.36)."""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from kubeletemu.scheduler.framework import UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE

# framework.Code values beyond the ones the models return.
PENDING = "Pending"
REJECTED = frozenset({UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, PENDING})
# NoNodeAvailableMsg, and schedule_one.go's ErrNoNodesAvailable.
NO_NODE_AVAILABLE = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
_REASONS = operator.attrgetter("reasons")


@dataclass(frozen=True)
class NodeStatus:
    """A node's Filter status as ``RunFilterPlugins`` returns it: the code, the reasons, and the plugin
    that returned it (``status.SetPlugin``)."""

    code: str
    reasons: tuple[str, ...]
    plugin: str

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @property
    def rejected(self) -> bool:
        """``Status.IsRejected``: Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in REJECTED


@dataclass
class Diagnosis:
    node_to_status: dict[str, NodeStatus] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)

    def add(self, node: str, status: NodeStatus) -> None:
        """``NodeToStatus.Set`` and ``AddPluginStatus``: a rejecting plugin joins
        ``UnschedulablePlugins``; one that answered Pending also joins ``PendingPlugins``."""
        self.node_to_status[node] = status
        if not status.plugin:
            return
        if status.rejected:
            self.unschedulable_plugins.add(status.plugin)
        if status.code == PENDING:
            self.pending_plugins.add(status.plugin)


def fit_error_message(num_all_nodes: int, statuses: Mapping[str, NodeStatus]) -> str:
    """``FitError.Error`` without PreFilter and PostFilter messages: ``0/N nodes are available:`` and the
    sorted histogram of the rejected nodes' reasons (the nodes never examined carry the absent-node
    status, which has no reason)."""
    counts = Counter(itertools.chain.from_iterable(map(_REASONS, statuses.values())))
    message = NO_NODE_AVAILABLE.format(num_all_nodes) + ":"
    histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
    if histogram:
        message += f" {', '.join(histogram)}."
    return message
