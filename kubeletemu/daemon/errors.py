"""Engine errors as gRPC statuses: bad input is INVALID_ARGUMENT, duplicates ALREADY_EXISTS, unknown pods
NOT_FOUND, each with the engine's one-line reason; the state is unchanged in every case."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

import grpc

from kubeletemu.config import ConfigError
from kubeletemu.emulator import EmulatorError, PodExistsError, PodNotFoundError
from kubeletemu.manifest import ManifestError
from kubeletemu.manifest.limits import clip_message
from kubeletemu.topologymanager import PolicyOptionsError, TopologyManagerError

_INVALID = (ManifestError, ConfigError, PolicyOptionsError, TopologyManagerError, EmulatorError, ValueError)

Req = TypeVar("Req")
Resp = TypeVar("Resp")


class Serialized(Protocol):
    lock: asyncio.Lock


S = TypeVar("S", bound=Serialized)


def status_for(err: BaseException) -> grpc.StatusCode | None:
    if isinstance(err, PodExistsError):
        return grpc.StatusCode.ALREADY_EXISTS
    if isinstance(err, PodNotFoundError):
        return grpc.StatusCode.NOT_FOUND
    if isinstance(err, _INVALID):
        return grpc.StatusCode.INVALID_ARGUMENT
    return None


@contextlib.asynccontextmanager
async def engine_errors(context: grpc.aio.ServicerContext) -> AsyncIterator[None]:
    """Abort the call with the status of an engine error raised in the block; other errors propagate.

    Input nested deeper than a reader recurses (a manifest, a spec, an annotation's JSON) is the client's
    error too. Messages echo at most a clipped part of the input; the whole is capped as a last resort,
    since a status over gRPC's 16 KiB metadata limit reaches the client as ``RESOURCE_EXHAUSTED``."""
    try:
        yield
    except RecursionError:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the input is nested too deeply to be read")
        raise
    except Exception as err:
        code = status_for(err)
        if code is not None:
            await context.abort(code, clip_message(str(err)))
        raise


def serialized(
    method: Callable[[S, Req, Any], Resp],
) -> Callable[[S, Req, grpc.aio.ServicerContext], Awaitable[Resp]]:
    """Runs a synchronous handler under the servicer's lock, turning engine errors into statuses."""

    @functools.wraps(method)
    async def handler(self: S, request: Req, context: grpc.aio.ServicerContext) -> Resp:
        async with self.lock, engine_errors(context):
            return method(self, request, context)

    return handler
