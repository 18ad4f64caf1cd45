"""Many clients at once: admissions stay serialized (no CPU or device given twice), every answer is on disk
when it is given (the group-commit writer), and a call whose files cannot be written is undone."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
from collections.abc import Callable

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc
from tests.daemon.daemon_process import DaemonProcess
from tests.daemon.test_daemon_admission import admit, pod_yaml

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]

# The sample node: 16 CPUs, CPU 0 reserved; two example.com/dev devices on NUMA node 1.
ALLOCATABLE_CPUS = 15


async def _admit_all(daemon: DaemonProcess, manifests: list[str]) -> list[pb.AdmitResponse]:
    async with grpc.aio.insecure_channel(f"unix:{daemon.socket}") as channel:
        stub = admission_pb2_grpc.AdmissionStub(channel)
        calls = [stub.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=m)), timeout=30) for m in manifests]
        return list(await asyncio.gather(*calls))


Held = dict[str, list[tuple[list[int], list[tuple[str, list[str]]]]]]


def _held(pods: list[pb.AdmittedPod] | list[pb.AdmitResponse]) -> Held:
    """What each pod holds: per container, its CPU ids and its devices."""
    return {
        p.uid: [
            (list(c.cpu_ids), [(d.resource_name, list(d.device_ids)) for d in c.devices])
            for c in p.containers
        ]
        for p in pods
    }


@pytest.mark.parametrize("scope", ["container", "pod"])
def test_concurrent_admissions_share_nothing_and_every_answer_survives_kill_9(
    make_daemon: MakeDaemon, scope: str
) -> None:
    daemon = make_daemon("single-numa-node", scope)
    # 30 one-CPU pods, 4 of them also asking for a device, all in flight at once.
    manifests = [pod_yaml(f"p{i}", "1", "64Mi", dev=1 if i % 8 == 0 else 0) for i in range(30)]
    answers = asyncio.run(_admit_all(daemon, manifests))

    admitted = [a for a in answers if a.admitted]
    cpus = [cpu for a in admitted for c in a.containers for cpu in c.cpu_ids]
    devices = [d for a in admitted for c in a.containers for dev in c.devices for d in dev.device_ids]
    assert len(cpus) == len(set(cpus)), "a CPU was given twice"
    assert len(devices) == len(set(devices)) <= 2, "a device was given twice"
    # Serialized admissions fill the node exactly: a one-CPU pod is refused only when no CPU is left.
    assert len(cpus) == ALLOCATABLE_CPUS and 0 not in cpus
    refused = {a.reason for a in answers if not a.admitted}
    assert refused <= {"TopologyAffinityError", "UnexpectedAdmissionError", "OutOfcpu"}, refused

    listed = daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods
    assert _held(list(listed)) == _held(admitted)
    # Each answer was given only once its files were durable: a kill right after the last answer loses
    # nothing and resurrects nothing.
    daemon.stop(signal.SIGKILL)
    daemon.start()
    restored = daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods
    assert _held(list(restored)) == _held(admitted)
    assert not admit(daemon, pod_yaml("one-more", "1", "64Mi")).admitted

    # Removals in a burst too. The stop line reports the writer's work: one batch per removal, written
    # in as many disk passes or fewer (how many merge depends on the disk; tests/test_checkpointmanager.py
    # holds the merging itself).
    async def remove_all() -> None:
        async with grpc.aio.insecure_channel(f"unix:{daemon.socket}") as channel:
            stub = admission_pb2_grpc.AdmissionStub(channel)
            await asyncio.gather(*(stub.RemovePod(pb.RemovePodRequest(uid=a.uid)) for a in admitted))

    asyncio.run(remove_all())
    assert daemon.stop() == 0
    stopped = [json.loads(line) for line in daemon.log.read_text().splitlines() if '"stopped"' in line][-1]
    assert stopped["state_batches"] == ALLOCATABLE_CPUS  # the removals (the refusal changed no file)
    assert 1 <= stopped["state_passes"] <= stopped["state_batches"]


def test_a_write_that_fails_is_undone_and_writes_resume_once_the_directory_is_back(
    make_daemon: MakeDaemon,
) -> None:
    daemon = make_daemon()
    assert admit(daemon, pod_yaml("a", "2")).admitted
    before = daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10)
    registry = daemon.state_dir / "pods"
    shutil.rmtree(registry)
    registry.write_text("a file where the registry directory was")

    # b is decided, its checkpoints are written, its registry file is not: b is undone before the answer.
    with pytest.raises(grpc.RpcError) as info:
        admit(daemon, pod_yaml("b", "2"))
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert info.value.details() == (
        f"state not saved, the call was undone: cannot write {registry / 'uid-b.json'}: Not a directory"
    )
    assert daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10) == before
    # Degraded: refused before deciding, as long as the directory takes no write.
    with pytest.raises(grpc.RpcError) as info:
        admit(daemon, pod_yaml("c", "2"))
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert info.value.details() == (
        f"state directory {daemon.state_dir} is not writable: cannot write in {registry}: Not a directory; "
        "admissions and removals are refused until it is (reads keep working)"
    )
    # Once the directory is back, the next call finds it so: the files are brought back to the node's
    # state (a's registry file, deleted above, and the CPU checkpoint b's pass left) and c is admitted.
    registry.unlink()
    assert admit(daemon, pod_yaml("c", "2")).admitted
    assert {p.uid for p in daemon.stub().ListPods(pb.ListPodsRequest()).pods} == {"uid-a", "uid-c"}
    assert daemon.stop() == 0
    daemon.start()
    assert [p.uid for p in daemon.stub().ListPods(pb.ListPodsRequest()).pods] == ["uid-a", "uid-c"]
    cpu_state = json.loads((daemon.state_dir / "cpu_manager_state").read_text())
    assert set(cpu_state["entries"]) == {"uid-a", "uid-c"}
    assert "pod not restored as saved" not in daemon.log.read_text()
