"""The daemon over its unix socket: Admit round trip, and sustained admissions + removals.

Run: python benchmarks/bench_daemon.py [--seconds 30] [--in-flight 16]
Targets (issue 6): Admit round trip on a 2-NUMA capture, median < 2 ms; 500 admissions and removals
per second sustained for 30 s with no error. Uses the OpenShift 2-NUMA capture from
tests/fixtures/sysfs (or $KUBELETEMU_FIXTURES) when present, else the bundled sample topology
(also 2 NUMA nodes).

Every admission makes its checkpoints durable (temporary file, fsync, rename) before it answers, so the
figures depend on the disk: they are printed for a state directory on disk and, where /dev/shm exists,
on tmpfs, which shows what the emulation itself costs.

Sustained load is measured twice: one client that admits then removes, one call at a time (bound by the
round trip), and one client process keeping ``--in-flight`` calls going at once, each an admit-then-remove
loop, as several schedulers, exporters or test drivers would. Admissions stay serialized; the fsyncs of
calls that queue behind a disk pass are shared (group commit). The client runs on the same machine and
takes part of its CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc
import uvloop

from benchmarks._timing import fmt
from hostprobe.sample import write_sample_tree
from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc as pb_grpc
from tests.daemon.daemon_process import DaemonProcess
from tests.hostprobe.hostprobe_capture_support import capture_archive

CAPTURE = "ocp-worker-2s20c2t-cascadelake"
CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
cpuManagerPolicy: static
memoryManagerPolicy: Static
kubeReserved: {cpu: "1", memory: 512Mi}
reservedMemory:
- numaNode: 0
  limits: {memory: 612Mi}
"""


def topology(workdir: Path) -> tuple[Path, Path, str]:
    tarball = capture_archive(CAPTURE)
    if tarball.is_file():
        with tarfile.open(tarball) as archive:
            archive.extractall(workdir, filter="data")
        return workdir / CAPTURE / "sys", workdir / CAPTURE / "proc", CAPTURE
    sys_root, proc_root = write_sample_tree(workdir / "sample")
    return Path(sys_root), Path(proc_root), "bundled sample"


def manifest(i: int) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: bench, uid: uid-{i}}}\n"
        "spec:\n  containers:\n  - name: app\n    resources:\n      limits: {cpu: '2', memory: 256Mi}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--in-flight", type=int, default=16)
    args = parser.parse_args()
    bases = [("disk", tempfile.gettempdir())]
    if Path("/dev/shm").is_dir():
        bases.append(("tmpfs", "/dev/shm"))
    for where, base in bases:
        print(f"== state directory on {where} ({base})")
        run(args.seconds, base, args.in_flight)


def run(seconds: float, state_base: str, in_flight: int) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="kubeletemu-bench-") as tmp,
        tempfile.TemporaryDirectory(prefix="kubeletemu-state-", dir=state_base) as state,
    ):
        work = Path(tmp)
        sys_root, proc_root, label = topology(work)
        (work / "config.yaml").write_text(CONFIG)
        daemon = DaemonProcess(
            work / "config.yaml", Path(state), work / "k.sock", sys_root, proc_root, work / "daemon.log"
        ).start()
        try:
            stub = daemon.stub()
            latencies = []
            for i in range(300):
                request = pb.AdmitRequest(pod=pb.PodSource(manifest=manifest(i)))
                start = time.perf_counter()
                reply = stub.Admit(request, timeout=10)
                latencies.append(time.perf_counter() - start)
                assert reply.admitted, reply.message
                stub.RemovePod(pb.RemovePodRequest(uid=f"uid-{i}"), timeout=10)
            latencies.sort()
            print(f"topology: {label}")
            print(
                f"Admit round trip (300 calls)      median {fmt(statistics.median(latencies))}  "
                f"p90 {fmt(latencies[int(len(latencies) * 0.9)])}"
            )
            admitted = removed = errors = 0
            deadline = time.monotonic() + seconds
            i = 1000
            start = time.monotonic()
            while time.monotonic() < deadline:
                reply = stub.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest(i))), timeout=10)
                if reply.admitted:
                    admitted += 1
                else:
                    errors += 1
                stub.RemovePod(pb.RemovePodRequest(uid=f"uid-{i}"), timeout=10)
                removed += 1
                i += 1
            elapsed = time.monotonic() - start
            print(
                f"one call at a time, {elapsed:.0f} s: {admitted / elapsed:.0f} admissions/s + "
                f"{removed / elapsed:.0f} removals/s, {errors} errors"
            )
            load = uvloop.run(sustained(str(daemon.socket), in_flight, seconds))
            print(
                f"{in_flight} calls in flight, {load.elapsed:.0f} s: {load.admitted / load.elapsed:.0f} "
                f"admissions/s + {load.removed / load.elapsed:.0f} removals/s, {load.errors} errors; "
                f"Admit median {fmt(statistics.median(load.latencies))}  "
                f"p99 {fmt(sorted(load.latencies)[int(len(load.latencies) * 0.99)])}"
            )
        finally:
            daemon.stop()


class Load:
    def __init__(self) -> None:
        self.admitted = self.removed = self.errors = 0
        self.elapsed = 0.0
        self.latencies: list[float] = []


async def sustained(socket: str, in_flight: int, seconds: float) -> Load:
    """``in_flight`` admit-then-remove loops over one channel; an error is a refusal or a failed call."""
    load = Load()
    async with grpc.aio.insecure_channel(f"unix:{socket}") as channel:
        stub = pb_grpc.AdmissionStub(channel)
        deadline = time.monotonic() + seconds

        async def loop(k: int) -> None:
            i = 10_000_000 * (k + 1)
            while time.monotonic() < deadline:
                request = pb.AdmitRequest(pod=pb.PodSource(manifest=manifest(i)))
                started = time.perf_counter()
                try:
                    reply = await stub.Admit(request, timeout=10)
                    load.latencies.append(time.perf_counter() - started)
                    if not reply.admitted:
                        load.errors += 1
                        continue
                    load.admitted += 1
                    await stub.RemovePod(pb.RemovePodRequest(uid=f"uid-{i}"), timeout=10)
                    load.removed += 1
                except grpc.RpcError:
                    load.errors += 1
                finally:
                    i += 1

        start = time.monotonic()
        await asyncio.gather(*(loop(k) for k in range(in_flight)))
        load.elapsed = time.monotonic() - start
    return load


if __name__ == "__main__":
    main()
