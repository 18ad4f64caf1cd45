"""Each node's podresources socket (``kubeletemu nodes --podresources-dir DIR``): the daemon's
podresources server (:class:`kubeletemu.podresources.server.PodResourcesServer`, v1 and v1alpha1 behind the
kubelet's rate limit) on ``DIR/<node>/kubelet.sock``, so that an exporter (RTE, nfd-topology-updater) can
run per node against it, as each runs against its kubelet's ``/var/lib/kubelet/pod-resources/kubelet.sock``.

Imported only when asked for: it brings grpcio, which the rest of :mod:`kubeletemu.nodes` does without.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from kubeletemu.daemon.sockets import OwnedSocket, SocketInUseError, bind
from kubeletemu.emulator import NodeEmulator
from kubeletemu.podresources.server import PodResourcesServer

SOCKET_NAME = "kubelet.sock"  # podresources.Socket + ".sock", as under the kubelet's pod-resources dir
_SOCKET_UMASK = 0o117  # 0660, as the daemon's


class SocketError(Exception):
    """A socket that cannot be bound: one line naming it."""


class NodeSockets:
    """The podresources servers of every node, started and stopped together."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._servers: list[PodResourcesServer] = []
        self._owned: list[OwnedSocket] = []

    def path(self, node: str) -> Path:
        return self.directory / node / SOCKET_NAME

    async def start(self, nodes: list[tuple[str, NodeEmulator]]) -> None:
        for name, emulator in nodes:
            server = PodResourcesServer(lambda emulator=emulator: emulator, asyncio.Lock())  # type: ignore[misc]
            path = self.path(name)
            path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
            try:
                self._owned.append(
                    bind(server.server.add_insecure_port, str(path), "--podresources-dir", _SOCKET_UMASK)
                )
            except (SocketInUseError, OSError) as err:
                raise SocketError(f"--podresources-dir: cannot bind {path}: {err}") from None
            await server.start()
            self._servers.append(server)

    async def stop(self) -> None:
        for server in self._servers:
            await server.stop(0)
        for owned in self._owned:
            owned.remove()
        self._servers.clear()
        self._owned.clear()
