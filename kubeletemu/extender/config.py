"""``kubeletemu extender --config FILE``: one YAML document, ``kind: Extender``.

```yaml
apiVersion: kubeletemu.io/v1alpha1
kind: Extender
listen: 0.0.0.0:8443              # host:port of the HTTPS server (port 0: any free port)
healthListen: 0.0.0.0:10258        # optional, plain HTTP: /healthz, /readyz and /metrics only
pathPrefix: /kubeletemu            # the path of the scheduler's urlPrefix; the verbs are served below it
verbs: {filter: filter, prioritize: prioritize, preempt: preempt, bind: bind}   # these are the defaults
tls:                               # required: the server serves mutual TLS only
  certFile: /etc/kubeletemu/extender/tls.crt
  keyFile: /etc/kubeletemu/extender/tls.key
  clientCAFile: /etc/kubeletemu/extender/client-ca.crt   # kube-scheduler's client certificate's CA
staleAfter: 30s                    # a node unheard for longer fails closed
ledger: {ttl: 60s, closeOn: agent-report}   # or closeOn: ttl
bind: {enabled: false, kubeconfig: /etc/kubernetes/scheduler.conf, context: ""}
readiness: {expectedNodes: [worker-000, worker-001], when: all}   # all | any | always
optInResources: [kubeletemu.io/exact-numa]   # say nothing about exclusivity (the pods' opt-in resource)
maxBodyBytes: 3145728
feeds:                             # where the node agents' states come from (mutual TLS gRPC)
- agents: [10.0.0.5:7443, 10.0.0.6:7443]   # each daemon's --feed-address, or a kubeletemu nodes' one
  tls: {caFile: agents-ca.crt, certFile: extender-client.crt, keyFile: extender-client.key}
```

Every field but ``tls`` has the default shown (``listen`` ``0.0.0.0:8443``, ``pathPrefix`` empty,
``healthListen`` off). Any
problem is an :class:`ExtenderConfigError` naming the file and the field.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.config import fields as read
from kubeletemu.config.emulator_config import parse_duration
from kubeletemu.scheduler.extender.ledger import CLOSING_RULES, DEFAULT_TTL_S, AgentReport
from kubeletemu.scheduler.extender.mirrors import DEFAULT_STALE_AFTER_S
from kubeletemu.scheduler.extender.protocol import LIMITS
from kubeletemu.simulate.errors import SimulationError
from kubeletemu.simulate.spec import one_document, read_text

KIND = "Extender"
VERBS = ("filter", "prioritize", "preempt", "bind")
READY_WHEN = ("all", "any", "always")
_TOP_KEYS = (
    "apiVersion",
    "kind",
    "listen",
    "healthListen",
    "pathPrefix",
    "verbs",
    "tls",
    "staleAfter",
    "ledger",
    "bind",
    "readiness",
    "optInResources",
    "maxBodyBytes",
    "feeds",
)
DEFAULT_MAX_BODY_BYTES = LIMITS.max_chars or 3 * 1024 * 1024


class ExtenderConfigError(ValueError):
    """A configuration that cannot start: ``file: field: reason``."""


@dataclass(frozen=True)
class _Where(read.SourceReporter[ExtenderConfigError]):
    kind: Callable[[str], ExtenderConfigError] = ExtenderConfigError


@dataclass(frozen=True)
class FeedConfig:
    """One ``feeds`` entry: the agents to mirror and the extender's client identity towards them.

    ``agents``: ``host:port`` of each agent's feed (a daemon's ``--feed-address``, or a ``kubeletemu
    nodes``); ``ca_file`` the CA the agents' server certificates chain to; ``cert_file``/``key_file`` the
    extender's client certificate and key; ``server_name`` overrides the name checked in the agents'
    certificates (None: the host of each address)."""

    agents: tuple[str, ...]
    ca_file: str
    cert_file: str
    key_file: str
    server_name: str | None = None
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    # Which nodes to ask each agent for; empty: all it runs.
    nodes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class TLSFiles:
    cert_file: str
    key_file: str
    client_ca_file: str


@dataclass(frozen=True)
class BindSettings:
    enabled: bool = False
    kubeconfig: str | None = None
    context: str | None = None


@dataclass(frozen=True)
class ExtenderConfig:
    tls: TLSFiles
    host: str = "0.0.0.0"
    port: int = 8443
    # Plain HTTP for health and metrics only (kubelet probes and scrapers present no client certificate);
    # None: off, they are served behind mutual TLS alone.
    health_host: str | None = None
    health_port: int | None = None
    path_prefix: str = ""
    verbs: Mapping[str, str] = field(default_factory=lambda: {v: v for v in VERBS})
    stale_after: float = DEFAULT_STALE_AFTER_S
    ledger_ttl: float = DEFAULT_TTL_S
    close_on: str = AgentReport.name
    bind: BindSettings = BindSettings()
    expected_nodes: tuple[str, ...] = ()
    ready_when: str = "all"
    opt_in_resources: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # The node agents' feeds (kubeletemu.extender.feed_client follows each).
    feeds: tuple[FeedConfig, ...] = ()
    source: str = "<extender>"

    def path(self, verb: str) -> str:
        """The URL path of ``verb``: ``pathPrefix/<verb name>``, as the scheduler joins urlPrefix and verb."""
        return f"{self.path_prefix.rstrip('/')}/{self.verbs[verb]}"


def load_config(path: str | os.PathLike[str]) -> ExtenderConfig:
    try:
        text = read_text(path)
    except SimulationError as err:
        raise ExtenderConfigError(str(err)) from None
    return parse_config(text, str(path), os.path.dirname(os.fspath(path)))


def parse_config(text: str, source: str = "<extender>", base_dir: str = ".") -> ExtenderConfig:
    """The configuration in ``text``; relative file names are relative to ``base_dir``."""
    where = _Where(source)
    doc = one_document(where, text, KIND)
    read.known_fields(where, "", doc, _TOP_KEYS)

    def file_name(path: str, value: Any) -> str:
        name = read.string(where, path, value)
        if not name:
            raise where.error(path, "must not be empty")
        return name if os.path.isabs(name) else os.path.join(base_dir, name)

    host, port = _listen(where, doc.get("listen", "0.0.0.0:8443"))
    health_host: str | None = None
    health_port: int | None = None
    if doc.get("healthListen") is not None:
        health_host, health_port = _listen(where, doc["healthListen"], "healthListen")
        if (health_host, health_port) == (host, port) and port != 0:
            raise where.error("healthListen", f"must differ from listen ({host}:{port})")
    prefix = read.string(where, "pathPrefix", doc.get("pathPrefix", ""))
    if prefix and not prefix.startswith("/"):
        raise where.error("pathPrefix", f"must start with /, got {prefix!r}")
    verbs = {v: v for v in VERBS}
    for key, value in read.mapping(where, "verbs", doc.get("verbs")).items():
        if key not in VERBS:
            raise where.error(f"verbs.{key}", f"unknown verb: expected one of {', '.join(VERBS)}")
        name = read.string(where, f"verbs.{key}", value)
        if not name or "/" in name:
            raise where.error(f"verbs.{key}", f"must be a non-empty path segment, got {name!r}")
        verbs[key] = name
    if len(set(verbs.values())) != len(verbs):
        raise where.error("verbs", "two verbs share a path")

    raw_tls = doc.get("tls")
    if raw_tls is None:
        raise where.error("tls", "Required value: the extender serves mutual TLS only")
    tls_doc = _only(where, "tls", raw_tls, ("certFile", "keyFile", "clientCAFile"))
    tls = TLSFiles(*(file_name(f"tls.{k}", tls_doc.get(k)) for k in ("certFile", "keyFile", "clientCAFile")))

    ledger = _only(where, "ledger", doc.get("ledger"), ("ttl", "closeOn"))
    close_on = read.string(where, "ledger.closeOn", ledger.get("closeOn", AgentReport.name))
    if close_on not in CLOSING_RULES:
        raise where.error("ledger.closeOn", f"expected one of {', '.join(CLOSING_RULES)}, got {close_on!r}")
    bind = _only(where, "bind", doc.get("bind"), ("enabled", "kubeconfig", "context"))
    enabled = read.boolean(where, "bind.enabled", bind.get("enabled", False))
    kubeconfig = None if bind.get("kubeconfig") is None else file_name("bind.kubeconfig", bind["kubeconfig"])
    context = (
        None if bind.get("context") in (None, "") else read.string(where, "bind.context", bind["context"])
    )
    readiness = _only(where, "readiness", doc.get("readiness"), ("expectedNodes", "when"))
    expected = tuple(
        read.string(where, f"readiness.expectedNodes[{i}]", n)
        for i, n in enumerate(read.sequence(where, "readiness.expectedNodes", readiness.get("expectedNodes")))
    )
    ready_when = read.string(where, "readiness.when", readiness.get("when", "all"))
    if ready_when not in READY_WHEN:
        raise where.error("readiness.when", f"expected one of {', '.join(READY_WHEN)}, got {ready_when!r}")
    opt_in = tuple(
        read.string(where, f"optInResources[{i}]", n)
        for i, n in enumerate(read.sequence(where, "optInResources", doc.get("optInResources")))
    )
    max_body = read.integer(where, "maxBodyBytes", doc.get("maxBodyBytes", DEFAULT_MAX_BODY_BYTES))
    if max_body < 1024:
        raise where.error("maxBodyBytes", f"must be at least 1024, got {max_body}")
    feeds = tuple(
        _feed(where, f"feeds[{i}]", f, file_name)
        for i, f in enumerate(read.sequence(where, "feeds", doc.get("feeds")))
    )
    return ExtenderConfig(
        tls=tls,
        host=host,
        port=port,
        health_host=health_host,
        health_port=health_port,
        path_prefix=prefix,
        verbs=verbs,
        stale_after=_seconds(where, "staleAfter", doc.get("staleAfter"), DEFAULT_STALE_AFTER_S),
        ledger_ttl=_seconds(where, "ledger.ttl", ledger.get("ttl"), DEFAULT_TTL_S),
        close_on=close_on,
        bind=BindSettings(enabled, kubeconfig, context),
        expected_nodes=expected,
        ready_when=ready_when,
        opt_in_resources=opt_in,
        max_body_bytes=max_body,
        feeds=feeds,
        source=source,
    )


def _only(where: _Where, path: str, value: Any, keys: tuple[str, ...]) -> Mapping[str, Any]:
    doc = read.mapping(where, path, value)
    read.known_fields(where, path, doc, keys)
    return doc


_FEED_KEYS = ("agents", "tls", "serverName", "nodes")


def _feed(where: _Where, path: str, value: Any, file_name: Callable[[str, Any], str]) -> FeedConfig:
    """``{agents: [host:port...], tls: {caFile, certFile, keyFile}, serverName, nodes}``."""
    doc = _only(where, path, value, _FEED_KEYS)
    agents = tuple(
        read.string(where, f"{path}.agents[{i}]", a)
        for i, a in enumerate(read.sequence(where, f"{path}.agents", doc.get("agents")))
    )
    if not agents:
        raise where.error(f"{path}.agents", "Required value: at least one agent's host:port")
    for i, agent in enumerate(agents):
        _listen(where, agent, f"{path}.agents[{i}]")
    raw_tls = doc.get("tls")
    if raw_tls is None:
        raise where.error(f"{path}.tls", "Required value: the feeds are mutual TLS only")
    tls = _only(where, f"{path}.tls", raw_tls, ("caFile", "certFile", "keyFile"))
    ca, cert, key = (file_name(f"{path}.tls.{k}", tls.get(k)) for k in ("caFile", "certFile", "keyFile"))
    server_name = doc.get("serverName")
    nodes = tuple(
        read.string(where, f"{path}.nodes[{i}]", n)
        for i, n in enumerate(read.sequence(where, f"{path}.nodes", doc.get("nodes")))
    )
    return FeedConfig(
        agents,
        ca,
        cert,
        key,
        server_name=None if server_name is None else read.string(where, f"{path}.serverName", server_name),
        nodes=nodes,
    )


def _listen(where: _Where, value: Any, path: str = "listen") -> tuple[str, int]:
    text = read.string(where, path, value)
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise where.error(path, f"expected host:port, got {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port_text)


def _seconds(where: _Where, path: str, value: Any, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = parse_duration(read.string(where, path, value))
    except ValueError as err:
        raise where.error(path, str(err)) from None
    if seconds <= 0:
        raise where.error(path, f"must be positive, got {value!r}")
    return seconds
