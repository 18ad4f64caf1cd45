"""Requests the daemon cannot decode are the client's error: ``INVALID_ARGUMENT`` with one line.

grpcio hands a request's bytes to the method's deserializer before any handler runs; when the bytes are
not that message (``DecodeError``), it ends the call ``UNKNOWN`` with a Python exception's text, which
reads like a daemon fault. The admission service is registered here instead, method by method as the
generated ``add_AdmissionServicer_to_server`` does, with deserializers that turn bytes they cannot decode
into an :class:`Undecodable` value, which the handler refuses before anything touches the node.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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


def _refusing_undecodable(
    behaviour: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]],
) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, Undecodable):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the request is not a valid {request.message}: {clip(request.reason, 200)}",
            )
        return await behaviour(request, context)

    return handle


def add_unary_service(servicer: object, service: ServiceDescriptor, server: grpc.aio.Server) -> None:
    """Register every (unary) method of ``service`` on ``server``, served by ``servicer``'s method of the
    same name, with tolerant deserializers."""
    handlers = {}
    for method in service.methods:
        request_cls = GetMessageClass(method.input_type)
        response_cls = GetMessageClass(method.output_type)
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            _refusing_undecodable(getattr(servicer, method.name)),
            request_deserializer=_deserializer(request_cls),
            response_serializer=response_cls.SerializeToString,
        )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    server.add_registered_method_handlers(service.full_name, handlers)
