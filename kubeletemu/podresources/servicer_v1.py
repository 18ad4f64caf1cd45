"""``v1.PodResourcesLister`` (``server_v1.go``): List, GetAllocatableResources and Get over the emulated node.

Errors are the kubelet's ``fmt.Errorf`` texts, which reach clients as gRPC ``UNKNOWN``. List responses carry
the pod-set fingerprints of what they list as response header metadata (``kubeletemu-fingerprint-<method>``);
kubelet clients never read headers, so the wire answer stays the kubelet's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import grpc

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu.emulator import NodeEmulator
from kubeletemu.podresources import view
from kubeletemu.podresources.fingerprint import METHOD_ALL, METHOD_WITH_EXCLUSIVE_RESOURCES

if TYPE_CHECKING:
    from kubeletemu.podresources.metrics import PodResourcesMetrics

API_VERSION = "v1"
FINGERPRINT_METADATA_PREFIX = "kubeletemu-fingerprint-"
# The methods whose fingerprints ride on List (exclude-terminal equals all while List shows active pods).
LIST_FINGERPRINT_METHODS = (METHOD_ALL, METHOD_WITH_EXCLUSIVE_RESOURCES)


def fingerprint_metadata(listed: Sequence[view.ListedPod]) -> tuple[tuple[str, str], ...]:
    return tuple(
        (FINGERPRINT_METADATA_PREFIX + method, view.fingerprint_of(listed, method))
        for method in LIST_FINGERPRINT_METHODS
    )


async def abort_unknown(context: grpc.aio.ServicerContext, err: Exception) -> NoReturn:
    """A Go ``error`` returned from a handler: status UNKNOWN with its text."""
    await context.abort(grpc.StatusCode.UNKNOWN, str(err))
    raise AssertionError("unreachable: abort raises")


class PodResourcesListerV1(v1_grpc.PodResourcesListerServicer):
    def __init__(
        self,
        emulator: Callable[[], NodeEmulator],
        lock: asyncio.Lock,
        metrics: PodResourcesMetrics | None = None,
    ) -> None:
        # A getter: a SIGHUP reload swaps the emulator under the same lock.
        self.emulator = emulator
        self.lock = lock
        self.metrics = metrics

    def _count(self, *counters: str) -> None:
        if self.metrics is not None:
            for name in counters:
                getattr(self.metrics, f"pod_resources_endpoint_{name}").labels(API_VERSION).inc()

    async def List(self, request: v1.ListPodResourcesRequest, context: grpc.aio.ServicerContext) -> Any:
        self._count("requests_total", "requests_list")
        async with self.lock:
            listing = view.list_pods(self.emulator())
            metadata = fingerprint_metadata(listing.pods)
        await context.send_initial_metadata(metadata)
        return listing.response

    async def GetAllocatableResources(
        self, request: v1.AllocatableResourcesRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        self._count("requests_total", "requests_get_allocatable")
        async with self.lock:
            return view.allocatable_resources(self.emulator())

    async def Get(self, request: v1.GetPodResourcesRequest, context: grpc.aio.ServicerContext) -> Any:
        self._count("requests_total", "requests_get")
        async with self.lock:
            try:
                return view.get_pod_resources(self.emulator(), request.pod_namespace, request.pod_name)
            except view.PodResourcesError as err:
                error = err
        self._count("errors_get")
        await abort_unknown(context, error)
