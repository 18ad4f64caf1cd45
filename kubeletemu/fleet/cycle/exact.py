"""The two exact setups: schedulers whose Filter is each node's own kubelet admission (``WouldAdmit``), so
no pod they bind is ever rejected by the node. Together they bound what any NUMA predictor can reach.

* ``exact``: filters ``NodeResourcesFit`` then ``WouldAdmit``, the default scheduler's scores
  (``NodeResourcesFit`` LeastAllocated and ``NodeResourcesBalancedAllocation``, weight 1 each) — the
  exact filter with NUMA-blind scores.
* ``exact-numa``: the same filters, and one score computed on the exact node state,
  :class:`ExactNUMAFit`: the fewest NUMA nodes the kubelet would place the pod on, then the tightest fit.

Both run the real cycle (:class:`.schedule_one.Scheduler`): nodes from the rotating start until
``numFeasibleNodesToFind`` pass, ``selectHost`` among the top scores. ``NodeResourcesFit`` comes first so
``WouldAdmit`` is asked only of nodes the node-level fit passes (the first rejection decides, as
``RunFilterPlugins``). A node's answer is kept per pod shape until the node changes
(``NodeEmulator.state_version``), so a cycle asks the kubelet only of nodes changed since the last pod of
the same shape; the kept answer is the one the node gives (``tests/fleet/test_cycle_exact.py`` proves
runs with and without it identical).

**Assumed pods.** kube-scheduler's cache counts a pod from its assume on (``AssumePod`` in
``pkg/scheduler/backend/cache/cache.go``, kubernetes v1.36.3) until the informer confirms it, or
``ForgetPod`` drops it when its binding cycle fails; the kubelet admits it only when its watch delivers
the Binding. With ``count_assumed`` (the default), ``WouldAdmit`` answers on the node as the kubelet will
hold it: a fork of the node (``NodeEmulator.fork``) that has admitted the assumed, not yet admitted pods
in assume order. Without it the exact filter forgets in-flight pods, as a predictor reading only what
nodes report would.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from kubeletemu.emulator import NodeEmulator
from kubeletemu.fleet.cycle import versions
from kubeletemu.fleet.cycle.schedule_one import Scheduler
from kubeletemu.scheduler.exact import ExactNUMAFit, Verdict, WouldAdmit
from kubeletemu.scheduler.noderesourcesfit import NodeResourcesFit
from kubeletemu.scheduler.profile import Profile, default_profile

EXACT = "exact"
EXACT_NUMA = "exact-numa"
SETUPS = (EXACT, EXACT_NUMA)
# Re-exported: the node answers live in kubeletemu.scheduler.exact, shared with the extender.
__all__ = [
    "EXACT",
    "EXACT_NUMA",
    "SETUPS",
    "ExactNUMAFit",
    "ExactScheduler",
    "Verdict",
    "WouldAdmit",
    "exact_profile",
]


def exact_profile(would_admit: WouldAdmit, *, numa: bool = False) -> Profile:
    """``exact`` (``numa=False``) or ``exact-numa``'s profile around ``would_admit``."""
    if numa:
        return Profile(EXACT_NUMA, (NodeResourcesFit(), would_admit), ((ExactNUMAFit(would_admit), 1),))
    default = default_profile()
    return Profile(EXACT, (*default.filters, would_admit), default.scores)


class ExactScheduler(Scheduler):
    """The cycle with :func:`exact_profile`: ``numa`` picks ``exact-numa``."""

    def __init__(
        self,
        emulators: Mapping[str, NodeEmulator],
        percentage_of_nodes_to_score: int = 0,
        *,
        numa: bool = False,
        version: str = versions.DEFAULT_VERSION,
        rng: random.Random | None = None,
        memo: bool = True,
        count_assumed: bool = True,
        order_rng: random.Random | None = None,
    ) -> None:
        self.would_admit = WouldAdmit(emulators, memo=memo, count_assumed=count_assumed)
        super().__init__(
            exact_profile(self.would_admit, numa=numa),
            percentage_of_nodes_to_score,
            version=version,
            rng=rng,
            memo=memo,
            order_rng=order_rng,
        )
