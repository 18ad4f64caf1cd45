"""The ``overreserve`` cache (scheduler-plugins ``pkg/noderesourcetopology/cache/overreserve.go`` at commit
903da7df82cb8794dda8f2d510ba1156111662dd), the reserve-cache design as shipped.

* Built from the NRTs listed at start-up; that copy changes only when a resync flushes a node. A node
  whose NRT first appears later is never added (Reserve, foreign pods and config changes ignore nodes the
  copy lacks, and Filter only reports nodes it had an NRT for), so it reads "fresh, no NRT": Filter lets
  every pod through there.
* Reserve records the pod's effective request for a node the copy holds; every lookup subtracts all
  recorded requests from every zone (:mod:`.assumed`). Unreserve drops the record; PostBind does nothing,
  so a bound pod stays charged until its node is flushed.
* A node turns dirty when Filter rejects a pod there (``NodeMaybeOverReserved``, not at Reserve) or a
  foreign pod lands on it; a node with foreign pods reads "not fresh" until flushed.
* A resync (every ``cacheResyncPeriodSeconds``, driven here by :meth:`OverReserve.tick`) fetches the latest
  published NRT of each dirty node and flushes the node - new copy, no assumed resources, clean - only
  when the NRT's pod fingerprint (:mod:`.podsets`) matches the relevant pods the pod lister places on the
  node. A dirty node with no relevant pod at all is skipped ("cannot find any pod for node"), however its
  NRT is signed. With ``resyncScope`` All, nodes whose Topology Manager configuration changed are flushed
  without a fingerprint check. The generation grows by one per resync that flushed anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.pod import Pod
from kubeletemu.podresources import fingerprint as pfp
from kubeletemu.scheduler.nrtcache.assumed import ResourceStore
from kubeletemu.scheduler.nrtcache.attrwatch import AttrWatcher
from kubeletemu.scheduler.nrtcache.informers import (
    InformerStore,
    PodFilter,
    PodInformer,
    WatchEvent,
    is_pod_relevant_shared,
)
from kubeletemu.scheduler.nrtcache.interface import Cache, CachedNRTInfo
from kubeletemu.scheduler.nrtcache.nrtstore import NRTResourcesStore, NRTStore
from kubeletemu.scheduler.nrtcache.podsets import (
    PREEMPTION_DISABLED,
    RESYNC_AUTODETECT,
    check_pod_fingerprint_for_node,
    make_node_to_pod_data_map,
    pod_fingerprint_for_node_topology,
)
from kubeletemu.scheduler.nrtmatch.args import NodeResourceTopologyCache
from kubeletemu.scheduler.objects import NodeResourceTopology

RESYNC_SCOPE_ALL = "All"


def get_cache_resync_method(config: NodeResourceTopologyCache | None) -> str:
    """``getCacheResyncMethod``: Autodetect when unset."""
    if config is not None and config.resync_method is not None:
        return config.resync_method
    return RESYNC_AUTODETECT


def get_cache_resync_scope(config: NodeResourceTopologyCache | None) -> str:
    """``getCacheResyncScope``: All when unset."""
    if config is not None and config.resync_scope is not None:
        return config.resync_scope
    return RESYNC_SCOPE_ALL


@dataclass(frozen=True)
class DesyncedNodes:
    """``DesyncedNodes``: dirty nodes (discarded or with foreign pods) and config-changed nodes."""

    generation: int
    maybe_over_reserved: tuple[str, ...] = ()
    config_changed: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.maybe_over_reserved) + len(self.config_changed)

    @property
    def dirty_count(self) -> int:
        return len(self.maybe_over_reserved)


@dataclass(frozen=True)
class NRTUpdate:
    nrt: NodeResourceTopology


@dataclass
class ResyncOutcome:
    """Why each dirty node was or was not flushed by one resync (upstream logs these)."""

    flushed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


class OverReserve(Cache):
    kind = "overreserve"

    def __init__(
        self,
        client: InformerStore | None,
        pod_lister: PodInformer | None,
        config: NodeResourceTopologyCache | None = None,
        *,
        is_pod_relevant: PodFilter = is_pod_relevant_shared,
        preemption_mode: str = PREEMPTION_DISABLED,
    ) -> None:
        """``NewOverReserve``: ``client`` is where NRTs are listed and fetched, ``pod_lister`` the pod
        informer whose pods a resync fingerprints."""
        if client is None or pod_lister is None:
            raise ValueError("received nil references")
        self.client = client
        self.pod_lister = pod_lister
        self.is_pod_relevant = is_pod_relevant
        self.preemption_mode = preemption_mode
        self.resync_method = get_cache_resync_method(config)
        self.resync_scope = get_cache_resync_scope(config)
        self.generation = 0
        listed = client.nrts()
        self.nrts = NRTStore(listed)
        self.nrt_res_names = NRTResourcesStore(listed)
        self.assumed_resources: dict[str, ResourceStore] = {}
        # node -> how many times marked; insertion-ordered where upstream's maps are not.
        self._maybe_overreserved: dict[str, int] = {}
        # Marks of a whole tuple of nodes repeated (a kept scheduling cycle replayed), counted, not applied:
        # id(names) -> [names, repeats].
        self._repeated_marks: dict[int, list[Any]] = {}
        self.nodes_with_foreign_pods: dict[str, int] = {}
        self.nodes_with_attr_update: dict[str, int] = {}
        self.last_resync: ResyncOutcome | None = None
        self._period: float | None = None
        self._next_resync = 0.0
        if self.resync_scope == RESYNC_SCOPE_ALL:
            self._watcher = AttrWatcher(self.nrts, self.nodes_with_attr_update)
            client.add_nrt_handler(self._on_nrt_event)

    def _on_nrt_event(self, event: WatchEvent, nrt: NodeResourceTopology) -> None:
        self._watcher.process_event(event, nrt)

    # ---- cache.Interface ---------------------------------------------------------------------------

    def get_cached_nrt_copy(
        self, node_name: str, pod: Pod
    ) -> tuple[NodeResourceTopology | None, CachedNRTInfo]:
        if node_name in self.nodes_with_foreign_pods:
            return None, CachedNRTInfo(self.generation, fresh=False)
        info = CachedNRTInfo(self.generation, fresh=True)
        nrt = self.nrts.get(node_name)
        if nrt is None:
            return None, info
        assumed = self.assumed_resources.get(node_name)
        return (nrt if assumed is None else assumed.update_nrt(nrt)), info

    def node_maybe_over_reserved(self, node_name: str, pod: Pod) -> None:
        # Unlike Reserve, no check that the node has an NRT: any name can turn dirty.
        marks = self._maybe_overreserved
        marks[node_name] = marks.get(node_name, 0) + 1

    def each_node_maybe_over_reserved(self, node_names: Iterable[str], pod: Pod) -> None:
        # node_maybe_over_reserved for each name, inline: a cycle gives hundreds at once.
        marks = self._maybe_overreserved
        for name in node_names:
            marks[name] = marks.get(name, 0) + 1

    def nodes_maybe_over_reserved(self, node_names: tuple[str, ...], pod: Pod, times: int = 1) -> None:
        """``NodeMaybeOverReserved`` for each name in turn, as a replayed scheduling cycle calls it; the
        whole ``times`` times.

        After a tuple's first marking each of its names is a key until a flush, so a repeat changes no key
        and no order, only counts: repeats are counted and added when the marks are read or flushed."""
        repeated = self._repeated_marks.get(id(node_names))
        if repeated is not None and repeated[0] is node_names:
            repeated[1] += times
            return
        self.each_node_maybe_over_reserved(node_names, pod)
        self._repeated_marks[id(node_names)] = [node_names, times - 1]

    @property
    def nodes_maybe_overreserved(self) -> dict[str, int]:
        """node -> how many times marked (``nodesMaybeOverreserved``), repeats included."""
        marks = self._maybe_overreserved
        for names, repeats in self._repeated_marks.values():
            for name in names if repeats else ():
                marks[name] = marks.get(name, 0) + repeats
        self._repeated_marks.clear()
        return marks

    def node_has_foreign_pods(self, node_name: str, pod: Pod) -> None:
        if not self.nrts.contains(node_name):
            return
        self.nodes_with_foreign_pods[node_name] = self.nodes_with_foreign_pods.get(node_name, 0) + 1

    def reserve_node_resources(self, node_name: str, pod: Pod) -> None:
        if not self.nrts.contains(node_name):
            return
        self.assumed_resources.setdefault(node_name, ResourceStore()).add_pod(pod)

    def unreserve_node_resources(self, node_name: str, pod: Pod) -> None:
        store = self.assumed_resources.get(node_name)
        if store is not None:
            store.delete_pod(pod)

    # post_bind: the inherited no-op, as upstream.

    def nrt_resource_names(self, node_name: str) -> frozenset[str] | None:
        return self.nrt_res_names.get(node_name)

    # ---- resync ------------------------------------------------------------------------------------

    def get_desynced_nodes(self) -> DesyncedNodes:
        """``GetDesyncedNodes``: nodes with foreign pods, then discarded ones (each once)."""
        dirty = dict.fromkeys(self.nodes_with_foreign_pods)
        dirty.update(dict.fromkeys(self.nodes_maybe_overreserved))
        return DesyncedNodes(self.generation, tuple(dirty), tuple(self.nodes_with_attr_update))

    def make_nrt_updates_for_nodes(self, nodes: DesyncedNodes) -> list[NRTUpdate]:
        """``MakeNRTUpdatesForNodes``: the latest NRT of each dirty node whose fingerprint checks out, then
        of each config-changed node."""
        outcome = ResyncOutcome()
        self.last_resync = outcome
        updates: list[NRTUpdate] = []
        by_node = make_node_to_pod_data_map(
            self.pod_lister.list(), self.is_pod_relevant, self.nrt_res_names.get, self.preemption_mode
        )
        for node_name in nodes.maybe_over_reserved:
            candidate = self.client.nrt(node_name)
            if candidate is None:
                outcome.skipped[node_name] = "failed to get NodeTopology"
                continue
            objs = by_node.get(node_name)
            if objs is None:
                outcome.skipped[node_name] = "cannot find any pod for node"
                continue
            expected, only_exclusive = pod_fingerprint_for_node_topology(candidate, self.resync_method)
            if expected == "":
                outcome.skipped[node_name] = "missing NodeTopology podset fingerprint data"
                continue
            err = check_pod_fingerprint_for_node(objs, expected, only_exclusive)
            if isinstance(err, pfp.FingerprintMismatchError):
                outcome.skipped[node_name] = "NodeTopology podset fingerprint mismatch"
                continue
            if err is not None:
                outcome.skipped[node_name] = f"checking NodeTopology podset fingerprint: {err}"
                continue
            updates.append(NRTUpdate(candidate))
        for node_name in nodes.config_changed:
            candidate = self.client.nrt(node_name)
            if candidate is None:
                outcome.skipped[node_name] = "failed to get NodeTopology"
                continue
            updates.append(NRTUpdate(candidate))
        return updates

    def flush_nodes(self, *updates: NRTUpdate) -> int:
        """``FlushNodes``: replace the copies, forget assumed resources and marks; the generation grows
        once if anything was flushed."""
        if not updates:
            return self.generation
        for update in updates:
            name = update.nrt.name
            self.nrts.update(update.nrt)
            self.nrt_res_names.update(update.nrt)
            self.assumed_resources.pop(name, None)
            self.nodes_maybe_overreserved.pop(name, None)
            self.nodes_with_foreign_pods.pop(name, None)
            self.nodes_with_attr_update.pop(name, None)
            if self.last_resync is not None and name not in self.last_resync.flushed:
                self.last_resync.flushed.append(name)
        self.generation += 1
        return self.generation

    def resync(self) -> None:
        """``Resync``: one step of the resync loop."""
        nodes = self.get_desynced_nodes()
        if len(nodes) == 0:
            self.last_resync = ResyncOutcome()
            return
        self.flush_nodes(*self.make_nrt_updates_for_nodes(nodes))

    def test_only_update_nrt(self, nrt: NodeResourceTopology) -> None:
        """``TestOnlyUpdateNRT``: put an NRT into the cache's copy (resource names untouched)."""
        self.nrts.update(nrt)

    # ---- the resync loop on a simulated clock ------------------------------------------------------

    def start_resync_loop(self, period_seconds: float, now: float) -> None:
        """``wait.Forever(Resync, period)``: a resync now, then one every period (the work takes no
        simulated time, so the runs stay on the grid ``now + k * period``)."""
        if period_seconds <= 0:
            raise ValueError(f"resync period must be positive, got {period_seconds}")
        self._period = float(period_seconds)
        self._next_resync = now
        self.tick(now)

    def tick(self, now: float) -> bool:
        """Run the resync if one fell due by ``now``; call it before applying the events of ``now``.
        Several missed periods make one run: with nothing changing between them, the runs after the first
        would find what the first left."""
        if self._period is None or now < self._next_resync:
            return False
        self.resync()
        missed = math.floor((now - self._next_resync) / self._period)
        self._next_resync += (missed + 1) * self._period
        return True

    @property
    def next_resync(self) -> float | None:
        """When the next resync falls due (None without a loop)."""
        return self._next_resync if self._period is not None else None
