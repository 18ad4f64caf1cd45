"""``kubeletemu nodes`` at scale against the loopback control plane: what N nodes cost, and the same per node
at the largest N as a ratio to the smallest (the reference, measured in the same run).

Run: python benchmarks/bench_nodes.py [--nodes 100 1000] [--steady 60] [--pods-per-node 1]
     [--join-timeout 900]

One control plane for the run: etcd, kube-apiserver, kube-scheduler and kube-controller-manager from
tests/upstream (built on first use, or taken from KUBELETEMU_UPSTREAM_ASSETS); the controller manager's node
lifecycle controller lifts the not-ready taint, so the scheduler binds. For each N, ``kubeletemu nodes`` runs
N nodes of a 2-socket, 16-CPU machine under the static CPU Manager and single-numa-node, with the kubelet's
default heartbeats (Lease every 10 s, status checked every 10 s, posted every 5 min), and is measured on
``/proc``:

- start-up: until the process says every node joined, and until the API server shows all N Ready and
  untainted;
- steady state: the CPU it uses over ``--steady`` seconds of heartbeats alone (so nodes per core), its
  resident memory (so memory per node: RSS / N, and the slope between the smallest and the largest N), and
  beside it the CPU and memory of the API server, etcd, the scheduler and the controller manager, with the
  load average (the machine's other work shows there);
- pods: ``--pods-per-node`` x N Guaranteed 2-CPU pods created at once and bound by the real kube-scheduler:
  the time until all are bound and all Running, each pod's creation-to-Ready (p50, p99; the API server's
  timestamps have whole seconds), and the CPU the nodes' process spent on them.

``--kubeconfig`` measures against a running cluster instead (its own scheduler binds; its components are not
measured).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
LABEL = "bench"
NAMESPACE = "default"
TICKS = os.sysconf("SC_CLK_TCK")
POLL_S = 2.0
TIMEOUT_S = 1800.0


@dataclass
class Cluster:
    """The cluster measured: its kubeconfig, a kubectl, and the components' processes when ours."""

    kubeconfig: Path
    kubectl_path: str
    components: dict[str, int] = field(default_factory=dict)  # name -> pid
    stop: Callable[[], None] = lambda: None

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.kubectl_path, f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )


def loopback_cluster() -> Cluster:
    plane = ControlPlane.start(build.ensure(None))
    try:
        plane.start_scheduler()
        plane.start_controller_manager()
    except BaseException:
        plane.stop()
        raise
    cluster = Cluster(plane.kubeconfig, str(plane.assets.path("kubectl")), stop=plane.stop)
    cluster.components = {p.name: p.popen.pid for p in plane.processes}
    # Pods need their namespace's default ServiceAccount, which the controller manager makes.
    wait_until(lambda: cluster.kubectl("get", "sa", "default", "-n", NAMESPACE, check=False).returncode == 0)
    return cluster


def wait_until(probe: Callable[[], bool], timeout: float = TIMEOUT_S, *, fail: bool = True) -> bool:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            if fail:
                raise SystemExit("timed out")
            return False
        time.sleep(POLL_S)
    return True


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


@contextmanager
def cpu_of(pids: dict[str, int]) -> Iterator[dict[str, float]]:
    """Each process's CPU over the block, in cores (filled in when the block ends)."""
    out: dict[str, float] = {}
    start = {name: cpu_seconds(pid) for name, pid in pids.items()}
    began = time.monotonic()
    yield out
    elapsed = time.monotonic() - began
    out.update({name: (cpu_seconds(pid) - start[name]) / elapsed for name, pid in pids.items()})


def node_states(cluster: Cluster, group: str) -> list[str]:
    """One line per node of the group: its Ready status and its taints' keys."""
    template = (
        '{range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {.spec.taints[*].key}{"\\n"}{end}'
    )
    out = cluster.kubectl("get", "nodes", "-l", f"{LABEL}={group}", "-o", f"jsonpath={template}").stdout
    return out.splitlines()


def schedulable(cluster: Cluster, group: str, count: int) -> bool:
    lines = node_states(cluster, group)
    return len(lines) == count and all(line.startswith("True") and "not-ready" not in line for line in lines)


def pod_manifest(group: str, index: int) -> dict[str, Any]:
    resources = {"cpu": "2", "memory": "1Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{group}-{index:05d}", "namespace": NAMESPACE, "labels": {LABEL: group}},
        "spec": {
            "nodeSelector": {LABEL: group},
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": resources, "limits": resources}}
            ],
        },
    }


def pod_phases(cluster: Cluster, group: str) -> list[tuple[str, str]]:
    out = cluster.kubectl(
        "get", "pods", "-n", NAMESPACE, "-l", f"{LABEL}={group}", "--no-headers",
        "-o", "custom-columns=NODE:.spec.nodeName,PHASE:.status.phase",
    ).stdout  # fmt: skip
    return [(line.split()[0], line.split()[1]) for line in out.splitlines() if line.strip()]


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def ready_latencies(cluster: Cluster, group: str) -> list[float]:
    """Each Running pod's creation to its Ready condition, in seconds (the API server's whole seconds)."""
    listed = json.loads(
        cluster.kubectl("get", "pods", "-n", NAMESPACE, "-l", f"{LABEL}={group}", "-o", "json").stdout
    )
    out = []
    for pod in listed["items"]:
        conditions = pod["status"].get("conditions", [])
        ready = [
            c["lastTransitionTime"] for c in conditions if c["type"] == "Ready" and c["status"] == "True"
        ]
        if ready:
            created = _time(pod["metadata"]["creationTimestamp"])
            out.append((_time(ready[0]) - created).total_seconds())
    return sorted(out)


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")


def run_one(
    cluster: Cluster, workdir: Path, count: int, steady: float, pods_per_node: int, join_timeout: float
) -> dict[str, Any]:
    """One N. Not joined within ``join_timeout``: what it reached (nodes registered and Ready, the CPU it
    got and its memory) is measured instead, and no pods are made."""
    group = f"b{count}"
    path = nodes_file(workdir, group, count, KUBELET_CONFIG, label=LABEL, latency="1s")
    err = workdir / f"{group}.err"
    argv = [sys.executable, "-m", "kubeletemu", "nodes", "-f", str(path), "--kubeconfig",
            str(cluster.kubeconfig), "--state-dir", str(workdir / f"state-{group}"), "--announce",
            "--log-level", "warning"]  # fmt: skip
    row: dict[str, Any] = {"nodes": count}
    started = time.monotonic()
    with open(err, "wb") as stderr:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
    try:

        def joined() -> bool:
            if process.poll() is not None:
                raise SystemExit(f"kubeletemu nodes exited: {err.read_text()}")
            return "joined" in err.read_text()

        reached = wait_until(joined, join_timeout, fail=False)
        if reached:
            row["joined_s"] = time.monotonic() - started
            wait_until(lambda: schedulable(cluster, group, count))
            row["ready_s"] = time.monotonic() - started
            time.sleep(10)  # the start-up's last writes settle
        row["startup_cpu_s"] = cpu_seconds(process.pid)
        pids = {"nodes": process.pid, **cluster.components}
        row["load_before"] = os.getloadavg()[0]
        with cpu_of(pids) as cores:
            time.sleep(steady)
        row["load_after"] = os.getloadavg()[0]
        row["steady_cores"] = cores
        row["rss_mib"] = {name: rss_bytes(pid) / 2**20 for name, pid in pids.items()}
        states = node_states(cluster, group)
        row["registered"], row["ready_nodes"] = len(states), sum(1 for s in states if s.startswith("True"))
        if not reached:
            return row

        total = count * pods_per_node
        items = [pod_manifest(group, i) for i in range(total)]
        with cpu_of({"nodes": process.pid}) as pod_cores:
            begin = time.monotonic()
            listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
            cluster.kubectl("create", "-f", "-", input=listed, timeout=TIMEOUT_S)
            row["created_s"] = time.monotonic() - begin
            bound_at = None
            while True:
                phases = pod_phases(cluster, group)
                bound = sum(1 for node, _ in phases if node != "<none>")
                if bound_at is None and bound >= total:
                    bound_at = time.monotonic() - begin
                done = [phase for _, phase in phases if phase in ("Running", "Failed")]
                if len(done) >= total:
                    break
                if time.monotonic() - begin > TIMEOUT_S:
                    raise SystemExit(f"{len(done)} of {total} pods done after {TIMEOUT_S} s")
                time.sleep(POLL_S)
            row["running_s"] = time.monotonic() - begin
        row["bound_s"] = bound_at if bound_at is not None else row["running_s"]
        row["pods"] = total
        row["pods_failed"] = sum(1 for _, phase in phases if phase == "Failed")
        row["pods_nodes"] = len({node for node, _ in phases})
        row["pods_cpu_s"] = pod_cores["nodes"] * row["running_s"]
        latencies = ready_latencies(cluster, group)
        row["ready_p50_s"], row["ready_p99_s"] = percentile(latencies, 0.5), percentile(latencies, 0.99)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    selector = f"{LABEL}={group}"
    cluster.kubectl("delete", "pods", "-n", NAMESPACE, "-l", selector, "--grace-period=0", "--force",
                    "--wait=false", check=False)  # fmt: skip
    cluster.kubectl("delete", "nodes", "-l", f"{LABEL}={group}", "--wait=false", check=False)
    return row


def report(rows: list[dict[str, Any]]) -> None:
    print()
    print(f"{'nodes':>6} {'joined':>8} {'Ready':>8} {'CPU':>7} {'nodes/core':>10} {'RSS':>8} {'RSS/node':>9} "
          f"{'pods bound':>10} {'Running':>8} {'p50':>5} {'p99':>5} {'load':>5}")  # fmt: skip
    for r in rows:
        cpu = r["steady_cores"]["nodes"]
        rss = r["rss_mib"]["nodes"]
        if "joined_s" not in r:
            reached = f"{r['registered']} registered, {r['ready_nodes']} Ready"
            print(f"{r['nodes']:>6} not joined: {reached}; CPU {cpu * 1000:.0f}m (what it got), {rss:.0f}Mi, "
                  f"load {r['load_after']:.1f}")  # fmt: skip
            continue
        print(f"{r['nodes']:>6} {r['joined_s']:>7.1f}s {r['ready_s']:>7.1f}s {cpu * 1000:>5.0f}m "
              f"{r['nodes'] / cpu:>10.0f} {rss:>5.0f}Mi {rss * 1024 / r['nodes']:>7.0f}Ki "
              f"{r['bound_s']:>9.1f}s {r['running_s']:>7.1f}s {r['ready_p50_s']:>4.0f}s "
              f"{r['ready_p99_s']:>4.0f}s {r['load_after']:>5.1f}")  # fmt: skip
    components = [name for name in rows[-1]["steady_cores"] if name != "nodes"]
    if components:
        print()
        print("the control plane beside them (steady state):")
        for r in rows:
            parts = [
                f"{name} {r['steady_cores'][name] * 1000:.0f}m {r['rss_mib'][name]:.0f}Mi"
                for name in components
            ]
            print(f"{r['nodes']:>6} nodes: " + ", ".join(parts))
    if len(rows) >= 2:
        small, large = rows[0], rows[-1]
        span_nodes = large["registered"] - small["registered"]
        slope = (large["rss_mib"]["nodes"] - small["rss_mib"]["nodes"]) / span_nodes
        fixed = small["rss_mib"]["nodes"] - slope * small["nodes"]
        print()
        span = f"{small['registered']} -> {large['registered']}"
        print(f"memory per node: {slope * 1024:.0f} Ki (slope {span}), fixed {fixed:.0f} Mi")

        def per_node(r: dict[str, Any], key: Callable[[dict[str, Any]], float]) -> float:
            return key(r) / r["nodes"]

        for what, key in (
            ("CPU", lambda r: r["steady_cores"]["nodes"]),
            ("RSS", lambda r: r["rss_mib"]["nodes"]),
            ("start-up to Ready", lambda r: r["ready_s"]),
            ("pods to Running", lambda r: r["running_s"]),
        ):
            if "joined_s" not in large:
                print(f"per node at {large['nodes']}: not measured (the nodes did not all join)")
                break
            ratio = per_node(large, key) / per_node(small, key)
            print(f"per node at {large['nodes']} vs at {small['nodes']} (reference): {what} x{ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--steady", type=float, default=60.0)
    parser.add_argument("--join-timeout", type=float, default=900.0, help="seconds for N nodes to join")
    parser.add_argument("--pods-per-node", type=int, default=1)
    parser.add_argument("--kubeconfig", help="a running cluster's instead of starting the loopback one")
    parser.add_argument("--kubectl", default="kubectl", help="with --kubeconfig: the kubectl to call")
    args = parser.parse_args()
    cluster = Cluster(Path(args.kubeconfig), args.kubectl) if args.kubeconfig else loopback_cluster()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-nodes-") as tmp:
            for count in args.nodes:
                row = run_one(cluster, Path(tmp), count, args.steady, args.pods_per_node, args.join_timeout)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        cluster.stop()
    report(rows)


if __name__ == "__main__":
    main()
