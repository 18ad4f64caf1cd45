"""``kubeletemu serve``: the asyncio gRPC daemon on unix sockets.

Start-up: load the configuration, probe the host (or a captured sysfs tree), restore the admitted pods
and the kubelet-format checkpoints (read, not rewritten: only what differs is written, see
:mod:`kubeletemu.daemon.saved_state`), bind the sockets (created 0660 through the umask: no chmod race),
then tell systemd READY=1. A state directory that cannot be written does not stop it: the daemon serves
reads, degraded, until it can (:mod:`kubeletemu.daemon.state_disk`). SIGHUP reloads the configuration
atomically, keeping the old one on error; SIGTERM turns health NOT_SERVING, gives in-flight calls a grace
period, and exits 0.

Every module a call may need is imported before the daemon serves (no import inside a function on a
served path): a new version installed under a running daemon changes nothing it answers until it is
restarted (``tests/daemon/test_upgrade_in_place.py`` moves the package away under it and calls everything).

Shadow mode (``--shadow``) replaces the restored state with a mirror of this node's real kubelet (its
configuration file and checkpoints, read-only, and its podresources socket as a client): see
:mod:`kubeletemu.shadow`. The mirror is refreshed on changes and periodically, and swapped in under the
lock; nothing is written to the state directory or to the kubelet's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import grpc
import uvloop
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

import hostprobe
from hostprobe.sample import write_sample_tree
from kubeletemu._proto.kubeletemu.v1 import admission_pb2
from kubeletemu._proto.podresources.v1 import api_pb2 as podresources_v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as podresources_v1_grpc
from kubeletemu.checkpointmanager import CheckpointWriter, make_directories, remove_stale_temporaries
from kubeletemu.config import Config, load_config
from kubeletemu.config.errors import ConfigError
from kubeletemu.config.loader import check_feature_gates
from kubeletemu.cpumanager.errors import PolicyOptionsError as CPUPolicyOptionsError
from kubeletemu.daemon import sdnotify
from kubeletemu.daemon.admission_servicer import AdmissionServicer
from kubeletemu.daemon.feed_server import FeedListen, FeedSetupError, start_feed_server
from kubeletemu.daemon.logging import get_logger
from kubeletemu.daemon.metrics import KubeletMetrics, MetricsServer, start_metrics_server
from kubeletemu.daemon.saved_state import OpenedState, open_state
from kubeletemu.daemon.sockets import OwnedSocket, SocketInUseError, bind, claim
from kubeletemu.daemon.startup_metrics import StartupMetrics
from kubeletemu.daemon.state_disk import StateDisk
from kubeletemu.daemon.state_guard import StateDirGuard
from kubeletemu.daemon.state_lock import StateDirInUseError, StateDirLock, StateDirUnusableError
from kubeletemu.daemon.state_metrics import StateMetrics
from kubeletemu.emulator import NodeEmulator
from kubeletemu.feed.hub import FeedHub
from kubeletemu.grpc_decoding import add_service
from kubeletemu.machine import Machine
from kubeletemu.podresources import view
from kubeletemu.podresources.server import PodResourcesServer
from kubeletemu.shadow import KubeletPaths, ShadowError, ShadowMetrics, ShadowRunner, SourceUnreadableError
from kubeletemu.shadow.access import socket_problem
from kubeletemu.shadow.sources import WHAT_SOCKET
from kubeletemu.topologymanager.policy_options import PolicyOptionsError as TopologyPolicyOptionsError

log = get_logger("kubeletemu.daemon")

ADMISSION_SERVICE = admission_pb2.DESCRIPTOR.services_by_name["Admission"].full_name
HEALTH = health_pb2.DESCRIPTOR.services_by_name["Health"]
PODRESOURCES_SOCKET_NAME = "podresources.sock"
# Responses of the podresources API can be large (the kubelet allows 16 MiB); so can ours.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_SOCKET_UMASK = 0o117  # sockets come out 0660
SAMPLE_CONFIG = Path(__file__).resolve().parents[1] / "data" / "sample-config.yaml"


class StartupError(Exception):
    """One readable line: what failed and which file."""


class StartupConflictError(StartupError):
    """Another process holds what this daemon needs (a socket path, the state directory)."""


@dataclass
class ServeOptions:
    config_paths: Sequence[str] = ()
    socket: str | None = None
    podresources_socket: str | None = None
    state_dir: str | None = None
    sysfs_root: str | None = None
    procfs_root: str | None = None
    metrics_address: str | None = None
    grace_period: float | None = None
    # Probe the bundled sample topology (2 NUMA nodes, 16 CPUs) instead of this host: for dev boxes.
    sample: bool = False
    # Shadow mode: mirror this node's real kubelet (None: as the EmulatorConfiguration says).
    shadow: bool = False
    kubelet_root_dir: str | None = None
    kubelet_config: str | None = None
    kubelet_podresources_socket: str | None = None
    shadow_refresh_period: float | None = None
    # The kubelet version emulated (already parsed; None: as the EmulatorConfiguration says).
    kubelet_version: str | None = None
    # The node feed (``--feed-*``; None: as the EmulatorConfiguration says, which has no feed by default).
    feed_address: str | None = None
    feed_cert: str | None = None
    feed_key: str | None = None
    feed_client_ca: str | None = None
    # Called once serving, with the admission and podresources socket paths (the CLI tells a person at a
    # terminal what to run next).
    on_ready: Callable[[str, str], None] | None = None


@dataclass
class _Runtime:
    config: Config
    socket: str
    podresources_socket: str
    state_dir: str
    sysfs_root: str
    procfs_root: str
    metrics_address: str | None
    grace_period: float
    shadow: bool = False
    kubelet: KubeletPaths | None = None
    shadow_refresh_period: float = 0.0
    # Neither --podresources-socket nor podResourcesSocket: derived from the admission socket's directory.
    podresources_socket_derived: bool = False


def resolve(options: ServeOptions, config: Config) -> _Runtime:
    """Flags win over the EmulatorConfiguration, which wins over the built-in defaults.

    ``--kubelet-version`` replaces the configured ``kubeletVersion``; the ``featureGates`` are then checked
    again as that kubelet checks them (:class:`StartupError` if it would refuse them)."""
    if options.kubelet_version is not None and options.kubelet_version != config.emulator.kubelet_version:
        config = replace(config, emulator=replace(config.emulator, kubelet_version=options.kubelet_version))
        try:
            check_feature_gates(config)
        except ConfigError as err:
            raise StartupError(str(err)) from None
    emulator = config.emulator
    socket = options.socket or emulator.socket
    kubelet = KubeletPaths.resolve(
        options.kubelet_root_dir or emulator.kubelet_root_dir,
        options.kubelet_config or emulator.kubelet_config,
        options.kubelet_podresources_socket or emulator.kubelet_pod_resources_socket,
    )
    return _Runtime(
        config=config,
        socket=socket,
        # Unset: beside the admission socket (by default /run/kubeletemu/podresources.sock).
        podresources_socket=options.podresources_socket
        or emulator.pod_resources_socket
        or os.path.join(os.path.dirname(socket), PODRESOURCES_SOCKET_NAME),
        podresources_socket_derived=not (options.podresources_socket or emulator.pod_resources_socket),
        state_dir=options.state_dir or emulator.state_dir,
        sysfs_root=options.sysfs_root or emulator.sysfs_root,
        procfs_root=options.procfs_root or emulator.procfs_root,
        metrics_address=options.metrics_address or emulator.metrics_address,
        grace_period=options.grace_period
        if options.grace_period is not None
        else emulator.shutdown_grace_period,
        shadow=options.shadow or emulator.shadow,
        kubelet=kubelet,
        shadow_refresh_period=options.shadow_refresh_period
        if options.shadow_refresh_period is not None
        else emulator.shadow_refresh_period,
    )


class KubeletPodResourcesClient:
    """The real kubelet's podresources v1 API, opened as its own clients open it (``GetV1Client``: 10 s
    per call, 16 MiB messages). Each failure names the socket and says why (missing, no permission to
    connect, or the call's status)."""

    def __init__(self, socket: str, timeout: float = 10.0) -> None:
        self.socket = socket
        self.timeout = timeout
        self._channel: grpc.Channel | None = None
        self._stub: podresources_v1_grpc.PodResourcesListerStub | None = None

    def _call(self, method: str, request: object) -> object:
        problem = socket_problem(self.socket, WHAT_SOCKET)
        if problem is not None:
            self.close()
            raise SourceUnreadableError(self.socket, problem)
        if self._stub is None:
            self._channel = grpc.insecure_channel(
                f"unix:{self.socket}", options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
            )
            self._stub = podresources_v1_grpc.PodResourcesListerStub(self._channel)
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout)
        except grpc.RpcError as err:
            self.close()
            raise SourceUnreadableError(
                self.socket,
                f"{WHAT_SOCKET} {self.socket}: {method} failed: {err.code().name}: {err.details()}",
            ) from None

    def list(self) -> podresources_v1.ListPodResourcesResponse:
        response = self._call("List", podresources_v1.ListPodResourcesRequest())
        assert isinstance(response, podresources_v1.ListPodResourcesResponse)
        return response

    def allocatable(self) -> podresources_v1.AllocatableResourcesResponse:
        response = self._call("GetAllocatableResources", podresources_v1.AllocatableResourcesRequest())
        assert isinstance(response, podresources_v1.AllocatableResourcesResponse)
        return response

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._channel = None
        self._stub = None


class Daemon:
    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.lock = asyncio.Lock()
        self.metrics = KubeletMetrics()
        self.startup_metrics = StartupMetrics(self.metrics.registry)
        self.health = HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.podresources: PodResourcesServer | None = None
        self.feed_server: grpc.aio.Server | None = None
        self.feed_port: int | None = None
        self.metrics_server: MetricsServer | None = None
        self._stop = asyncio.Event()
        self.last_reload_error: str | None = None
        self.shadow: ShadowRunner | None = None
        self.kubelet_client: KubeletPodResourcesClient | None = None
        # Makes admissions and removals durable off the event loop (group commit); not in shadow mode,
        # which writes nothing. ``state_disk`` undoes what could not be written and runs degraded mode.
        self.writer: CheckpointWriter | None = None
        self.state_disk: StateDisk | None = None
        self._opened: OpenedState | None = None
        # Held for the daemon's lifetime (not in shadow mode, which has no state directory).
        self.state_lock: StateDirLock | None = None
        # The sockets this process bound: the only ones it removes.
        self.owned_sockets: list[OwnedSocket] = []

    # ---- start-up ---------------------------------------------------------------------------------

    def config_paths(self) -> list[str]:
        if self.options.config_paths:
            return list(self.options.config_paths)
        return [str(SAMPLE_CONFIG)] if self.options.sample else []

    def read_config(self) -> Config:
        paths = self.config_paths()
        return load_config(paths, self.options.kubelet_version) if paths else Config()

    def load(self) -> None:
        try:
            config = self.read_config()
        except Exception as err:
            raise StartupError(str(err)) from None
        self.runtime = resolve(self.options, config)
        rt = self.runtime
        if os.path.abspath(rt.podresources_socket) == os.path.abspath(rt.socket):
            raise StartupError(f"the podresources socket must differ from the admission socket ({rt.socket})")
        # Before anything slow: a path another daemon serves is refused now, a stale one removed.
        _claim(rt.socket, "--socket", "the admission socket")
        _claim(rt.podresources_socket, "--podresources-socket", _podresources_socket_origin(rt))
        if self.options.sample:
            self._sample_dir = tempfile.TemporaryDirectory(prefix="kubeletemu-sample-")
            sys_root, proc_root = write_sample_tree(self._sample_dir.name)
            rt.sysfs_root, rt.procfs_root = str(sys_root), str(proc_root)
        try:
            host = hostprobe.probe(rt.sysfs_root, rt.procfs_root)
        except hostprobe.ProbeError as err:
            raise StartupError(f"probing the host failed: {err}") from None
        self.machine = Machine.from_host(host)
        if rt.shadow:
            self._load_shadow(config)
            return
        self.state_lock = StateDirLock(rt.state_dir)
        try:
            self.state_lock.acquire(self._lock_holder())
        except StateDirUnusableError as err:
            self.state_lock = None
            raise StartupError(str(err)) from None  # bad input (exit 2), not another daemon's
        except StateDirInUseError as err:
            self.state_lock = None
            raise StartupConflictError(str(err)) from None
        # A kill between a temporary file's creation and its rename leaves it behind; nothing reads it.
        stale = remove_stale_temporaries(Path(rt.state_dir), on_error=_stale_temporary_left)
        if stale:
            log.info("removed interrupted writes", files=[str(p) for p in stale])
        try:
            self._opened = open_state(config, self.machine, rt.state_dir)
        except (TopologyPolicyOptionsError, CPUPolicyOptionsError) as err:
            # The managers refuse their options while the kubelet starts: the configuration's fault.
            topology = isinstance(err, TopologyPolicyOptionsError)
            field = "topologyManagerPolicyOptions" if topology else "cpuManagerPolicyOptions"
            origin = config.origins.get("KubeletConfiguration", "<defaults>")
            version = config.emulator.kubelet_version
            raise StartupError(f"{origin}: {field}: {err} (kubeletVersion {version})") from None
        except Exception as err:
            raise StartupError(f"cannot start with the saved state in {rt.state_dir}: {err}") from None
        self.emulator = self._opened.emulator
        self.metrics.observe_node(self.emulator)  # restored pods show in the gauges from the first scrape
        self._report_repairs(self.emulator)

    def _lock_holder(self) -> str:
        return f"pid {os.getpid()}, serving {self.runtime.socket}"

    def _report_repairs(self, emulator: NodeEmulator) -> None:
        """Every pod the saved state did not give back as saved: a log line with the reason, and a count."""
        for repair in emulator.startup_repairs:
            log.warning(
                "pod not restored as saved",
                action=repair.action,
                uid=repair.uid,
                pod=repair.pod or None,
                reason=repair.reason,
                state_dir=self.runtime.state_dir,
            )
            self.startup_metrics.repairs.labels(repair.action).inc()
        for name in emulator.registry.duplicate_names:
            log.warning(
                "two restored pods share one namespace/name (saved by an earlier version); remove one",
                pod=name,
            )

    def _load_shadow(self, config: Config) -> None:
        """The first mirror of the real kubelet; the state directory is not used."""
        rt = self.runtime
        paths = rt.kubelet
        assert paths is not None
        for ours in (rt.socket, rt.podresources_socket):
            if paths.inside_root(ours) or os.path.abspath(ours) == os.path.abspath(paths.podresources_socket):
                raise StartupError(
                    f"shadow mode never writes into the kubelet's directory {paths.root_dir}: put the socket "
                    f"{ours} elsewhere"
                )
        self.kubelet_client = KubeletPodResourcesClient(str(paths.podresources_socket))
        try:
            self.shadow = ShadowRunner(
                config,
                self.machine,
                paths,
                self.kubelet_client,
                install=self._install,
                refresh_period=rt.shadow_refresh_period,
                metrics=ShadowMetrics(self.metrics.registry),
                kubelet_binary=config.emulator.kubelet_binary,
                pinned_version=self.options.kubelet_version,
            )
            self.emulator = self.shadow.initial()
            self.metrics.observe_node(self.emulator)
        except ShadowError as err:
            raise StartupError(f"shadow mode: {err}") from None
        except Exception as err:
            raise StartupError(
                f"shadow mode: cannot mirror the kubelet: {type(err).__name__}: {err}"
            ) from None

    async def _install(self, emulator: NodeEmulator) -> None:
        """A shadow refresh's new mirror replaces the old one between two calls."""
        async with self.lock:
            self.emulator = emulator
            self.metrics.observe_node(emulator)

    async def start(self) -> None:
        # Off the event loop: pyroute2 (live NIC listing) runs its own asyncio loop for its sync API.
        await asyncio.to_thread(self.load)
        rt = self.runtime
        if self._opened is not None:
            await self._open_state_disk(self._opened)
            self._opened = None
        # Before any socket is bound: a feed that cannot listen stops start-up with nothing to clean up.
        await self._start_feed()
        server = grpc.aio.server(
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ]
        )
        shadow = self.shadow
        add_service(
            AdmissionServicer(
                lambda: self.emulator,
                self.lock,
                self.metrics,
                shadow_report=None if shadow is None else (lambda: shadow.report),
                state_disk=self.state_disk,
            ),
            admission_pb2.DESCRIPTOR.services_by_name["Admission"],
            server,
        )
        add_service(self.health, HEALTH, server)
        reflection.enable_server_reflection(
            (
                ADMISSION_SERVICE,
                HEALTH.full_name,
                reflection.SERVICE_NAME,
            ),
            server,
        )
        self.owned_sockets.append(_bind_unix(server, rt.socket, "--socket"))
        podresources = PodResourcesServer(lambda: self.emulator, self.lock, self.metrics)
        self.owned_sockets.append(
            _bind_unix(podresources.server, rt.podresources_socket, "--podresources-socket")
        )
        await server.start()
        self.server = server
        await podresources.start()
        self.podresources = podresources
        await self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        await self.health.set(ADMISSION_SERVICE, _admission_health(self.state_disk))
        if rt.metrics_address:
            self.metrics_server = start_metrics_server(rt.metrics_address, self.metrics.registry)
        nodes = len(self.machine.numa_node_ids)
        status = (
            f"serving on {rt.socket}: {nodes} NUMA node(s), {len(self.emulator.registry)} pod(s) restored"
        )
        if self.state_disk is not None and self.state_disk.problem is not None:
            status += f"; degraded: {self.state_disk.problem}"
        if shadow is not None:
            await shadow.start()
            status = (
                f"serving on {rt.socket}: shadowing the kubelet, {len(self.emulator.registry)} pod(s), "
                f"{len(shadow.report.divergences)} divergence(s)"
            )
        log.info(
            "ready",
            socket=rt.socket,
            podresources_socket=rt.podresources_socket,
            numa_nodes=nodes,
            pods=len(self.emulator.registry),
            shadow=shadow is not None,
            degraded=self.state_disk is not None and self.state_disk.problem is not None,
        )
        sdnotify.ready(status)
        if self.options.on_ready is not None:
            self.options.on_ready(rt.socket, rt.podresources_socket)

    async def _start_feed(self) -> None:
        """The node feed, when configured: this node's state to the extender's mirrors (mutual TLS)."""
        options = self.options
        try:
            listen = FeedListen.from_config(
                self.runtime.config.emulator,
                options.feed_address,
                options.feed_cert,
                options.feed_key,
                options.feed_client_ca,
            )
            if listen is None:
                return
            # The name as configured at start-up: a reload keeps serving the node under it.
            name = view.node_name(self.emulator.config)
            hub = FeedHub(lambda: {name: self.emulator})
            self.feed_server, self.feed_port = await start_feed_server(hub, listen)
        except FeedSetupError as err:
            raise StartupError(str(err)) from None
        log.info(
            "feed", address=listen.address, port=self.feed_port, node=name, incarnation=hub.incarnation.id
        )

    async def _open_state_disk(self, opened: OpenedState) -> None:
        """The writer, with the restored state as its baseline: what differs from the files is written
        now (a new checkpoint, a start-up repair); if that fails, the daemon starts degraded, the node as
        restored in memory."""
        rt = self.runtime
        assert self.state_lock is not None
        guard = StateDirGuard(self.state_lock, self._lock_holder())
        self.writer = CheckpointWriter()
        self.writer.set_verify(guard.problem)
        self.state_disk = StateDisk(
            rt.state_dir,
            self.writer,
            lambda: self.emulator,
            self.lock,
            StateMetrics(self.metrics.registry),
            on_change=self._state_disk_changed,
            observe=self.metrics.observe_node,
            on_fatal=self._stop.set,
            guard=guard,
        )
        written = await self.state_disk.open(opened.files, opened.removed)
        if written:
            log.info("saved state updated at start-up", files=[str(p) for p in written])
        if self.state_disk.problem is not None and self.emulator.startup_repairs:
            log.warning("start-up repairs are held in memory until the state directory can be written")

    async def _state_disk_changed(self, problem: str | None) -> None:
        """Degraded or not: the admission service's health and the status systemd shows follow."""
        if self.server is None:  # start-up: ``start`` sets both once serving
            return
        await self.health.set(ADMISSION_SERVICE, _admission_health(self.state_disk))
        if problem is None:
            sdnotify.status(f"serving on {self.runtime.socket}: the state directory takes writes again")
        else:
            sdnotify.status(f"degraded: {problem}")

    # ---- run loop ---------------------------------------------------------------------------------

    async def run(self) -> int:
        await self.start()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self._stop.set)
        loop.add_signal_handler(signal.SIGINT, self._stop.set)
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self.reload()))
        tasks = [asyncio.ensure_future(self._watchdog())]
        if self.state_disk is not None:
            tasks.append(asyncio.ensure_future(self.state_disk.watch()))
        try:
            await self._stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await self.shutdown()
        return 0

    async def _watchdog(self) -> None:
        interval = sdnotify.watchdog_interval()
        if interval is None:
            return
        while True:
            sdnotify.watchdog()
            await asyncio.sleep(interval / 2)

    async def reload(self) -> bool:
        """Re-read the configuration; swap it in only if the node starts with it. Returns success."""
        sdnotify.reloading()
        try:
            config = self.read_config()
            # The sockets stay bound where they are.
            runtime = replace(
                resolve(self.options, config),
                socket=self.runtime.socket,
                podresources_socket=self.runtime.podresources_socket,
            )
            if runtime.shadow != self.runtime.shadow or runtime.kubelet != self.runtime.kubelet:
                raise StartupError("switching shadow mode or the kubelet's paths takes a restart")
            if not runtime.shadow and runtime.state_dir != self.runtime.state_dir:
                raise StartupError(
                    f"moving the state directory ({self.runtime.state_dir} -> {runtime.state_dir}) takes a "
                    "restart"
                )
            if self.shadow is not None:
                await self.shadow.reconfigure(config)
                self.runtime = replace(runtime, shadow_refresh_period=self.runtime.shadow_refresh_period)
                self.last_reload_error = None
                log.info("reloaded", shadow=True)
                sdnotify.ready(f"reloaded at {time.strftime('%H:%M:%S')}")
                return True
            async with self.lock:
                disk = self.state_disk
                if disk is not None:  # the state directory as the answered calls left it
                    with contextlib.suppress(Exception):  # a failed pass: its calls are undone below
                        await asyncio.wrap_future(disk.writer.drain())
                    if not await disk.writable():
                        raise StartupError(f"a reload reads the saved state again, not while {disk.problem}")
                # Read with every write held back: a refused configuration leaves the files untouched.
                opened = await asyncio.to_thread(open_state, config, self.machine, runtime.state_dir)
                self.emulator = opened.emulator
                self.metrics.observe_node(self.emulator)
                self.runtime = runtime
                self._report_repairs(self.emulator)
                if disk is not None:
                    await disk.open(opened.files, opened.removed)
        except Exception as err:
            self.last_reload_error = str(err)
            log.error("reload refused, keeping the running configuration", error=str(err))
            sdnotify.ready(f"reload refused: {err}")
            return False
        self.last_reload_error = None
        log.info("reloaded", policy=config.kubelet.topology_manager_policy)
        sdnotify.ready(f"reloaded at {time.strftime('%H:%M:%S')}")
        return True

    async def shutdown(self) -> None:
        sdnotify.stopping()
        if self.shadow is not None:
            await self.shadow.stop()
        if self.kubelet_client is not None:
            self.kubelet_client.close()
        await self.health.enter_graceful_shutdown()
        stopping = []
        if self.server is not None:
            stopping.append(self.server.stop(self.runtime.grace_period))
        if self.podresources is not None:
            stopping.append(self.podresources.stop(self.runtime.grace_period))
        if self.feed_server is not None:
            # Its streams never end by themselves: no grace, the clients reconnect to the next run.
            stopping.append(self.feed_server.stop(0))
        await asyncio.gather(*stopping)
        if self.state_disk is not None:
            # A checkpoint (or the directory) removed since the last check: written back now, or the next
            # start would find pods holding CPUs with no checkpoint saying so, and refuse to start.
            async with self.lock:
                if not await self.state_disk.writable():
                    log.error(
                        "stopping with the state directory not as the node", reason=self.state_disk.problem
                    )
        writes: dict[str, int] = {}
        if self.writer is not None:
            await asyncio.to_thread(self.writer.close)
            # How well group commit worked: batches answered per disk pass.
            writes = {"state_batches": self.writer.batches_written, "state_passes": self.writer.passes}
        if self.metrics_server is not None:
            self.metrics_server.close()
        for owned in self.owned_sockets:
            owned.remove()  # only while still ours
        if self.state_lock is not None:  # last: the state is complete on disk
            self.state_lock.release()
        log.info("stopped", **writes)


def _admission_health(disk: StateDisk | None) -> health_pb2.HealthCheckResponse.ServingStatus.ValueType:
    """NOT_SERVING while degraded: Admit and RemovePod are refused (the reads go on answering)."""
    if disk is not None and disk.problem is not None:
        return health_pb2.HealthCheckResponse.NOT_SERVING
    return health_pb2.HealthCheckResponse.SERVING


def _stale_temporary_left(path: Path, err: OSError) -> None:
    log.warning("cannot remove an interrupted write; it is ignored", file=str(path), error=err.strerror)


def _podresources_socket_origin(rt: _Runtime) -> str:
    """Which socket the podresources one is, and where its path came from when nobody set it: two daemons
    whose admission sockets share a directory derive the same one."""
    if not rt.podresources_socket_derived:
        return "the podresources socket"
    return (
        f"the podresources socket ({PODRESOURCES_SOCKET_NAME} beside the admission socket {rt.socket}, as "
        "neither --podresources-socket nor podResourcesSocket is set)"
    )


def _claim(path: str, flag: str, which: str) -> None:
    """:func:`claim`, its refusal saying ``which`` socket clashes (one daemon has two)."""
    try:
        claim(path, flag)
    except SocketInUseError as err:
        raise StartupConflictError(f"{which}: {err}") from None


def _bind_unix(server: grpc.aio.Server, path: str, flag: str) -> OwnedSocket:
    """Bind a unix socket where no live server is (a stale socket is replaced), 0660 from birth; the
    directory is made 0750 if missing."""
    try:
        make_directories(os.path.dirname(os.path.abspath(path)))
        return bind(server.add_insecure_port, path, flag, _SOCKET_UMASK)
    except SocketInUseError as err:
        raise StartupConflictError(str(err)) from None
    except OSError as err:
        raise StartupError(f"cannot bind {path}: {err}") from None


def serve(options: ServeOptions) -> int:
    """Run the daemon until SIGTERM/SIGINT; raises ``StartupError`` when it cannot start.

    On uvloop: its libuv loop costs a gRPC round trip ~0.1 ms less than asyncio's default loop."""
    return uvloop.run(Daemon(options).run())
