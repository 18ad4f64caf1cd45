"""Bytes that are no request are INVALID_ARGUMENT naming the message that could not be decoded, on every
service the daemon serves itself (the admission service has its own test in test_state_faults.py):
podresources v1 and v1alpha1 and ``grpc.health.v1`` on both sockets, unary and streaming. grpcio alone
answers UNKNOWN "Unexpected DecodeError" and logs a traceback."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from tests.daemon.daemon_process import DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

# Field 1, length-delimited, whose length runs past the end: no message decodes it.
GARBAGE = b"\x0a\xff\x01garbage"

PODRESOURCES = [
    ("/v1.PodResourcesLister/List", "v1.ListPodResourcesRequest"),
    ("/v1.PodResourcesLister/GetAllocatableResources", "v1.AllocatableResourcesRequest"),
    ("/v1.PodResourcesLister/Get", "v1.GetPodResourcesRequest"),
    ("/v1alpha1.PodResourcesLister/List", "v1alpha1.ListPodResourcesRequest"),
]
HEALTH = [("/grpc.health.v1.Health/Check", "grpc.health.v1.HealthCheckRequest")]
WATCH = ("/grpc.health.v1.Health/Watch", "grpc.health.v1.HealthCheckRequest")


def _refused(call: Callable[[], object], message: str) -> None:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (info.value.code(), info.value.details())
    assert str(info.value.details()).startswith(f"the request is not a valid {message}: "), (
        info.value.details()
    )


def _raw(channel: grpc.Channel, method: str) -> Callable[[bytes], bytes]:
    return channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)


@pytest.mark.parametrize("socket", ["admission", "podresources"])
def test_undecodable_bytes_are_invalid_argument_on_every_service(
    module_daemon: DaemonProcess, socket: str
) -> None:
    daemon = module_daemon
    channel = daemon.channel() if socket == "admission" else daemon.podresources_channel()
    methods = HEALTH + (PODRESOURCES if socket == "podresources" else [])
    with channel:
        for method, message in methods:
            _refused(lambda m=method: _raw(channel, m)(GARBAGE, timeout=10), message)  # type: ignore[misc]
        watch = channel.unary_stream(
            WATCH[0], request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        _refused(lambda: list(watch(GARBAGE, timeout=10)), WATCH[1])
        # The same methods answer a valid request as before.
        for method, _ in methods:
            if not method.endswith("/Get"):
                _raw(channel, method)(b"", timeout=10)
    log = daemon.log.read_text()
    assert "Traceback" not in log and "DecodeError" not in log, log[-2000:]
