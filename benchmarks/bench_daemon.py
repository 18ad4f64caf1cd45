"""The daemon over its unix socket: Admit round trip, and sustained admissions + removals.

Run: python benchmarks/bench_daemon.py [--seconds 30]
Targets (issue 6): Admit round trip on a 2-NUMA capture, median < 2 ms; 500 admissions and removals
per second sustained for 30 s with no error. Uses the OpenShift 2-NUMA capture from
../shared/fixtures/sysfs when present, else the bundled sample topology (also 2 NUMA nodes).

Every admission makes its checkpoints durable (temporary file, fsync, rename) before it answers, so the
figures depend on the disk: they are printed for a state directory on disk and, where /dev/shm exists,
on tmpfs, which shows what the emulation itself costs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import fmt
from hostprobe.sample import write_sample_tree
from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.daemon.daemon_process import DaemonProcess
from tests.hostprobe.hostprobe_capture_support import sysfs_fixtures_dir

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
    tarball = sysfs_fixtures_dir() / f"{CAPTURE}.tar.gz"
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
    args = parser.parse_args()
    bases = [("disk", tempfile.gettempdir())]
    if Path("/dev/shm").is_dir():
        bases.append(("tmpfs", "/dev/shm"))
    for where, base in bases:
        print(f"== state directory on {where} ({base})")
        run(args.seconds, base)


def run(seconds: float, state_base: str) -> None:
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
                f"sustained for {elapsed:.0f} s: {admitted / elapsed:.0f} admissions/s + "
                f"{removed / elapsed:.0f} removals/s = {(admitted + removed) / elapsed:.0f} operations/s, "
                f"{errors} errors"
            )
        finally:
            daemon.stop()


if __name__ == "__main__":
    main()
