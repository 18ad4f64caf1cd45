"""Requests the daemon cannot decode are the client's error: ``INVALID_ARGUMENT`` with one line.

grpcio hands a request's bytes to the method's deserializer before any handler runs; when the bytes are
not that message (``DecodeError``), it ends the call ``UNKNOWN`` with a Python exception's text, which
reads like a daemon fault. Every service the daemon serves itself (the admission service, podresources v1
and v1alpha1, ``grpc.health.v1``) is registered here instead, method by method as the generated
``add_*Servicer_to_server`` functions do, with deserializers that turn bytes they cannot decode into an
:class:`Undecodable` value, which the handler refuses before anything touches the node. (grpc-go's server
answers such bytes ``INTERNAL`` "grpc: error unmarshalling request"; the README promises
``INVALID_ARGUMENT``, as for every other request the client got wrong.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from kubeletemu.manifest.limits import clip


@dataclass(frozen=True)
class Undecodable:
    """What a tolerant deserializer returns for bytes that are not its message."""

    message: str  # the message type's full name
    reason: str


def _deserializer(cls: type[Message]) -> Callable[[bytes], Message | Undecodable]:
    def decode(raw: bytes) -> Message | Undecodable:
        try:
            return cls.FromString(raw)
        except DecodeError as err:
            return Undecodable(cls.DESCRIPTOR.full_name, str(err) or "invalid wire format")

    return decode


async def _refuse(request: Any, context: grpc.aio.ServicerContext) -> None:
    if isinstance(request, Undecodable):
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"the request is not a valid {request.message}: {clip(request.reason, 200)}",
        )


def _refusing_undecodable(
    behaviour: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]],
) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await _refuse(request, context)
        return await behaviour(request, context)

    return handle


def _streaming_refusing_undecodable(
    behaviour: Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]],
) -> Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]:
    async def handle(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await _refuse(request, context)
        async for response in behaviour(request, context):
            yield response

    return handle


def add_service(servicer: object, service: ServiceDescriptor, server: grpc.aio.Server) -> None:
    """Register every method of ``service`` (unary, or server-streaming as ``Health.Watch``) on ``server``,
    served by ``servicer``'s method of the same name, with tolerant deserializers."""
    handlers = {}
    for method in service.methods:
        if method.client_streaming:
            raise ValueError(f"{method.full_name}: client-streaming methods are not served this way")
        request_cls = GetMessageClass(method.input_type)
        response_cls = GetMessageClass(method.output_type)
        behaviour = getattr(servicer, method.name)
        if method.server_streaming:
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                _streaming_refusing_undecodable(behaviour),
                request_deserializer=_deserializer(request_cls),
                response_serializer=response_cls.SerializeToString,
            )
        else:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                _refusing_undecodable(behaviour),
                request_deserializer=_deserializer(request_cls),
                response_serializer=response_cls.SerializeToString,
            )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    server.add_registered_method_handlers(service.full_name, handlers)
