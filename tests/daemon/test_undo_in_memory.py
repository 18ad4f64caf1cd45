"""A call whose files cannot be written is undone before its answer: in the engine (``restore_state`` is
what a restart on the last durable files restores), and in the daemon under group commit (a failed pass
undoes every call in it, and every call decided after it, while the pass before it stands).

The daemon runs in this process so that a disk pass can be held open (a gated write around the real
one); the failure itself is the real filesystem's (the registry directory replaced by a file)."""

from __future__ import annotations

import asyncio
import copy
import random
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import hostprobe
from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc
from kubeletemu.checkpointmanager import CheckpointWriter, WriteBatch, read_file, write_batch
from kubeletemu.config import load_config
from kubeletemu.daemon import server
from kubeletemu.daemon.server import ADMISSION_SERVICE, Daemon, ServeOptions
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from tests.daemon.conftest import write_config
from tests.daemon.test_daemon_admission import pod_yaml


def _node(tmp_path: Path, sample_tree: tuple[Path, Path]) -> tuple[Callable[[Path], NodeEmulator], Path]:
    config = load_config([str(write_config(tmp_path / "config.yaml"))])
    machine = Machine.from_host(hostprobe.probe(str(sample_tree[0]), str(sample_tree[1])))
    return (lambda state: NodeEmulator(config, machine, state)), tmp_path / "config.yaml"


def _pod(name: str, cpu: str, memory: str, dev: int, init: bool) -> Pod:
    limits = f'cpu: "{cpu}", memory: {memory}' + (f', example.com/dev: "{dev}"' if dev else "")
    init_containers = f"  initContainers:\n  - name: init\n    resources:\n      limits: {{{limits}}}\n"
    return parse_pods(
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: uid-{name}}}\n"
        f"spec:\n{init_containers if init else ''}  containers:\n  - name: app\n    resources:\n"
        f"      limits: {{{limits}}}\n"
    )[0]


def _held(node: NodeEmulator) -> object:
    """Everything a later admission depends on: pods, allocations, pools, hints (a copy)."""
    cm = node.cm
    return copy.deepcopy(
        (
            [(pod.uid, containers) for pod, containers in node.pods()],
            cm.cpus.state.get_default_cpu_set(),
            cm.cpus.state.get_cpu_assignments(),
            cm.memory.state.get_machine_state(),
            cm.memory.state.get_memory_assignments(),
            cm.devices.pod_devices.to_checkpoint_data(),
            cm.devices.allocated_devices,
            cm.topology.scope.pod_topology_hints,
            node.topology(),
        )
    )


def _copy_files(files: dict[Path, bytes], source: Path, target: Path) -> None:
    for path, body in files.items():
        copy = target / path.relative_to(source)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(body)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_restore_state_is_what_a_restart_on_those_files_restores(
    tmp_path: Path, sample_tree: tuple[Path, Path], seed: int
) -> None:
    """Admissions and removals (init containers, devices, memory across nodes), a snapshot of the files,
    more of them, then back to the snapshot: the node equals one started on the snapshot's files, and
    both answer the next 40 calls alike."""
    build, _ = _node(tmp_path, sample_tree)
    rng = random.Random(seed)
    live = build(tmp_path / "state")
    counter = iter(range(10_000))

    def step(nodes: list[NodeEmulator]) -> None:
        uids = nodes[0].registry.uids()
        if uids and rng.random() < 0.35:
            uid = rng.choice(uids)
            for node in nodes:
                node.remove(uid)
            return
        pod = _pod(
            f"p{next(counter)}",
            rng.choice(["1", "2", "3", "500m"]),
            rng.choice(["128Mi", "1Gi", "5Gi"]),
            rng.choice([0, 0, 1]),
            rng.random() < 0.3,
        )
        answers = [node.admit(pod) for node in nodes]
        assert all((a.admitted, a.reason, a.containers) == (answers[0].admitted, answers[0].reason,
                   answers[0].containers) for a in answers)  # fmt: skip

    for _ in range(12):
        step([live])
    snapshot = {path: op[0] for path in live.state_files() if (op := read_file(path)) is not None}
    at_snapshot = _held(live)
    for _ in range(12):
        step([live])
    assert _held(live) != at_snapshot  # the later calls changed something

    live.restore_state(snapshot)
    _copy_files(snapshot, tmp_path / "state", tmp_path / "restart")
    restarted = build(tmp_path / "restart")
    assert restarted.startup_repairs == []
    assert _held(live) == _held(restarted) == at_snapshot
    for _ in range(40):
        step([live, restarted])
    assert _held(live) == _held(restarted)


class _Gate:
    """Wraps the real write: holds pass ``hold`` open until released, then breaks the registry directory
    (a file where it was) so that the next pass fails on the real filesystem."""

    def __init__(self, registry: Path, hold: int) -> None:
        self.registry, self.hold = registry, hold
        self.passes: list[WriteBatch] = []
        self.entered, self.release = threading.Event(), threading.Event()

    def write(self, batch: WriteBatch) -> None:
        self.passes.append(batch)
        if len(self.passes) == self.hold:
            self.entered.set()
            assert self.release.wait(10)
        write_batch(batch)
        if len(self.passes) == self.hold:
            shutil.rmtree(self.registry)
            self.registry.write_text("a file where the registry directory was")


def _listed(pods: pb.ListPodsResponse) -> list[tuple[str, list[int], list[str]]]:
    return [
        (p.uid, sorted(c for ctr in p.containers for c in ctr.cpu_ids),
         sorted(d for ctr in p.containers for dev in ctr.devices for d in dev.device_ids))
        for p in pods.pods
    ]  # fmt: skip


def test_a_failed_pass_undoes_every_call_in_it_and_after_it(
    tmp_path: Path, sample_tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    gate = _Gate(state / "pods", hold=4)
    monkeypatch.setattr(server, "CheckpointWriter", lambda: CheckpointWriter(write=gate.write))
    _, config = _node(tmp_path, sample_tree)
    options = ServeOptions(
        config_paths=[str(config)],
        socket=str(tmp_path / "k.sock"),
        podresources_socket=str(tmp_path / "pr.sock"),
        state_dir=str(state),
        sysfs_root=str(sample_tree[0]),
        procfs_root=str(sample_tree[1]),
    )
    # The sample node: 15 CPUs (7 on NUMA node 0, 8 on node 1). a, b, c and d take 14; e fits only
    # in what removing a frees.
    manifests = {n: pod_yaml(n, cpu) for n, cpu in (("a", "4"), ("b", "4"), ("c", "4"), ("d", "2"))}
    manifests |= {"e": pod_yaml("e", "4"), "f": pod_yaml("f", "1", "64Mi")}

    async def scenario() -> None:
        daemon = Daemon(options)
        await daemon.start()
        try:
            async with grpc.aio.insecure_channel(f"unix:{tmp_path / 'k.sock'}") as channel:
                stub = admission_pb2_grpc.AdmissionStub(channel)
                health = health_pb2_grpc.HealthStub(channel)

                def admit(name: str) -> asyncio.Future[pb.AdmitResponse]:
                    request = pb.AdmitRequest(pod=pb.PodSource(manifest=manifests[name]))
                    answer: asyncio.Future[pb.AdmitResponse] = asyncio.ensure_future(
                        stub.Admit(request, timeout=20)
                    )
                    return answer

                for name in ("a", "b"):  # passes 2 and 3 (1: the start-up wrote the new checkpoints)
                    assert (await admit(name)).admitted
                durable = _listed(await stub.ListPods(pb.ListPodsRequest()))
                c = admit("c")  # pass 4, held open
                while not gate.entered.is_set():
                    await asyncio.sleep(0.005)
                # Decided while pass 4 is on its way, in this order: queued together for pass 5.
                d = admit("d")
                while "uid-d" not in daemon.emulator.registry:
                    await asyncio.sleep(0.005)
                remove_a = asyncio.ensure_future(stub.RemovePod(pb.RemovePodRequest(uid="uid-a"), timeout=20))
                while "uid-a" in daemon.emulator.registry:
                    await asyncio.sleep(0.005)
                e = admit("e")
                while "uid-e" not in daemon.emulator.registry:
                    await asyncio.sleep(0.005)
                held_by_e = daemon.emulator.pods()[-1][1][0].cpu_ids
                a_cpus = next(cpus for uid, cpus, _ in durable if uid == "uid-a")
                assert set(held_by_e) & set(a_cpus), "e was given some of the CPUs removing a freed"
                gate.release.set()

                answer_c = await c
                assert answer_c.admitted
                failed = await asyncio.gather(d, remove_a, e, return_exceptions=True)
                registry_file = state / "pods" / "uid-d.json"
                for err in failed:
                    assert isinstance(err, grpc.aio.AioRpcError)
                    assert err.code() == grpc.StatusCode.UNAVAILABLE
                    assert err.details() == (
                        f"state not saved, the call was undone: cannot write {registry_file}: Not a directory"
                    )
                assert (
                    len(gate.passes) == 5 and daemon.writer is not None and daemon.writer.failed_passes == 1
                )
                # Pass 5 wrote the CPU and memory checkpoints before failing: the node in memory is the
                # last durable one (pass 4), not the files.
                c_cpus = sorted(answer_c.containers[0].cpu_ids)
                assert _listed(await stub.ListPods(pb.ListPodsRequest())) == [*durable, ("uid-c", c_cpus, [])]
                committed = daemon.writer.committed()
                _copy_files(committed, state, tmp_path / "durable")
                restarted = NodeEmulator(daemon.emulator.config, daemon.machine, tmp_path / "durable")
                assert _held(daemon.emulator) == _held(restarted)

                checked = await health.Check(health_pb2.HealthCheckRequest(service=ADMISSION_SERVICE))
                assert checked.status == health_pb2.HealthCheckResponse.NOT_SERVING
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await admit("f")
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
                assert f"is not writable: cannot write in {state / 'pods'}: Not a directory" in str(
                    refused.value.details()
                )
                (state / "pods").unlink()
                assert (await admit("f")).admitted
                checked = await health.Check(health_pb2.HealthCheckRequest(service=ADMISSION_SERVICE))
                assert checked.status == health_pb2.HealthCheckResponse.SERVING
                final = _listed(await stub.ListPods(pb.ListPodsRequest()))
            registry = daemon.metrics.registry
            for outcome, count in (("undone", 3), ("refused", 1)):
                sample = registry.get_sample_value(
                    "kubeletemu_state_write_refusals_total", {"outcome": outcome}
                )
                assert sample == count
            assert registry.get_sample_value("kubeletemu_state_directory_writable") == 1
        finally:
            await daemon.shutdown()
        # What the files hold is what was answered: a, b, c and f, as a restart finds them.
        again = NodeEmulator(daemon.emulator.config, daemon.machine, state)
        assert again.startup_repairs == []
        assert [(p.uid, sorted(c for ctr in cs for c in ctr.cpu_ids)) for p, cs in again.pods()] == [
            (uid, cpus) for uid, cpus, _ in final
        ]
        assert [uid for uid, _, _ in final] == ["uid-a", "uid-b", "uid-c", "uid-f"]

    asyncio.run(scenario())
