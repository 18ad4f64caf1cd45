"""``kubeletemu extender``'s HTTPS server (aiohttp): the verbs kube-scheduler's ``HTTPExtender`` posts to
(``POST <pathPrefix>/<verb>``, JSON in and out), and ``GET /healthz``, ``/readyz`` and ``/metrics``.

* **Mutual TLS only.** ``enableHTTPS`` without a CA turns the scheduler's server-certificate check off and
  the extender protocol has no token, so the server requires a client certificate signed by
  ``tls.clientCAFile`` on every connection; a client without one is refused in the handshake.
* **Never a 200 for a request not understood.** A body that is not the verb's message gets HTTP 400 and one
  log line (a 200 with an empty ``NodeNames`` would read as "no node fits"); a body over ``maxBodyBytes``
  gets 413; an internal error 500. For the scheduler every non-200 is an error: the pod's attempt fails
  (retried later) unless the extender is ``ignorable``.
* **Health and metrics without a client certificate**, when ``healthListen`` is set: a second, plain HTTP
  listener serving only ``/healthz``, ``/readyz`` and ``/metrics`` (a kubelet's probe and a Prometheus
  scrape present no client certificate); the verbs stay behind mutual TLS.
* ``/healthz``: the process serves. ``/readyz``: 200 when the mirrors are ready as ``readiness.when``
  says (``all``: every expected or ever-reported node fresh; ``any``: one; ``always``), else 503 with the
  nodes that are not.
* Bind is served only when ``bind.enabled``.

The node agents' feeds (``feeds``, each a :class:`~kubeletemu.extender.config.FeedConfig`) are
followed by :func:`kubeletemu.extender.feed_client.start_feeds` once the server listens, and closed at
shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import uvloop
from aiohttp import web

from kubeletemu.extender.config import ExtenderConfig
from kubeletemu.extender.feed_client import Feeds, start_feeds
from kubeletemu.extender.metrics import CONTENT_TYPE, ExtenderMetrics
from kubeletemu.feed.tls import TLSFileError
from kubeletemu.fleet.gc_tuning import fewer_collections
from kubeletemu.logger import get_logger
from kubeletemu.scheduler.extender.engine import Engine
from kubeletemu.scheduler.extender.ledger import CLOSING_RULES, Ledger
from kubeletemu.scheduler.extender.mirrors import FRESH, Mirrors
from kubeletemu.scheduler.extender.protocol import (
    ExtenderBindingResult,
    ProtocolError,
    encode_binding_result,
    encode_filter_result,
    encode_preemption_result,
    encode_priority_list,
    parse_args,
    parse_binding_args,
    parse_preemption_args,
)

log = get_logger("kubeletemu.extender")

JSON = "application/json"


class StartError(Exception):
    """The server cannot start: one line saying why."""


def server_ssl_context(config: ExtenderConfig) -> ssl.SSLContext:
    """TLS 1.2 or later, the configured serving certificate, client certificates required and checked
    against ``tls.clientCAFile``."""
    tls = config.tls
    for field, path in (
        ("certFile", tls.cert_file),
        ("keyFile", tls.key_file),
        ("clientCAFile", tls.client_ca_file),
    ):
        if not os.path.isfile(path):
            raise StartError(f"{config.source}: tls.{field}: {path}: no such file")
    try:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=tls.client_ca_file)
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except (ssl.SSLError, OSError) as err:
        raise StartError(f"{config.source}: tls: cannot load the certificates: {err}") from None
    context.verify_mode = ssl.CERT_REQUIRED
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class ExtenderServer:
    """The engine, its mirrors and ledger, behind an aiohttp application. ``clock`` drives staleness and
    the ledger's TTL (tests inject one); ``binder`` replaces the API-server binder (tests)."""

    def __init__(
        self,
        config: ExtenderConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        binder: Any = None,
    ) -> None:
        self.config = config
        self.mirrors = Mirrors(config.stale_after, clock, config.expected_nodes)
        self.ledger = Ledger(config.ledger_ttl, CLOSING_RULES[config.close_on](), clock)
        self.engine = Engine(self.mirrors, self.ledger, config.opt_in_resources)
        self.metrics = ExtenderMetrics(self.mirrors, self.ledger)
        self.binder = binder
        self._runner: web.AppRunner | None = None
        self._health_runner: web.AppRunner | None = None
        self._feeds: list[Feeds] = []
        self.port: int | None = None
        self.health_port: int | None = None

    # ---- the application -------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.config.max_body_bytes)
        verbs: dict[str, Callable[[bytes], Awaitable[bytes]]] = {
            "filter": self._filter,
            "prioritize": self._prioritize,
            "preempt": self._preempt,
        }
        if self.config.bind.enabled:
            verbs["bind"] = self._bind
        for verb, answer in verbs.items():
            app.router.add_post(self.config.path(verb), self._verb_handler(verb, answer))
        self._add_health(app)
        return app

    def health_app(self) -> web.Application:
        """What the plain-HTTP ``healthListen`` serves: health, readiness and metrics, no verb."""
        app = web.Application(client_max_size=1024)
        self._add_health(app)
        return app

    def _add_health(self, app: web.Application) -> None:
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)

    def _verb_handler(
        self, verb: str, answer: Callable[[bytes], Awaitable[bytes]]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            started = time.perf_counter()
            try:
                body = await request.read()
                response = web.Response(body=await answer(body), content_type=JSON)
            except web.HTTPRequestEntityTooLarge as err:
                log.warning("request refused", verb=verb, peer=request.remote, status=413, error=err.text)
                response = web.Response(status=413, text=f"{err.text}\n")
            except ProtocolError as err:
                log.warning("malformed request", verb=verb, peer=request.remote, status=400, error=str(err))
                response = web.Response(status=400, text=f"malformed {verb} request: {err}\n")
            except Exception as err:  # never a 200 for an answer not computed
                log.exception("request failed", verb=verb, peer=request.remote, status=500, error=str(err))
                response = web.Response(status=500, text=f"{verb} failed: {err}\n")
            self.metrics.duration.labels(verb).observe(time.perf_counter() - started)
            self.metrics.requests.labels(verb, str(response.status)).inc()
            return response

        return handle

    async def _filter(self, body: bytes) -> bytes:
        return encode_filter_result(self.engine.filter(parse_args(body)))

    async def _prioritize(self, body: bytes) -> bytes:
        return encode_priority_list(self.engine.prioritize(parse_args(body)))

    async def _preempt(self, body: bytes) -> bytes:
        return encode_preemption_result(self.engine.preempt(parse_preemption_args(body)))

    async def _bind(self, body: bytes) -> bytes:
        args = parse_binding_args(body)
        if self.binder is None:
            result = ExtenderBindingResult(error="the extender has no API server to bind with")
        else:
            result = await self.binder.bind(args)
        if result.error:
            log.warning(
                "bind failed", pod=f"{args.pod_namespace}/{args.pod_name}", node=args.node, error=result.error
            )
            self.engine.bind_failed(args.pod_uid)
        else:
            self.engine.bound(args.pod_uid, args.node)
        return encode_binding_result(result)

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        problems = self.not_ready()
        if problems:
            return web.Response(status=503, text="not ready: " + "; ".join(problems) + "\n")
        return web.Response(text="ok\n")

    def not_ready(self) -> list[str]:
        """Why the extender is not ready (empty when it is)."""
        when = self.config.ready_when
        if when == "always":
            return []
        if when == "any":
            return [] if self.mirrors.any_fresh() else ["no node has a fresh mirror"]
        lookups = [self.mirrors.lookup(n) for n in self.mirrors.names()]
        if not lookups:
            return ["no node is expected or has reported"]
        return [lk.reason for lk in lookups if lk.state != FRESH]

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    # ---- serving ---------------------------------------------------------------------------------------

    async def start(self) -> int:
        """Serve on the configured address (mutual TLS); the port bound (the configured one, or the one
        the system chose for port 0)."""
        context = server_ssl_context(self.config)
        if self.config.bind.enabled and self.binder is None:
            self.binder = _api_binder(self.config)
        config = self.config
        self._runner = await _listen(self.app(), config.host, config.port, context, "listen")
        self.port = int(self._runner.addresses[0][1])  # the port 0 chose, if 0 was asked
        if config.health_host is not None and config.health_port is not None:
            try:
                self._health_runner = await _listen(
                    self.health_app(), config.health_host, config.health_port, None, "healthListen"
                )
            except StartError:
                await self.stop()
                raise
            self.health_port = int(self._health_runner.addresses[0][1])
        await self._start_feeds()
        return self.port

    async def _start_feeds(self) -> None:
        """One :func:`~kubeletemu.extender.feed_client.start_feeds` per ``feeds`` entry, once the server
        listens; a TLS file it cannot read stops the start with one line."""
        if not self.config.feeds:
            return
        for feed in self.config.feeds:
            try:
                self._feeds.append(await start_feeds(feed, self.mirrors))
            except TLSFileError as err:
                await self.stop()
                raise StartError(f"{self.config.source}: feeds: {err}") from None

    async def stop(self) -> None:
        feeds, self._feeds = self._feeds, []
        for handle in feeds:
            await handle.close()
        for runner in (self._health_runner, self._runner):
            if runner is not None:
                await runner.cleanup()
        self._runner = self._health_runner = None
        if self.binder is not None and hasattr(self.binder, "close"):
            await self.binder.close()


async def _listen(
    app: web.Application, host: str, port: int, context: ssl.SSLContext | None, field: str
) -> web.AppRunner:
    """``app`` served on ``host:port`` (TLS with ``context``); a :class:`StartError` naming the
    configuration ``field`` when the address cannot be bound."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, ssl_context=context).start()
    except OSError as err:
        await runner.cleanup()
        raise StartError(f"{field} {host}:{port}: {err.strerror or err}") from None
    return runner


def _api_binder(config: ExtenderConfig) -> Any:
    try:
        from kubeletemu.extender.binder import Binder
    except ImportError:
        raise StartError("bind.enabled needs lightkube: pip install 'kubeletemu[extender,nodes]'") from None
    from kubeletemu.nodes.api import KubeconfigError

    if config.bind.kubeconfig is None:
        raise StartError(f"{config.source}: bind.kubeconfig: Required value when bind.enabled is true")
    try:
        return Binder(config.bind.kubeconfig, config.bind.context)
    except KubeconfigError as err:
        raise StartError(f"{config.source}: bind.kubeconfig: {err}") from None


def run_until_stopped(
    config: ExtenderConfig, on_ready: Callable[[ExtenderServer], None] | None = None
) -> None:
    """Serve until SIGINT or SIGTERM, on uvloop (as the daemon). :class:`StartError` when it cannot start."""

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, task.cancel)
        server = ExtenderServer(config)
        try:
            port = await server.start()
            health = (
                {}
                if server.health_port is None
                else {"health": f"http://{config.health_host}:{server.health_port}"}
            )
            log.info(
                "serving",
                address=f"https://{config.host}:{port}{config.path_prefix}",
                verbs=dict(config.verbs),
                **health,
            )
            if on_ready is not None:
                on_ready(server)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
        finally:
            await server.stop()

    # The fleet's collector thresholds: with thousands of mirrors the heap's long-lived part is millions of
    # objects, and at the interpreter's defaults a full collection (728 ms at 5,000 nodes,
    # benchmarks/bench_extender.py) lands inside a request now and then; at these, none did.
    with fewer_collections(), asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())
