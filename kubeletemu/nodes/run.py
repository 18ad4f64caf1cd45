"""``kubeletemu nodes``: every node of a Nodes file joins one API server, in one process and one event loop.

Start-up checks everything it can before any node registers, each problem one :class:`StartError` line: the
kubeconfig (readable, a context with a server, credentials the API server accepts), the Nodes file, each
group's kubelet start-up checks on its machine, and the state directory (one ``kubeletemu nodes`` per
directory, locked as the daemon locks its own). Each node keeps its checkpoints and admitted pods in
``<state-dir>/<node-name>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import structlog
import uvloop

from kubeletemu.checkpointmanager import CheckpointWriter, WriteBatch, deferred_writes, read_file
from kubeletemu.config import ConfigError
from kubeletemu.daemon.feed_server import FeedListen, FeedSetupError, start_feed_server
from kubeletemu.daemon.state_lock import StateDirInUseError, StateDirLock
from kubeletemu.emulator import EmulatorError, NodeEmulator
from kubeletemu.feed.hub import FeedHub
from kubeletemu.fleet.spec import group_config
from kubeletemu.nodes.api import ApiError, ApiServer, KubeconfigError, Unreachable, load_kubeconfig
from kubeletemu.nodes.informer import NodeInformer, PodInformer
from kubeletemu.nodes.member import NodeMember
from kubeletemu.nodes.spec import NodesSpec
from kubeletemu.registry import RegistryError
from kubeletemu.simulate.errors import SimulationError

if TYPE_CHECKING:
    from kubeletemu.nodes.podresources import NodeSockets

log = structlog.get_logger("kubeletemu.nodes")

# Nodes starting together (registering, first Lease, first status): see NodesRun._member. kwok's controllers
# take 16 nodes or pods at a time too (NodeHeartbeatParallelism, LockPodParallelism).
STARTING_AT_ONCE = 16
# Each node's InternalIP, in order: an address no route leads to (no kubelet API is served here).
FIRST_ADDRESS = ipaddress.IPv4Address("10.128.0.1")


class StartError(Exception):
    """Why the nodes cannot start, one line; ``unreachable`` when the API server did not answer."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


@dataclass(frozen=True)
class RunOptions:
    kubeconfig: str
    state_dir: str
    context: str | None = None
    podresources_dir: str | None = None  # each node's podresources socket in DIR/<node>/kubelet.sock
    feed: FeedListen | None = None  # one node feed listener for every node (mutual TLS)


def node_address(index: int) -> str:
    return str(FIRST_ADDRESS + index)


def build_emulators(
    spec: NodesSpec, state_dir: Path, writes: WriteBatch | None = None
) -> list[tuple[str, int, NodeEmulator]]:
    """(name, group index, emulator) for every node, each restored from its state directory.

    The kubelet's managers write their checkpoints as they start (new, or repaired). With ``writes``
    given, what would change a file is collected there instead of written (a file already holding that
    content is left alone), so that the caller makes it durable off the event loop: on a busy disk a
    thousand nodes' three fsyncs each took 24 of the 31 s this took when written here."""
    out: list[tuple[str, int, NodeEmulator]] = []
    for index, member in enumerate(spec.groups):
        group = member.group
        try:
            config = group_config(group)
            machine = group.topology.machine()
        except (ConfigError, SimulationError) as err:
            raise StartError(f"{spec.source}: nodeGroups[{group.name}]: {err}") from None
        for name in member.node_names():
            node_config = dataclasses.replace(
                config, emulator=dataclasses.replace(config.emulator, node_name=name)
            )
            try:
                with contextlib.nullcontext(None) if writes is None else deferred_writes() as pending:
                    emulator = NodeEmulator(node_config, machine, state_dir / name)
            except (EmulatorError, RegistryError, OSError, ValueError) as err:
                raise StartError(f"{state_dir / name}: {err}") from None
            if writes is not None and pending is not None:
                for path, op in pending.freeze().ops.items():
                    if op != read_file(path):
                        writes.ops[path] = op
            errors = "; ".join(emulator.cm.kubelet_start_errors())
            if errors:
                where = f"{spec.source}: nodeGroups[{group.name}]"
                raise StartError(f"{where}: the kubelet would not start: {errors}")
            out.append((name, index, emulator))
    return out


async def connect(options: RunOptions) -> ApiServer:
    """The API server of the kubeconfig, its credentials checked with one request."""
    try:
        config = load_kubeconfig(options.kubeconfig, options.context)
        api = ApiServer(config)
    except KubeconfigError as err:
        raise StartError(f"--kubeconfig: {err}") from None
    try:
        await api.probe()
    except Unreachable as err:
        await api.close()
        if err.tls:
            raise StartError(f"the kubeconfig's TLS settings do not fit the API server: {err}") from None
        raise StartError(f"cannot reach the API server: {err}", unreachable=True) from None
    except ApiError as err:
        if err.code != 404:  # the namespace may not exist yet: the credentials were accepted
            await api.close()
            raise StartError(
                f"{api.server}: the API server refused the kubeconfig's credentials: {err}"
            ) from None
    return api


class NodesRun:
    """The nodes of a file, joined to one API server; :meth:`run` until stopped."""

    def __init__(self, spec: NodesSpec, options: RunOptions) -> None:
        self.spec = spec
        self.options = options
        self.members: list[NodeMember] = []
        self.api: ApiServer | None = None
        self.pods: PodInformer | None = None
        self._lock = StateDirLock(options.state_dir)
        # Every node's state files go through one writer thread, which shares the fsyncs of concurrent
        # admissions (kubeletemu.checkpointmanager.writer).
        self.writer = CheckpointWriter("kubeletemu-nodes-writer")
        self._starting = asyncio.Semaphore(STARTING_AT_ONCE)
        self.feed_port: int | None = None

    def prepare(self) -> None:
        """Lock the state directory; nothing is read from it yet."""
        try:
            self._lock.acquire(f"pid {os.getpid()}, kubeletemu nodes")
        except StateDirInUseError as err:
            raise StartError(f"--state-dir: {err}") from None

    async def run(self, on_ready: Callable[[NodesRun], None] | None = None) -> None:
        """Connect (a wrong kubeconfig fails here, before any node is built), restore every node from its
        state directory, then run them all."""
        self.api = api = await connect(self.options)
        try:
            started = WriteBatch()
            emulators = build_emulators(self.spec, Path(self.options.state_dir), started)
            # Durable before the nodes announce they joined; their admissions' writes queue behind.
            durable = asyncio.wrap_future(self.writer.submit(started))
            names = [name for name, _, _ in emulators]
            self.pods = pods = PodInformer(api, names)
            nodes = NodeInformer(api, names)
            for position, (name, group, emulator) in enumerate(emulators):
                member = NodeMember(
                    name,
                    self.spec.groups[group],
                    emulator,
                    api,
                    node_address(position),
                    pods,
                    self.spec.seed,
                    writer=self.writer,
                    # Heartbeats spread evenly over the interval (NodeMember's docstring).
                    phase=(position + 1) / len(emulators),
                    nodes=nodes,
                )
                self.members.append(member)
            sockets = await self._serve_podresources(emulators)
            feed = await self._serve_feed(emulators)
            try:
                async with asyncio.TaskGroup() as tasks:
                    tasks.create_task(pods.run())
                    tasks.create_task(nodes.run())
                    for member in self.members:
                        tasks.create_task(self._member(member))
                    tasks.create_task(self._announce(durable, on_ready))
            finally:
                if feed is not None:
                    await feed.stop(0)
                if sockets is not None:
                    await sockets.stop()
        finally:
            await api.close()

    async def _serve_podresources(self, emulators: list[tuple[str, int, NodeEmulator]]) -> NodeSockets | None:
        if self.options.podresources_dir is None:
            return None
        from kubeletemu.nodes.podresources import NodeSockets, SocketError

        sockets = NodeSockets(self.options.podresources_dir)
        try:
            await sockets.start([(name, emulator) for name, _, emulator in emulators])
        except SocketError as err:
            await sockets.stop()
            raise StartError(str(err)) from None
        return sockets

    async def _serve_feed(self, emulators: list[tuple[str, int, NodeEmulator]]) -> grpc.aio.Server | None:
        """The node feed, when asked for: one listener, each node's updates on every stream."""
        if self.options.feed is None:
            return None
        by_name = {name: emulator for name, _, emulator in emulators}
        hub = FeedHub(lambda: by_name)
        try:
            server, self.feed_port = await start_feed_server(hub, self.options.feed)
        except FeedSetupError as err:
            raise StartError(str(err)) from None
        log.info("feed", address=self.options.feed.address, port=self.feed_port, nodes=len(by_name),
                 incarnation=hub.incarnation.id)  # fmt: skip
        return server

    async def _member(self, member: NodeMember) -> None:
        """One node; its start (registration, first Lease, its pods from the shared watch) waits its turn
        among ``STARTING_AT_ONCE``: a thousand registrations at once would queue behind each other on the
        API server past the client's timeout."""
        try:
            async with self._starting:
                running = asyncio.create_task(member.run())
                synced = asyncio.create_task(member.synced.wait())
                await asyncio.wait({running, synced}, return_when=asyncio.FIRST_COMPLETED)
                synced.cancel()
            await running
        except ApiError as err:  # an answer retrying cannot change (403: the credentials may not do it)
            server = self.api.server if self.api is not None else "the API server"
            raise StartError(f"node {member.name}: {server} refused: {err}") from None

    async def _announce(
        self, durable: asyncio.Future[None], on_ready: Callable[[NodesRun], None] | None
    ) -> None:
        try:
            await durable
        except OSError as err:  # the state directory refused the nodes' first checkpoints
            raise StartError(f"--state-dir: {err}") from None
        for member in self.members:
            await member.synced.wait()
        if on_ready is not None:
            on_ready(self)

    def close(self) -> None:
        self.writer.close()  # what is queued is written first
        self._lock.release()


def run_until_stopped(run: NodesRun, on_ready: Callable[[NodesRun], None] | None = None) -> None:
    """``run.run`` on a fresh event loop until SIGINT or SIGTERM (then every node stops where it is: its
    state is on disk, its Node and Lease stay, as a stopped kubelet leaves them)."""

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await run.run(on_ready)

    try:
        # uvloop, as the daemon's: each request's bookkeeping costs less than on asyncio's own loop.
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    except* StartError as group:
        raise group.exceptions[0] from None
