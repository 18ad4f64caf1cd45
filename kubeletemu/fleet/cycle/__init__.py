"""kube-scheduler's scheduling cycle (``schedule_one.go``) over the fleet's nodes, exact per version
1.32 – 1.36, and the two exact setups built on it.

- :mod:`.versions`: the versions, where each was read, what differs (the host pick);
- :mod:`.schedule_one`: :class:`Scheduler` (``schedulePod``: ``findNodesThatPassFilters`` with
  ``numFeasibleNodesToFind`` and the rotating ``nextStartNodeIndex``, ``prioritizeNodes``, the pick) and
  its :class:`CycleOutcome` (with the rejecting plugins the scheduling queue needs);
- :mod:`.select`, :mod:`.goheap`: ``selectHost`` and ``sortedNodeScores`` on Go's ``container/heap``;
- :mod:`.batch`: OpportunisticBatching (1.35+): the next kept node for a pod of the same signature;
- :mod:`.diagnosis`: node statuses, ``UnschedulablePlugins``/``PendingPlugins``, the FitError text;
- :mod:`.exact`: ``exact`` and ``exact-numa`` (each node's ``WouldAdmit`` as Filter).

Answers are kept by the pod's shape (:mod:`kubeletemu.scheduler.pod_shape`).
"""

from kubeletemu.fleet.cycle.diagnosis import Diagnosis, NodeStatus, fit_error_message
from kubeletemu.fleet.cycle.exact import (
    EXACT,
    EXACT_NUMA,
    SETUPS,
    ExactNUMAFit,
    ExactScheduler,
    Verdict,
    WouldAdmit,
    exact_profile,
)
from kubeletemu.fleet.cycle.schedule_one import (
    CycleOutcome,
    KeptRejections,
    PluginError,
    Scheduler,
    num_feasible_nodes_to_find,
)
from kubeletemu.fleet.cycle.select import NodeScore, select_host, sorted_node_scores

__all__ = [
    "EXACT",
    "EXACT_NUMA",
    "SETUPS",
    "CycleOutcome",
    "Diagnosis",
    "ExactNUMAFit",
    "ExactScheduler",
    "KeptRejections",
    "NodeScore",
    "NodeStatus",
    "PluginError",
    "Scheduler",
    "Verdict",
    "WouldAdmit",
    "exact_profile",
    "fit_error_message",
    "num_feasible_nodes_to_find",
    "select_host",
    "sorted_node_scores",
]
