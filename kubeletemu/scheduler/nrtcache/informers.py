"""What the plugin's informers hold: the latest published NodeResourceTopology objects and the pods the
API server reports, updated by the caller (a test, the fleet simulator) instead of a watch.

Mirrors the effects the NodeResourceTopologyMatch caches observe at scheduler-plugins commit
903da7df82cb8794dda8f2d510ba1156111662dd:

* ``client.Get``/``List`` on NRTs (controller-runtime, informer-backed): :meth:`InformerStore.nrt`,
  :meth:`InformerStore.nrts`; NRT watch events (``Added``/``Modified``/``Deleted``) go to
  :meth:`InformerStore.add_nrt_handler` subscribers (the ``resyncScope: All`` attribute watcher);
* the pod informers (``podprovider.NewFromHandle``): ``Shared`` is the scheduler's own pod informer, whose
  field selector drops Succeeded and Failed pods; ``Dedicated`` is the cache's unfiltered informer. A pod
  leaving a filtered view is a Delete event carrying its previous state, as the API server's watch sends it;
* the pod lister's relevance filters: Shared keeps Running pods only (``IsPodRelevantShared``), Dedicated
  drops Pending and unbound pods (``IsPodRelevantDedicated``).

Pods are keyed by namespace/name, as the informer's indexer keys them. ``spec.schedulerName`` and
``status.qosClass`` are not fields of :class:`~kubeletemu.pod.Pod`; they ride along with the pod here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from kubeletemu.pod import Pod
from kubeletemu.scheduler.objects import NodeResourceTopology
from kubeletemu.scheduler.pod_phase import is_pod_terminated

DEFAULT_SCHEDULER_NAME = "default-scheduler"


class InformerMode(StrEnum):
    SHARED = "Shared"
    DEDICATED = "Dedicated"


class WatchEvent(StrEnum):
    ADDED = "Added"
    MODIFIED = "Modified"
    DELETED = "Deleted"


@dataclass(frozen=True)
class PodObject:
    """A pod as the API server returns it: the modelled pod plus the two fields it does not carry."""

    pod: Pod
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # status.qosClass as reported (None: compute it from the spec).
    qos_class: str | None = None

    @property
    def key(self) -> str:
        return f"{self.pod.namespace}/{self.pod.name}"

    @property
    def node_name(self) -> str:
        return self.pod.node_name or ""


PodHandler = Callable[[WatchEvent, PodObject], None]
NRTHandler = Callable[[WatchEvent, NodeResourceTopology], None]
PodFilter = Callable[[PodObject], bool]


def is_pod_relevant_always(pod: PodObject) -> bool:
    """``IsPodRelevantAlways`` (upstream tests only)."""
    return True


def is_pod_relevant_shared(pod: PodObject) -> bool:
    """``IsPodRelevantShared``: only Running pods consume resources."""
    return pod.pod.phase == "Running"


def is_pod_relevant_dedicated(pod: PodObject) -> bool:
    """``IsPodRelevantDedicated``: every bound pod that is not Pending, terminal ones included."""
    return pod.pod.phase != "Pending" and pod.node_name != ""


def pod_relevance(mode: InformerMode) -> PodFilter:
    return is_pod_relevant_dedicated if mode is InformerMode.DEDICATED else is_pod_relevant_shared


class PodInformer:
    """One pod informer over the store: its lister view and its event handlers."""

    def __init__(self, store: InformerStore, mode: InformerMode) -> None:
        self._store = store
        self.mode = mode
        self._handlers: list[PodHandler] = []

    def sees(self, pod: PodObject) -> bool:
        return self.mode is InformerMode.DEDICATED or not is_pod_terminated(pod.pod)

    def list(self) -> list[PodObject]:
        """``PodLister.List(labels.Everything())``."""
        return [p for p in self._store.pods() if self.sees(p)]

    def add_event_handler(self, handler: PodHandler) -> None:
        """``AddEventHandler``: the objects already in the informer are delivered as Adds first."""
        self._handlers.append(handler)
        for pod in self.list():
            handler(WatchEvent.ADDED, pod)

    def _changed(self, old: PodObject | None, new: PodObject | None) -> None:
        was = old is not None and self.sees(old)
        now = new is not None and self.sees(new)
        if now and new is not None:
            event = WatchEvent.MODIFIED if was else WatchEvent.ADDED
            for handler in list(self._handlers):
                handler(event, new)
        elif was and old is not None:
            for handler in list(self._handlers):
                handler(WatchEvent.DELETED, old)


class InformerStore:
    """Latest published NRTs (by node name) and the pods the API server holds (by namespace/name)."""

    def __init__(self) -> None:
        self._nrts: dict[str, NodeResourceTopology] = {}
        self._pods: dict[str, PodObject] = {}
        self._nrt_handlers: list[NRTHandler] = []
        self._informers: dict[InformerMode, PodInformer] = {}

    # ---- NodeResourceTopology ------------------------------------------------------------------------

    def update_nrt(self, nrt: NodeResourceTopology) -> None:
        """An exporter publishing (creating or updating) the NRT of ``nrt.name``."""
        event = WatchEvent.MODIFIED if nrt.name in self._nrts else WatchEvent.ADDED
        self._nrts[nrt.name] = nrt
        for handler in list(self._nrt_handlers):
            handler(event, nrt)

    def delete_nrt(self, name: str) -> None:
        nrt = self._nrts.pop(name, None)
        if nrt is not None:
            for handler in list(self._nrt_handlers):
                handler(WatchEvent.DELETED, nrt)

    def nrt(self, name: str) -> NodeResourceTopology | None:
        """``client.Get``: None stands for the NotFound error."""
        return self._nrts.get(name)

    def nrts(self) -> list[NodeResourceTopology]:
        """``client.List``, in name order as the API server lists."""
        return [self._nrts[name] for name in sorted(self._nrts)]

    def add_nrt_handler(self, handler: NRTHandler) -> None:
        """A watch on NRTs: as with an unversioned watch, existing objects come first as Added."""
        self._nrt_handlers.append(handler)
        for nrt in self.nrts():
            handler(WatchEvent.ADDED, nrt)

    # ---- pods ----------------------------------------------------------------------------------------

    def add_pod(
        self, pod: Pod, *, scheduler_name: str = DEFAULT_SCHEDULER_NAME, qos_class: str | None = None
    ) -> None:
        """Create or update (same namespace/name) a pod: binding sets ``node_name``, the kubelet the phase."""
        new = PodObject(pod, scheduler_name, qos_class)
        old = self._pods.get(new.key)
        self._pods[new.key] = new
        self._notify(old, new)

    update_pod = add_pod

    def remove_pod(self, namespace: str, name: str) -> None:
        old = self._pods.pop(f"{namespace}/{name}", None)
        if old is not None:
            self._notify(old, None)

    def pods(self) -> list[PodObject]:
        return list(self._pods.values())

    def pods_on(self, node_name: str) -> Iterator[PodObject]:
        return (p for p in self._pods.values() if p.node_name == node_name)

    def pod_informer(self, mode: InformerMode) -> PodInformer:
        """The Shared or Dedicated pod informer (one of each per store, as per scheduler process)."""
        informer = self._informers.get(mode)
        if informer is None:
            informer = self._informers[mode] = PodInformer(self, mode)
        return informer

    def _notify(self, old: PodObject | None, new: PodObject | None) -> None:
        for informer in self._informers.values():
            informer._changed(old, new)
