"""One watch of the pods (and one of the Nodes) for every node of the process: shared informers, as
multi-node emulators keep them.

A kubelet lists and watches its own pods (``fieldSelector spec.nodeName=<node>``, ``pkg/kubelet/config/
apiserver.go`` at v1.37.2). A thousand nodes in one process doing the same hold a thousand watches, each a
long-running request the API server serves and a stream this process reads. kwok's pod controller instead
lists and watches every bound pod once (``podFieldSelector``, ``spec.nodeName!=``) and keeps the pods of the
nodes it has (``nodeHasFunc``; ``pkg/kwok/controllers/pod_controller.go``). So does this module:

- one list (paged) and one watch from its resourceVersion, with bookmarks; each watch ended by the server
  after client-go's random 5 to 10 minutes and resumed from the last version seen;
- ``410 Gone`` (the version was compacted away) lists again at once; an unreachable API server or any other
  failure lists again after the lease controller's backoff;
- the pods of this process's nodes are kept by node, so a node that joins later (start-up is bounded, see
  :mod:`.run`) starts from the pods already bound to it;
- each node sees what its own watch would show: :meth:`PodHandler.sync` with its pods after every list,
  then :meth:`~PodHandler.changed` and :meth:`~PodHandler.deleted` for each event about a pod bound to it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import structlog

from kubeletemu.nodes.api import ApiError, ApiServer, Unreachable

JSON = dict[str, Any]
log = structlog.get_logger("kubeletemu.nodes")

PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"
# Pods bound to a node (kwok's podFieldSelector): pods still waiting for the scheduler are none of ours.
BOUND = {"fieldSelector": "spec.nodeName!="}
# client-go's reflector ends each watch after a random 5 to 10 minutes (minWatchTimeout 5 min).
WATCH_TIMEOUT_S = (300, 600)
# The lease controller's retry backoff (component-helpers apimachinery/lease: 200 ms doubling, at most 7 s).
BACKOFF_FIRST_S = 0.2
BACKOFF_MAX_S = 7.0


class Backoff:
    def __init__(self) -> None:
        self.delay = BACKOFF_FIRST_S

    def next(self) -> float:
        current = self.delay
        self.delay = min(self.delay * 2, BACKOFF_MAX_S)
        return current

    def reset(self) -> None:
        self.delay = BACKOFF_FIRST_S


class PodHandler(Protocol):
    """A node's side of the informer (:class:`kubeletemu.nodes.member.NodeMember`)."""

    name: str

    def sync(self, items: list[JSON], *, after_gap: bool) -> None: ...

    def changed(self, raw: JSON) -> None: ...

    def deleted(self, raw: JSON) -> None: ...


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = raw.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def node_of(raw: Mapping[str, Any]) -> str:
    spec = raw.get("spec")
    return str(spec.get("nodeName") or "") if isinstance(spec, Mapping) else ""


class SharedInformer:
    """The objects of ``path`` that belong to one of ``nodes`` (``_owner``), listed and watched once and kept
    by node; :meth:`run` until cancelled."""

    path = ""
    params: Mapping[str, str] = {}

    def __init__(self, api: ApiServer, nodes: Iterable[str]) -> None:
        self.api = api
        self._objects: dict[str, dict[str, JSON]] = {name: {} for name in nodes}  # node -> uid -> object
        self.synced = asyncio.Event()  # the first list is in
        self.lists = 0  # lists made (the first, then one after each gap or 410)
        self.watches = 0  # watch requests made

    def _owner(self, raw: Mapping[str, Any]) -> str:
        raise NotImplementedError

    def _listed(self, *, after_gap: bool) -> None:
        """Called after each list, the store refilled."""

    def _changed(self, node: str, kind: str, raw: JSON) -> None:
        """Called after each event about an object of one of the nodes, the store updated."""

    def objects_of(self, node: str) -> list[JSON]:
        return list(self._objects.get(node, {}).values())

    async def run(self) -> None:
        version: str | None = None
        backoff = Backoff()
        away = False
        while True:
            try:
                if version is None:
                    version = await self._relist(after_gap=away)
                    away = False
                    backoff.reset()
                timeout = random.randint(*WATCH_TIMEOUT_S)
                params = {**self.params, "resourceVersion": version, "timeoutSeconds": str(timeout)}
                self.watches += 1
                async for kind, obj in self.api.watch(self.path, params):
                    version = str(_meta(obj).get("resourceVersion") or version)
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        self._event(kind, obj)
            except ApiError as err:
                if err.code != 410:  # 410 Gone: the version is too old, list again at once
                    log.warning("watch failed", path=self.path, error=str(err))
                    away = True
                    await asyncio.sleep(backoff.next())
                version = None
            except Unreachable as err:
                if not away:
                    log.warning("API server unreachable", path=self.path, error=str(err))
                away = True
                version = None
                await asyncio.sleep(backoff.next())

    async def _relist(self, *, after_gap: bool) -> str:
        items, version = await self.api.list(self.path, self.params)
        self.lists += 1
        for objects in self._objects.values():
            objects.clear()
        for raw in items:
            node = self._owner(raw)
            if node in self._objects:
                self._objects[node][str(_meta(raw).get("uid"))] = raw
        self.synced.set()
        self._listed(after_gap=after_gap)
        return version

    def _event(self, kind: str, raw: JSON) -> None:
        node = self._owner(raw)
        objects = self._objects.get(node)
        if objects is None:  # an object of a node that is not ours
            return
        uid = str(_meta(raw).get("uid"))
        if kind == "DELETED":
            objects.pop(uid, None)
        else:
            objects[uid] = raw
        self._changed(node, kind, raw)


class PodInformer(SharedInformer):
    """Every pod bound to one of the nodes, handed to its node (:class:`PodHandler`)."""

    path = PODS
    params = BOUND

    def __init__(self, api: ApiServer, nodes: Iterable[str]) -> None:
        super().__init__(api, nodes)
        self._handlers: dict[str, PodHandler] = {}

    def _owner(self, raw: Mapping[str, Any]) -> str:
        return node_of(raw)

    def pods_on(self, node: str) -> list[JSON]:
        return self.objects_of(node)

    async def join(self, handler: PodHandler) -> None:
        """The node's pods as the informer knows them handed to it, then every event about them: nothing
        happens between the two (one event loop), so no event is lost or seen twice."""
        await self.synced.wait()
        handler.sync(self.pods_on(handler.name), after_gap=False)
        self._handlers[handler.name] = handler

    def _listed(self, *, after_gap: bool) -> None:
        for name, handler in self._handlers.items():
            handler.sync(self.pods_on(name), after_gap=after_gap)
        if after_gap:
            ours = sum(len(pods) for pods in self._objects.values())
            log.info("pods listed again", nodes=len(self._handlers), pods=ours)

    def _changed(self, node: str, kind: str, raw: JSON) -> None:
        handler = self._handlers.get(node)
        if handler is None:  # not joined yet: it starts from the store
            return
        if kind == "DELETED":
            handler.deleted(raw)
        else:
            handler.changed(raw)


class NodeInformer(SharedInformer):
    """The Node objects of the nodes: what each node's status loop compares with what it posted.

    The kubelet reads its Node from its own informer before each status update (``tryUpdateNodeStatus``
    in ``pkg/kubelet/kubelet_node_status.go`` at v1.37.2: ``nodeLister.Get`` on the first try, a GET only
    on a retry), the informer watching ``metadata.name=<node>`` (``pkg/kubelet/kubelet.go``). Here one
    watch of the Nodes serves every node, as kwok's node controller keeps one; it changes only when a Node
    does (a status post every 5 minutes per node, the node lifecycle controller's marks)."""

    path = NODES
    params: Mapping[str, str] = {}

    def _owner(self, raw: Mapping[str, Any]) -> str:
        return str(_meta(raw).get("name") or "")

    def node(self, name: str) -> JSON | None:
        """The Node as last seen; None before the first list or while it does not exist."""
        found = self.objects_of(name)
        return found[0] if found else None
