"""The API server as the nodes talk to it: a kubeconfig read by lightkube (contexts, certificates, bearer
tokens, exec plugins) and the few REST calls a kubelet makes, on one HTTP client for every node.

lightkube's typed client lacks one call the kubelet makes: a delete with a body (the status manager deletes
a finished pod with ``gracePeriodSeconds: 0`` and a UID precondition, so that a pod recreated under the same
name is never deleted). The calls are therefore made here on the HTTP client lightkube configures
(``lightkube.config.client_adapter``), JSON in and out, which also keeps each pod a plain mapping (what
:func:`kubeletemu.manifest.pod_from_manifest` reads) instead of a model object.

The client speaks HTTP/2 where the API server offers it (every kube-apiserver does, as client-go uses it by
default): one TLS connection carries every node's requests and the one pod watch (:mod:`.informer`) as
concurrent streams, up to the server's ``--http2-max-streams-per-connection`` (100 by default; more wait
their turn). Where only HTTP/1.1 is offered, at most ``MAX_CONNECTIONS`` connections are opened and kept.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import yaml
from lightkube import ConfigError as LightkubeConfigError
from lightkube import KubeConfig
from lightkube.config.client_adapter import ConnectionParams

JSON = dict[str, Any]

# Media types of the PATCH bodies the kubelet sends.
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
# The kubelet's default client timeout for ordinary requests (watches have no read timeout).
REQUEST_TIMEOUT_S = 10.0
# Connections kept at most when the API server speaks only HTTP/1.1 (each one request at a time).
MAX_CONNECTIONS = 32
# Parsed URLs kept (a few per node: its Node, status and Lease; and its pods'): parsing one in httpx costs
# about a fifth of a request's CPU, and a thousand nodes make a hundred requests a second.
URL_CACHE = 16384


class KubeconfigError(Exception):
    """The kubeconfig cannot be read or used: one line saying why."""


class Unreachable(Exception):
    """The API server did not answer (refused, reset, timed out, TLS refused): the caller retries later;
    ``tls`` says the TLS handshake failed (a wrong CA or client certificate), which no retry mends."""

    def __init__(self, message: str, *, tls: bool = False) -> None:
        super().__init__(message)
        self.tls = tls


@dataclass
class ApiError(Exception):
    """An HTTP error status with the API server's ``Status`` reason and message."""

    code: int
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"


def load_kubeconfig(path: str | os.PathLike[str], context: str | None = None) -> Any:
    """The kubeconfig's context (lightkube's ``SingleConfig``); :class:`KubeconfigError` when the file is
    missing, not a kubeconfig, or names no usable context."""
    if not os.path.isfile(path):
        raise KubeconfigError(f"{path}: no such file")
    try:
        config = KubeConfig.from_file(path)
        single = config.get(context_name=context)
    except OSError as err:
        raise KubeconfigError(f"{path}: cannot read: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise KubeconfigError(f"{path}: not YAML: {_one_line(str(err))}") from None
    except KeyError as err:
        raise KubeconfigError(f"{path}: not a usable kubeconfig: no {err.args[0]!r} entry") from None
    except (LightkubeConfigError, ValueError, TypeError, AttributeError) as err:
        raise KubeconfigError(f"{path}: not a usable kubeconfig: {_one_line(str(err))}") from None
    if single is None or single.cluster is None or not single.cluster.server:
        raise KubeconfigError(f"{path}: no current context with a cluster server")
    return single


class ApiServer:
    """One HTTP client to the API server of a kubeconfig context."""

    def __init__(self, config: Any) -> None:
        try:
            connection = ConnectionParams(timeout=httpx2.Timeout(REQUEST_TIMEOUT_S), http2=True)
            params = connection.httpx_params(config)
        except (LightkubeConfigError, OSError, ValueError) as err:  # a CA or client certificate unreadable
            raise KubeconfigError(f"cannot use the kubeconfig's credentials: {err}") from None
        params["limits"] = httpx2.Limits(
            max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS
        )
        self.server = str(config.cluster.server)
        self._params = params
        self._client = httpx2.AsyncClient(**params)
        self._base = str(self._client.base_url).rstrip("/") + "/"
        self._urls: dict[str, httpx2.URL] = {}
        self._watch_timeout = httpx2.Timeout(REQUEST_TIMEOUT_S, read=None)

    async def close(self) -> None:
        await self._client.aclose()

    async def _send(
        self, method: str, path: str, client: httpx2.AsyncClient | None = None, **kwargs: Any
    ) -> httpx2.Response:
        try:
            response = await (client or self._client).request(method, self._url(path), **kwargs)
        except httpx2.TransportError as err:
            raise Unreachable(f"{self.server}: {_transport_text(err)}", tls=tls_refused(err)) from None
        if response.status_code >= 400:
            raise _api_error(response.status_code, response.content)
        return response

    def _url(self, path: str) -> httpx2.URL:
        url = self._urls.get(path)
        if url is None:
            if len(self._urls) >= URL_CACHE:
                self._urls.clear()
            url = self._urls[path] = httpx2.URL(self._base + path.lstrip("/"))
        return url

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> JSON:
        response = await self._send("GET", path, params=params)
        return _object(response.content)

    async def create(self, path: str, body: Mapping[str, Any]) -> JSON:
        response = await self._send("POST", path, content=json.dumps(body), headers=_JSON_BODY)
        return _object(response.content)

    async def patch(self, path: str, body: Mapping[str, Any], media_type: str = STRATEGIC_MERGE) -> JSON:
        response = await self._send(
            "PATCH", path, content=json.dumps(body), headers={"Content-Type": media_type}
        )
        return _object(response.content)

    async def delete(self, path: str, body: Mapping[str, Any] | None = None) -> None:
        content = None if body is None else json.dumps(body)
        await self._send("DELETE", path, content=content, headers=_JSON_BODY)

    async def list(self, path: str, params: Mapping[str, str]) -> tuple[list[JSON], str]:
        """Every item (following ``continue``) and the list's resourceVersion."""
        items: list[JSON] = []
        query = dict(params)
        while True:
            page = await self.get(path, {**query, "limit": "500"})
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            token = metadata.get("continue")
            if not token:
                return items, str(metadata.get("resourceVersion", ""))
            query["continue"] = token

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[tuple[str, JSON]]:
        """The watch's events (``ADDED``, ``MODIFIED``, ``DELETED``, ``BOOKMARK``) until the server ends it;
        an ``ERROR`` event is raised as :class:`ApiError` (410 Gone: list again)."""
        query = {**params, "watch": "true", "allowWatchBookmarks": "true"}
        request = self._client.build_request("GET", path, params=query, timeout=self._watch_timeout)
        try:
            response = await self._client.send(request, stream=True)
        except httpx2.TransportError as err:
            raise Unreachable(f"{self.server}: {_transport_text(err)}", tls=tls_refused(err)) from None
        try:
            if response.status_code >= 400:
                raise _api_error(response.status_code, await response.aread())
            async for line in response.aiter_lines():
                if not line:
                    continue
                event = json.loads(line)
                kind, obj = str(event.get("type")), event.get("object") or {}
                if kind == "ERROR":
                    raise ApiError(
                        int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", ""))
                    )
                yield kind, obj
        except httpx2.TransportError as err:
            raise Unreachable(f"{self.server}: {_transport_text(err)}", tls=tls_refused(err)) from None
        finally:
            await response.aclose()

    async def probe(self) -> None:
        """One request that needs the credentials: a wrong server, CA or token fails here, at start-up.

        Made over HTTP/1.1: to an unauthenticated HTTP/2 request the API server answers 401 with
        ``Connection: close``, which Go's server turns into a GOAWAY (``UnauthenticatedHTTP2DOSMitigation``,
        k8s.io/apiserver ``pkg/endpoints/filters/authentication.go`` at v0.37.2), and httpcore reports the
        closing connection instead of the 401."""
        async with httpx2.AsyncClient(**{**self._params, "http2": False}) as client:
            await self._send("GET", "/api/v1/namespaces/kube-node-lease", client)


_JSON_BODY = {"Content-Type": "application/json"}


def _object(content: bytes) -> JSON:
    value = json.loads(content) if content else {}
    return value if isinstance(value, dict) else {}


def _api_error(code: int, content: bytes) -> ApiError:
    try:
        status = json.loads(content)
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        return ApiError(code, str(status.get("reason", "")), str(status.get("message", "")))
    text = content.decode("utf-8", "replace").strip().splitlines()
    return ApiError(code, "", text[0] if text else "")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _innermost(err: BaseException) -> BaseException:
    cause = err
    while cause.__cause__ is not None or cause.__context__ is not None:
        cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
    return cause


def _transport_text(err: httpx2.TransportError) -> str:
    """The innermost cause (``[Errno 111] Connection refused``, a certificate error...), one line."""
    cause = _innermost(err)
    return _one_line(str(cause) or type(cause).__name__)


def tls_refused(err: BaseException) -> bool:
    """Whether a request failed on TLS (a wrong CA, a client certificate refused): the kubeconfig's fault,
    not the network's."""
    return isinstance(_innermost(err), ssl.SSLError)
