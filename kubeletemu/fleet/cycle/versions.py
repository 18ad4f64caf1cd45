"""What differs in the scheduling cycle between the kube-scheduler versions the fleet emulates.

Read from ``pkg/scheduler/schedule_one.go`` (and ``framework/runtime/framework.go``'s ``RunFilterPlugins``
/ ``RunScorePlugins``, ``framework/types.go``'s ``Diagnosis.AddPluginStatus``) as openshift/kubernetes
vendors them in openshift/microshift's release branches (no OpenShift carry touches these files):

======== ========= =====================================================
version  tag       read at
======== ========= =====================================================
1.32     v1.32.13  release-4.19 @ d4b43f374a5bc0e0f44c07ff773061e27c7f2a08
1.33     v1.33.13  release-4.20 @ 78a395343031f8800b7139df070665e03b42f934
1.34     v1.34.9   release-4.21 @ 473c3de15d9aeeb399aa95250672c07655554015
1.35     v1.35.6   release-4.22 @ 5019821e0eb2f9a74e00e2aab215144336c4b981
1.36     v1.36.3   release-4.23 @ ab25d11482f8984db7b860ed44c6955f231cf18f
======== ========= =====================================================

``findNodesThatPassFilters``, ``numFeasibleNodesToFind``, the ``nextStartNodeIndex`` rotation,
``RunFilterPlugins``, ``RunScorePlugins`` and ``AddPluginStatus`` are the same in all five (types and
logging aside). One thing differs: how the host is picked among the scored nodes.

* 1.32 – 1.34: ``selectHost`` (:func:`.select.select_host`) — a max-heap of the scores, and reservoir
  sampling (``rand.Intn``) among the nodes sharing the top score.
* 1.35 – 1.36: KEP-5598 (kubernetes#135231, "Opportunistic Batching") replaced it by ``sortedNodeScores``
  (:func:`.select.sorted_node_scores`): the same heap, ordered by score then a per-node ``Randomizer``;
  as shipped, ``prioritizeNodes`` sets the ``Randomizer`` only for nodes an extender scored, so without
  extenders every ``Randomizer`` is 0 and the heap's own order breaks ties — nothing random is drawn
  (kubernetes#141024, open, proposes setting it for every node). A real scheduler still varies because its
  16 filter goroutines append feasible nodes in no fixed order; this cycle is the sequential one
  (``parallelism: 1``), so from 1.35 its pick is deterministic, as the shipped code is then.
* 1.35 – 1.36: OpportunisticBatching (KEP-5598, the ``OpportunisticBatching`` gate: beta, on by default
  from 1.35 in ``pkg/features/kube_features.go``): :mod:`.batch`.
"""

from __future__ import annotations

from kubeletemu.fleet.queue.versions import DEFAULT_VERSION, SUPPORTED, check_version

__all__ = [
    "DEFAULT_VERSION",
    "SOURCES",
    "SUPPORTED",
    "check_version",
    "opportunistic_batching",
    "reservoir_sampling",
]

SOURCES: dict[str, str] = {
    "1.32": "v1.32.13: openshift/microshift release-4.19 @ d4b43f374a5bc0e0f44c07ff773061e27c7f2a08",
    "1.33": "v1.33.13: openshift/microshift release-4.20 @ 78a395343031f8800b7139df070665e03b42f934",
    "1.34": "v1.34.9: openshift/microshift release-4.21 @ 473c3de15d9aeeb399aa95250672c07655554015",
    "1.35": "v1.35.6: openshift/microshift release-4.22 @ 5019821e0eb2f9a74e00e2aab215144336c4b981",
    "1.36": "v1.36.3: openshift/microshift release-4.23 @ ab25d11482f8984db7b860ed44c6955f231cf18f",
}
# The first version whose schedulePod pops sortedNodeScores instead of calling selectHost.
SORTED_NODE_SCORES_SINCE = "1.35"


def opportunistic_batching(version: str) -> bool:
    """Whether ``version`` runs KEP-5598's OpportunisticBatching (beta and on by default from 1.35)."""
    check_version(version)
    return SUPPORTED.index(version) >= SUPPORTED.index(SORTED_NODE_SCORES_SINCE)


def reservoir_sampling(version: str) -> bool:
    """Whether ``version`` picks the host with ``selectHost``'s reservoir sampling (before 1.35)."""
    check_version(version)
    return SUPPORTED.index(version) < SUPPORTED.index(SORTED_NODE_SCORES_SINCE)
