"""``v1alpha1.PodResourcesLister`` (``server_v1alpha1.go``): the legacy List, devices only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc

from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as v1alpha1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2_grpc as v1alpha1_grpc
from kubeletemu.emulator import NodeEmulator
from kubeletemu.podresources import view

if TYPE_CHECKING:
    from kubeletemu.podresources.metrics import PodResourcesMetrics

API_VERSION = "v1alpha1"


class PodResourcesListerV1alpha1(v1alpha1_grpc.PodResourcesListerServicer):
    def __init__(
        self,
        emulator: Callable[[], NodeEmulator],
        lock: asyncio.Lock,
        metrics: PodResourcesMetrics | None = None,
    ) -> None:
        self.emulator = emulator
        self.lock = lock
        self.metrics = metrics

    async def List(self, request: v1alpha1.ListPodResourcesRequest, context: grpc.aio.ServicerContext) -> Any:
        # The v1alpha1 server counts only the total, not a per-method counter.
        if self.metrics is not None:
            self.metrics.pod_resources_endpoint_requests_total.labels(API_VERSION).inc()
        async with self.lock:
            return view.list_v1alpha1(self.emulator())
