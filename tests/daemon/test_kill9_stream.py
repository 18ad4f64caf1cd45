"""kill -9 at seeded random points of a 1,000-admission stream (with removals keeping the node from
filling): one client, then 8 concurrent clients. After each restart every acknowledged admission is
there with what its answer gave it, no acknowledged removal is, nothing is given twice, and the
checkpoints pass the kubelet's checksums. A call in flight at the kill may have happened or not; the
restarted daemon says which, and the stream goes on from there."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc
from tests.daemon.daemon_process import DaemonProcess
from tests.daemon.state_checks import Held, assert_consistent, held

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]

ADMISSIONS = 1_000
SAMPLE_CPUS = 16


def manifest(name: str, rng: random.Random) -> str:
    """Small pods of every kind the managers track: exclusive CPUs and memory, a device, shared CPUs."""
    kind = rng.choice(["exclusive", "exclusive", "device", "shared"])
    if kind == "shared":
        resources = 'requests: {cpu: "250m", memory: 64Mi}'
    else:
        device = ', example.com/dev: "1"' if kind == "device" else ""
        resources = f'limits: {{cpu: "{rng.choice([1, 2])}", memory: {rng.choice([64, 256])}Mi{device}}}'
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: stream, uid: uid-{name}}}\n"
        f"spec:\n  containers:\n  - name: app\n    resources:\n      {resources}\n"
    )


@dataclass
class Acknowledged:
    """What the clients were told, and what is left open by a kill."""

    present: dict[str, Held] = field(default_factory=dict)  # admitted and not removed since
    removed: set[str] = field(default_factory=set)
    in_doubt: set[str] = field(default_factory=set)  # uids of calls a kill cut off

    def check_restart(self, daemon: DaemonProcess) -> None:
        pods = list(daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods)
        listed = {p.uid: held(p) for p in pods}
        for uid, what in self.present.items():
            if uid in self.in_doubt and uid not in listed:
                continue  # its removal was cut off, and happened
            assert listed.get(uid) == what, f"acknowledged {uid} lost or changed"
        assert not self.removed & set(listed), "an acknowledged removal came back"
        assert set(listed) <= set(self.present) | self.in_doubt, "a pod nobody was told of"
        assert_consistent(daemon.state_dir, pods, SAMPLE_CPUS)
        # The restarted node decides the calls in doubt.
        self.present = {uid: what for uid, what in listed.items()}
        self.removed |= self.in_doubt - set(listed)
        self.in_doubt = set()


def test_kill_9_in_a_single_client_stream(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    rng = random.Random(20251124)
    kills = set(rng.sample(range(150, 1_800), 4))  # call numbers, admissions and removals alike
    acked = Acknowledged()
    stub = daemon.stub()
    admissions = calls = 0
    started = time.monotonic()
    while admissions < ADMISSIONS:
        calls += 1
        if len(acked.present) >= 6:
            uid = rng.choice(sorted(acked.present))
            future = stub.RemovePod.future(pb.RemovePodRequest(uid=uid), timeout=10)
        else:
            admissions += 1
            uid = f"uid-s{admissions}"
            future = stub.Admit.future(
                pb.AdmitRequest(pod=pb.PodSource(manifest=manifest(uid[4:], rng))), timeout=10
            )
        if calls in kills:
            time.sleep(rng.uniform(0, 0.004))  # somewhere in deciding, writing or answering it
            daemon.stop(signal.SIGKILL)
        try:
            answer = future.result()
        except grpc.RpcError as err:
            assert calls in kills, f"call {calls}: {err.code()}: {err.details()}"
            acked.in_doubt.add(uid)
        else:
            if isinstance(answer, pb.AdmitResponse):
                if answer.admitted:
                    acked.present[uid] = held(answer)
            else:
                del acked.present[uid]
                acked.removed.add(uid)
        if calls in kills:
            daemon.start()
            stub = daemon.stub()
            acked.check_restart(daemon)
    acked.check_restart(daemon)  # and without a kill: everything answered is there
    assert time.monotonic() - started < 60


def test_kill_9_with_8_concurrent_clients(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    rng = random.Random(8)
    acked = Acknowledged()
    kill_after = sorted(rng.sample(range(100, 1_600), 4))  # acknowledged answers, all clients together
    state = {"admissions": 0, "answers": 0}

    async def client(k: int, stub: admission_pb2_grpc.AdmissionStub, kill_at: int | None) -> None:
        own = random.Random(k * 7919 + state["admissions"])
        while state["admissions"] < ADMISSIONS:
            mine = sorted(uid for uid in acked.present if uid.startswith(f"uid-c{k}-"))
            if mine and (len(mine) >= 2 or own.random() < 0.5):
                uid = own.choice(mine)  # each client removes its own pods: never two removals of one
                call = stub.RemovePod(pb.RemovePodRequest(uid=uid), timeout=10)
                removing = True
            else:
                state["admissions"] += 1
                uid = f"uid-c{k}-{state['admissions']}"
                request = pb.AdmitRequest(pod=pb.PodSource(manifest=manifest(uid[4:], own)))
                call = stub.Admit(request, timeout=10)
                removing = False
            try:
                answer = await call
            except grpc.aio.AioRpcError:
                acked.in_doubt.add(uid)  # present or not: the restart says
                return  # the daemon is gone
            if removing:
                del acked.present[uid]
                acked.removed.add(uid)
            elif answer.admitted:
                acked.present[uid] = held(answer)
            state["answers"] += 1
            if kill_at is not None and state["answers"] >= kill_at:
                daemon.stop(signal.SIGKILL)
                return

    async def run(kill_at: int | None) -> None:
        async with grpc.aio.insecure_channel(f"unix:{daemon.socket}") as channel:
            stub = admission_pb2_grpc.AdmissionStub(channel)
            await asyncio.gather(*(client(k, stub, kill_at) for k in range(8)))

    started = time.monotonic()
    for kill_at in [*kill_after, None]:
        asyncio.run(run(kill_at))
        if kill_at is None:
            break
        daemon.start()
        acked.check_restart(daemon)
    assert state["admissions"] >= ADMISSIONS
    acked.check_restart(daemon)
    assert time.monotonic() - started < 60
