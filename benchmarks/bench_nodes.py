"""``kubeletemu nodes`` at scale against the loopback control plane: what N nodes cost.

Run: python benchmarks/bench_nodes.py [--nodes 1 100 1000] [--steady 60] [--pods-per-node 1]

For each N: the control plane's API server (etcd + kube-apiserver from tests/upstream, built on first use or
taken from KUBELETEMU_UPSTREAM_ASSETS), then ``kubeletemu nodes`` with N nodes of a 2-socket, 16-CPU
machine under the static CPU Manager and single-numa-node, the kubelet's default heartbeats (Lease every
10 s, status checked every 10 s). Measured on the process (``/proc``): the time until every node has joined
(registered, Lease, first list of its pods), its resident memory then, the CPU it uses over ``--steady``
seconds of heartbeats alone, and the time to admit and run ``--pods-per-node`` pods bound to each node
directly (no scheduler: the nodes' cost, not kube-scheduler's). Memory per node is the slope between the
smallest and the largest N. The API server and etcd run on the same CPUs and are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from tests.e2e.test_nodes import nodes_file
from tests.upstream import build
from tests.upstream.controlplane import ControlPlane

KUBELET_CONFIG = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "kind": "KubeletConfiguration",
    "topologyManagerPolicy": "single-numa-node",
    "cpuManagerPolicy": "static",
    "reservedSystemCPUs": "0",
}
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Cluster:
    """A cluster already running: its kubeconfig and a kubectl (what the measurement uses of a plane)."""

    kubeconfig: Path
    kubectl_path: str

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.kubectl_path, f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def stop(self) -> None:
        pass


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def run_one(
    plane: ControlPlane | Cluster, workdir: Path, count: int, steady: float, pods_per_node: int
) -> dict[str, float]:
    group = f"b{count}"
    path = nodes_file(workdir, group, count, KUBELET_CONFIG, label="bench", latency="1s")
    err = workdir / f"{group}.err"
    argv = [
        sys.executable,
        "-m",
        "kubeletemu",
        "nodes",
        "-f",
        str(path),
        "--kubeconfig",
        str(plane.kubeconfig),
        "--state-dir",
        str(workdir / f"state-{group}"),
        "--announce",
        "--log-level",
        "warning",
    ]
    started = time.monotonic()
    with open(err, "wb") as stderr:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        while "joined" not in err.read_text():
            if process.poll() is not None:
                raise SystemExit(f"kubeletemu nodes exited: {err.read_text()}")
            time.sleep(0.2)
        joined = time.monotonic() - started
        rss = rss_bytes(process.pid)
        cpu0 = cpu_seconds(process.pid)
        time.sleep(steady)
        steady_cpu = (cpu_seconds(process.pid) - cpu0) / steady
        rss_steady = rss_bytes(process.pid)
        # Pods bound to each node directly: 2 CPUs each, Guaranteed.
        resources = {"cpu": "2", "memory": "1Gi"}
        items = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{group}-{i:04d}-{j}", "namespace": "default"},
                "spec": {
                    "nodeName": f"{group}-{i:03d}",
                    "containers": [
                        {
                            "name": "c",
                            "image": "pause",
                            "resources": {"requests": resources, "limits": resources},
                        }
                    ],
                },
            }
            for i in range(count)
            for j in range(pods_per_node)
        ]
        total = len(items)
        cpu1 = cpu_seconds(process.pid)
        start_pods = time.monotonic()
        plane.kubectl(
            "create",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
            timeout=600,
        )
        while True:
            listed = json.loads(
                plane.kubectl("get", "pods", "-n", "default", "-o", "json", timeout=300).stdout
            )
            running = sum(
                1
                for p in listed["items"]
                if p["metadata"]["name"].startswith(f"{group}-")
                and p.get("status", {}).get("phase") == "Running"
            )
            if running >= total:
                break
            time.sleep(1)
        pods_s = time.monotonic() - start_pods
        pods_cpu = cpu_seconds(process.pid) - cpu1
        rss_pods = rss_bytes(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    plane.kubectl(
        "delete",
        "pods",
        "-n",
        "default",
        "--all",
        "--grace-period=0",
        "--force",
        "--wait=false",
        check=False,
        timeout=300,
    )
    plane.kubectl("delete", "nodes", "-l", f"bench={group}", "--wait=false", check=False, timeout=300)
    return {
        "nodes": count,
        "joined_s": joined,
        "rss_mib": rss / 2**20,
        "rss_steady_mib": rss_steady / 2**20,
        "steady_cpu_cores": steady_cpu,
        "pods": total,
        "pods_running_s": pods_s,
        "pods_cpu_s": pods_cpu,
        "rss_with_pods_mib": rss_pods / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--steady", type=float, default=60.0)
    parser.add_argument("--pods-per-node", type=int, default=1)
    parser.add_argument("--kubeconfig", help="a running cluster's instead of starting the loopback one")
    parser.add_argument("--kubectl", default="kubectl", help="with --kubeconfig: the kubectl to call")
    args = parser.parse_args()
    plane: ControlPlane | Cluster = (
        Cluster(Path(args.kubeconfig), args.kubectl)
        if args.kubeconfig
        else ControlPlane.start(build.ensure(None))
    )
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-nodes-") as tmp:
            for count in args.nodes:
                row = run_one(plane, Path(tmp), count, args.steady, args.pods_per_node)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        plane.stop()
    if len(rows) >= 2:
        small, large = rows[0], rows[-1]
        per_node = (large["rss_steady_mib"] - small["rss_steady_mib"]) / (large["nodes"] - small["nodes"])
        print(
            f"memory per node: {per_node * 1024:.0f} KiB (slope {small['nodes']} -> {large['nodes']} nodes); "
            f"fixed: {small['rss_steady_mib'] - per_node * small['nodes']:.0f} MiB"
        )
        for row in rows:
            print(
                f"{row['nodes']:>5} nodes: joined in {row['joined_s']:.1f} s, "
                f"{row['rss_steady_mib']:.0f} MiB, "
                f"steady CPU {row['steady_cpu_cores'] * 100:.1f} % of a core; {row['pods']} pods Running in "
                f"{row['pods_running_s']:.1f} s ({row['pods_cpu_s']:.1f} CPU s)"
            )


if __name__ == "__main__":
    main()
