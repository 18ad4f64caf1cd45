"""KEP-5598's OpportunisticBatching (``framework/runtime/batch.go``, kubernetes#135231; beta and on by
default in kube-scheduler 1.35 and 1.36, read at v1.35.6 and v1.36.3): a scheduling cycle keeps the scored
nodes it did not pick, and the next cycle, for a pod of the same signature, may take the next of them
without filtering and scoring every node.

As shipped (``GetNodeHint``, ``StoreScheduleResults``, ``batchStateCompatible``): a hint is given only when
a state is kept, this cycle directly follows the one that stored it (``cycleCount == last + 1``) and that
one succeeded, the pod's signature equals the state's, the state is younger than 500 ms, and the node the
last pod went to now rejects this pod (so the kept order is still the order a full cycle would find). The
hint is popped from the kept heap; ``schedulePod`` then filters that node alone (``evaluateNominatedNode``)
and, if it passes, takes it — no scoring, and ``nextStartNodeIndex`` does not move. Storing: a used hint
keeps the state as it is; otherwise the heap left after popping the host replaces it (or clears it when
there is none, as after a single feasible node).

What stands for what here: the pod's signature is its shape
(:func:`~kubeletemu.scheduler.pod_shape.pod_shape`; upstream signs what each plugin reads, of which the
shape holds at least as much), the 500 ms are simulated time (the
scheduler idles in simulated time between cycles as a real one does in wall time), and a profile batches
only when every model is one whose in-tree plugin implements ``SignPlugin`` (:data:`SIGNING_MODELS`): a
plugin that does not — scheduler-plugins' NodeResourceTopologyMatch, Koordinator's, the fleet's
``WouldAdmit`` — turns signatures off for the profile (``computeBatchablePlugins``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from kubeletemu.fleet.cycle.diagnosis import NodeStatus
from kubeletemu.fleet.cycle.select import NodeScore, pop_best
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.noderesourcesfit import NodeResourcesBalancedAllocation, NodeResourcesFit

MAX_BATCH_AGE_S = 0.5  # batch.go's maxBatchAge
# Models of in-tree plugins that implement SignPlugin (every in-tree Filter/Score plugin does in 1.35).
SIGNING_MODELS: tuple[type, ...] = (NodeResourcesFit, NodeResourcesBalancedAllocation)


@dataclass
class _State:
    signature: Hashable
    sorted_nodes: list[NodeScore]  # a sortedNodeScores heap
    created: float


class OpportunisticBatch:
    """One profile's batching state across its cycles."""

    def __init__(self) -> None:
        self.state: _State | None = None
        self.last_cycle = 0
        self.last_chosen = ""
        self.last_succeeded = False
        self.batched = 0  # pods placed on a hint (batch.go's batchedPods)

    def node_hint(
        self,
        signature: Hashable,
        cycle: int,
        now: float,
        nodes: Sequence[NodeInfo],
        filter_node: Callable[[NodeInfo], NodeStatus],
    ) -> NodeInfo | None:
        """``GetNodeHint``: the next kept node, or None (``filter_node`` runs the profile's filters)."""
        state = self.state
        if state is None or not state.sorted_nodes:
            return None
        if cycle != self.last_cycle + 1 or not self.last_succeeded:
            return None
        if signature != state.signature or now > state.created + MAX_BATCH_AGE_S:
            return None
        by_name = {node.name: node for node in nodes}
        last = by_name.get(self.last_chosen)
        if last is None or not filter_node(last).rejected:
            return None
        hint = pop_best(state.sorted_nodes)
        # The kept heap names a node the snapshot no longer has: the nominated evaluation fails (Get errs).
        return by_name.get(hint.name)

    def store(
        self,
        signature: Hashable,
        hinted: str,
        chosen: str,
        others: list[NodeScore] | None,
        cycle: int,
        now: float,
    ) -> None:
        """``StoreScheduleResults`` after a successful ``schedulePod``."""
        self.last_cycle, self.last_chosen, self.last_succeeded = cycle, chosen, True
        if hinted == chosen:
            self.batched += 1
            return
        self.state = _State(signature, others, now) if others else None
