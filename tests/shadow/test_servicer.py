"""The admission service in and out of shadow mode (in process; the daemon tests cover the wire)."""

from __future__ import annotations

import asyncio
from typing import NoReturn

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.daemon.admission_servicer import NOT_SHADOWING_MESSAGE, AdmissionServicer, shadow_report_msg
from kubeletemu.daemon.metrics import KubeletMetrics
from kubeletemu.shadow import READ_ONLY_MESSAGE, KubeletPaths, replay
from kubeletemu.shadow.report import ShadowReport, build_report
from tests.shadow.conftest import mirror_of
from tests.shadow.kubelet_double import FakeKubelet

POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, uid: u}\nspec: {containers: [{name: c}]}\n"
)


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


class Context:
    async def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        raise Aborted(code, details)


async def test_out_of_shadow_mode_there_is_no_report(kubelet: FakeKubelet) -> None:
    emulator = mirror_of(kubelet).emulator
    servicer = AdmissionServicer(lambda: emulator, asyncio.Lock(), KubeletMetrics())
    with pytest.raises(Aborted) as err:
        await servicer.GetShadowReport(pb.GetShadowReportRequest(), Context())  # type: ignore[arg-type]
    assert (err.value.code, err.value.details) == (grpc.StatusCode.FAILED_PRECONDITION, NOT_SHADOWING_MESSAGE)
    # ... and Admit works as ever.
    reply = await servicer.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=POD)), Context())  # type: ignore[arg-type]
    assert reply.admitted


async def test_shadow_mode_refuses_changes(kubelet: FakeKubelet) -> None:
    emulator = mirror_of(kubelet).emulator
    report = ShadowReport(KubeletPaths.resolve(kubelet.root), generation=1)
    servicer = AdmissionServicer(
        lambda: emulator, asyncio.Lock(), KubeletMetrics(), shadow_report=lambda: report
    )
    context = Context()
    for call, request in (
        (servicer.Admit, pb.AdmitRequest(pod=pb.PodSource(manifest=POD))),
        (servicer.RemovePod, pb.RemovePodRequest(uid="11111111-0000-0000-0000-00000000000a")),
    ):
        with pytest.raises(Aborted) as err:
            await call(request, context)  # type: ignore[operator]
        assert (err.value.code, err.value.details) == (grpc.StatusCode.FAILED_PRECONDITION, READ_ONLY_MESSAGE)
    assert len(emulator.registry) == 6
    would = await servicer.WouldAdmit(pb.WouldAdmitRequest(pod=pb.PodSource(manifest=POD)), context)  # type: ignore[arg-type]
    assert would.admitted
    reply = await servicer.GetShadowReport(pb.GetShadowReportRequest(), context)  # type: ignore[arg-type]
    assert reply.generation == 1 and reply.kubelet_root_dir == str(kubelet.root)


def test_report_message(kubelet: FakeKubelet) -> None:
    kubelet.tamper_cpus("11111111-0000-0000-0000-00000000000a", "c", [8, 9])
    mirror = mirror_of(kubelet)
    report = build_report(
        KubeletPaths.resolve(kubelet.root),
        mirror,
        replay(mirror),
        generation=3,
        refreshed_at=1700000000.5,
        trigger="inotify",
        duration=0.25,
        watch_mode="inotify",
    )
    msg = shadow_report_msg(report)
    assert (msg.generation, msg.refreshed_at, msg.trigger, msg.duration_seconds) == (
        3,
        1700000000.5,
        "inotify",
        0.25,
    )
    assert (msg.pods_listed, msg.pods_matched, msg.pods_derived) == (6, 4, 2)
    assert (msg.containers_checked, msg.containers_agreeing) == (7, 6)
    assert msg.kubelet_podresources_socket == str(kubelet.root / "pod-resources" / "kubelet.sock")
    assert list(msg.replay_order) == ["ml/gpu", "prod/gu-a", "prod/gu-b", "batch/gu-c"]
    (divergence,) = msg.divergences
    assert (divergence.name, divergence.resource, divergence.kubelet, divergence.kubeletemu) == (
        "gu-a",
        "cpus",
        "8,9",
        "1,9",
    )
    assert divergence.replay_position == 2
    assert list(msg.placeholders) == [
        "batch/gu-c prep: memory 671088640 assumed: its block of 0 plus what the containers after it hold "
        "on the same NUMA nodes (the Memory Manager shrinks an init container's blocks by what later "
        "containers reuse)",
        "batch/gu-c helper: cpu unknown (no exclusive CPUs: fractional), 1m assumed",
    ]
