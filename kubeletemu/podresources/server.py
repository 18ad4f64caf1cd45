"""The podresources gRPC server (``ListenAndServePodResources`` in ``pkg/kubelet/server/server.go``).

One ``grpc.aio`` server, on its own unix socket, serving ``v1.PodResourcesLister`` and
``v1alpha1.PodResourcesLister`` behind one shared rate limiter (100 QPS, burst 10; a refused call gets
``RESOURCE_EXHAUSTED`` "rejected by rate limit"). Responses may exceed 16 MiB, the receive limit every
known client sets. On top of the kubelet, and outside the rate limit, it answers ``grpc.health.v1`` and
server reflection, so ``grpcurl -plaintext -unix SOCKET list`` works without a .proto file; reflection
describes the emulated kubelet version's schema (:mod:`kubeletemu.podresources.schema`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection, reflection_pb2

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as v1alpha1
from kubeletemu.emulator import NodeEmulator
from kubeletemu.grpc_decoding import add_service
from kubeletemu.podresources.ratelimit import REJECTED_BY_RATE_LIMIT, TokenBucket
from kubeletemu.podresources.schema import VersionedPool
from kubeletemu.podresources.servicer_v1 import PodResourcesListerV1
from kubeletemu.podresources.servicer_v1alpha1 import PodResourcesListerV1alpha1

if TYPE_CHECKING:
    from kubeletemu.podresources.metrics import PodResourcesMetrics

V1 = v1.DESCRIPTOR.services_by_name["PodResourcesLister"]
V1ALPHA1 = v1alpha1.DESCRIPTOR.services_by_name["PodResourcesLister"]
HEALTH = health_pb2.DESCRIPTOR.services_by_name["Health"]
V1_SERVICE = V1.full_name
V1ALPHA1_SERVICE = V1ALPHA1.full_name
PODRESOURCES_SERVICES = (V1ALPHA1_SERVICE, V1_SERVICE)
HEALTH_SERVICE = HEALTH.full_name
# podresources.Socket + ".sock" under the kubelet's root dir.
KUBELET_DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
# grpc-go's server default: no send limit. (Clients raise their receive limit to 16 MiB.)
SERVER_OPTIONS = (("grpc.max_send_message_length", -1),)


async def _rejected(request: Any, context: grpc.aio.ServicerContext) -> None:
    await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, REJECTED_BY_RATE_LIMIT)


class RateLimitInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """``LimiterUnaryServerInterceptor``: every podresources call asks the shared limiter first.

    Health checks and reflection, which the kubelet does not serve, are not rate-limited.
    """

    def __init__(self, limiter: TokenBucket, services: tuple[str, ...] = PODRESOURCES_SERVICES) -> None:
        self.limiter = limiter
        self.services = frozenset(services)
        self._reject = grpc.unary_unary_rpc_method_handler(_rejected)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        # grpc-go answers UNIMPLEMENTED before any interceptor runs: unknown methods cost no token.
        if handler is None:
            return None
        service = handler_call_details.method.lstrip("/").partition("/")[0]
        if service in self.services and not self.limiter.allow():
            return self._reject
        return handler


class PodResourcesServer:
    """The server object; bind it (``server.add_insecure_port("unix:PATH")``), then :meth:`start`."""

    def __init__(
        self,
        emulator: Callable[[], NodeEmulator],
        lock: asyncio.Lock,
        metrics: PodResourcesMetrics | None = None,
        limiter: TokenBucket | None = None,
    ) -> None:
        self.limiter = limiter if limiter is not None else TokenBucket()
        self.health = HealthServicer()
        self.server = grpc.aio.server(
            interceptors=[RateLimitInterceptor(self.limiter)], options=list(SERVER_OPTIONS)
        )
        # Bytes that are no request: INVALID_ARGUMENT, as on the admission socket.
        add_service(PodResourcesListerV1alpha1(emulator, lock, metrics), V1ALPHA1, self.server)
        add_service(PodResourcesListerV1(emulator, lock, metrics), V1, self.server)
        add_service(self.health, HEALTH, self.server)
        pool = VersionedPool(
            lambda: emulator().config.emulator.kubelet_version,
            (v1.DESCRIPTOR, v1alpha1.DESCRIPTOR, health_pb2.DESCRIPTOR, reflection_pb2.DESCRIPTOR),
        )
        reflection.enable_server_reflection(
            (*PODRESOURCES_SERVICES, HEALTH_SERVICE, reflection.SERVICE_NAME), self.server, pool=pool
        )

    async def start(self) -> None:
        await self.server.start()
        for service in ("", *PODRESOURCES_SERVICES):
            await self.health.set(service, health_pb2.HealthCheckResponse.SERVING)

    async def stop(self, grace: float | None) -> None:
        """Health turns NOT_SERVING, new calls are refused, in-flight ones get ``grace`` seconds."""
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
