"""The podresources API and the pod-set fingerprint.

Run: python benchmarks/bench_podresources.py [--pods 250] [--samples 200]
Targets (issue 7): List with 250 pods of 3 containers over the podresources socket, median < 5 ms; the
fingerprint of 300 pods, median < 0.5 ms.

The real daemon (``kubeletemu serve``) runs on a synthetic 2-socket host (256 CPUs); a quarter of the pods
are Guaranteed with an exclusive CPU, a memory block and (some) a device per container, the rest share the
pool. The kubelet's rate limit (100 QPS, burst 10) applies, so the client paces its calls 11 ms apart, as
any well-behaved exporter must. In-process figures (no socket) are printed beside them.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hostprobe
from benchmarks._timing import fmt, measure
from hostprobe.synthetic import GIB_KIB, SyntheticHost, write_tree
from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu.config import load_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.podresources import fingerprint as pfp
from kubeletemu.podresources import nrt, view
from tests.daemon.daemon_process import DaemonProcess

LIST_TARGET_MS = 5.0
FINGERPRINT_TARGET_MS = 0.5
PACE_SECONDS = 0.011  # one call per token: the kubelet's limiter refills 100 a second

HOST = SyntheticHost(sockets=2, cores_per_socket=64, threads_per_core=2, node_memory_kib=128 * GIB_KIB)
CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
topologyManagerScope: container
cpuManagerPolicy: static
memoryManagerPolicy: Static
reservedSystemCPUs: "0"
maxPods: 1000
systemReserved: {memory: 924Mi}
reservedMemory:
- numaNode: 0
  limits: {memory: 1Gi}
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
nodeName: bench-node
devices:
- resourceName: example.com/nic
  devices:
"""


def config_text() -> str:
    devices = "".join(f"  - {{id: nic{i}, numaNodes: [{i % 2}]}}\n" for i in range(64))
    return CONFIG + devices


def pods(count: int, rnd: random.Random) -> str:
    """``count`` pods of 3 containers; every fourth Guaranteed with an exclusive CPU per container."""
    alphabet = string.ascii_lowercase + string.digits
    docs = []
    for i in range(count):
        name = f"app-{i}-7c9f8d6b5-{''.join(rnd.choices(alphabet, k=5))}"
        namespace = f"team-{i % 12}"
        if i % 4 == 0:
            nic = ', example.com/nic: "1"' if i % 8 == 0 else ""
            limits = [f'cpu: "1", memory: 128Mi{nic}', 'cpu: "1", memory: 128Mi', 'cpu: "1", memory: 64Mi']
            body = "".join(
                f"  - name: c{j}\n    resources: {{limits: {{{lim}}}}}\n" for j, lim in enumerate(limits)
            )
        else:
            body = "".join(f"  - name: c{j}\n    resources: {{requests: {{cpu: 10m}}}}\n" for j in range(3))
        docs.append(
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}, uid: uid-{i}}}\n"
            f"spec:\n  containers:\n{body}"
        )
    return "---\n".join(docs)


def paced_median(fn: Callable[[], object], samples: int) -> tuple[float, float]:
    for _ in range(5):
        fn()
        time.sleep(PACE_SECONDS)
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        time.sleep(PACE_SECONDS)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]


def bench_socket(workdir: Path, manifests: str, samples: int) -> float:
    sys_root, proc_root = write_tree(workdir / "host", HOST)
    config = workdir / "config.yaml"
    config.write_text(config_text())
    daemon = DaemonProcess(
        config=config,
        state_dir=workdir / "state",
        socket=workdir / "k.sock",
        sysfs_root=sys_root,
        procfs_root=proc_root,
        log=workdir / "daemon.log",
    ).start()
    try:
        stub = daemon.stub()
        docs = [doc for doc in manifests.split("---\n") if doc.strip()]
        for doc in docs:
            reply = stub.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=doc)), timeout=30)
            if not reply.admitted:
                raise SystemExit(f"setup: {reply.name} rejected: {reply.reason} {reply.message}")
        with daemon.podresources_channel() as channel:
            lister = v1_grpc.PodResourcesListerStub(channel)
            response = lister.List(v1.ListPodResourcesRequest(), timeout=10)
            containers = sum(len(p.containers) for p in response.pod_resources)
            print(
                f"daemon: {len(response.pod_resources)} pods, {containers} containers listed, "
                f"{response.ByteSize()} bytes"
            )
            median, p90 = paced_median(lambda: lister.List(v1.ListPodResourcesRequest(), timeout=10), samples)
            print(f"{'List over the socket':<48}median {fmt(median)}  p90 {fmt(p90)}")
            alloc_median, alloc_p90 = paced_median(
                lambda: lister.GetAllocatableResources(v1.AllocatableResourcesRequest(), timeout=10), samples
            )
            label = "GetAllocatableResources over the socket"
            print(f"{label:<48}median {fmt(alloc_median)}  p90 {fmt(alloc_p90)}")
            return median
    finally:
        daemon.stop()


def list_with_headers(emulator: NodeEmulator) -> bytes:
    """What the List handler does under the lock, plus the serialisation gRPC does after it."""
    listing = view.list_pods(emulator)
    for method in (pfp.METHOD_ALL, pfp.METHOD_WITH_EXCLUSIVE_RESOURCES):
        view.fingerprint_of(listing.pods, method)
    return listing.response.SerializeToString()


def bench_in_process(workdir: Path, manifests: str, repeat: int) -> float:
    sys_root, proc_root = write_tree(workdir / "host-local", HOST)
    config = workdir / "config-local.yaml"
    config.write_text(config_text())
    machine = Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))
    emulator = NodeEmulator(load_config([str(config)]), machine)
    for pod in parse_pods(manifests, "bench"):
        emulator.admit(pod)
    listed = view.list_pods(emulator).pods
    print(f"in process: {len(listed)} pods")
    for label, fn in (
        ("List (view.list_pods + fingerprints)", lambda: list_with_headers(emulator)),
        ("GetNodeResourceTopology (nrt)", lambda: nrt.node_resource_topology(emulator)),
    ):
        median, p90 = measure(fn, repeat=repeat)
        print(f"{label:<48}median {fmt(median)}  p90 {fmt(p90)}")
    worst = 0.0
    pairs = [(p.resources.namespace, p.resources.name) for p in listed]
    for label, fn in (
        (f"fingerprint.compute, {len(pairs)} pods", lambda: pfp.compute(pairs)),
        (
            f"node fingerprint (select + sign), {len(listed)} pods",
            lambda: view.node_fingerprint(emulator, pfp.METHOD_WITH_EXCLUSIVE_RESOURCES, listed),
        ),
        (
            f"node fingerprint, method all, {len(listed)} pods",
            lambda: view.node_fingerprint(emulator, pfp.METHOD_ALL, listed),
        ),
    ):
        median, p90 = measure(fn, repeat=repeat * 10)
        worst = max(worst, median)
        print(f"{label:<48}median {fmt(median)}  p90 {fmt(p90)}")
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=250, help="pods listed over the socket")
    parser.add_argument("--fingerprint-pods", type=int, default=300)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    rnd = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="bench-pr-", dir="/tmp") as tmp:
        workdir = Path(tmp)
        list_median = bench_socket(workdir, pods(args.pods, rnd), args.samples)
        fp_median = bench_in_process(workdir, pods(args.fingerprint_pods, rnd), max(20, args.samples // 4))
    ok = list_median * 1e3 < LIST_TARGET_MS and fp_median * 1e3 < FINGERPRINT_TARGET_MS
    verdict = "OK" if ok else "OVER TARGET"
    print(
        f"targets: List < {LIST_TARGET_MS} ms (median {list_median * 1e3:.2f} ms), fingerprint < "
        f"{FINGERPRINT_TARGET_MS} ms (worst median {fp_median * 1e3:.3f} ms) -> {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
