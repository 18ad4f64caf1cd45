"""``kubeletemu extender`` at scale: Filter and Prioritize over N mirrored nodes per pod, beside the same pods
through NodeResourceTopologyMatch's model over the same nodes' NodeResourceTopology objects (the reference,
measured in the same run). Target (issue 45): 5,000 nodes under 100 ms p99 per pod, Filter and Prioritize.

Run: python benchmarks/bench_extender.py [--nodes 500 5000] [--pods 200] [--shapes 6] [--seed 1]

Each node is a mirror of a 2-socket, 16-CPU machine (static CPU and Memory Managers, single-numa-node),
filled by a seeded stream of Guaranteed pods, so that nodes differ (fleet ``filled``), or empty, as in a
new cluster (fleet ``empty``). Nodes in equal states (one state class, kubeletemu.scheduler.state_class)
share their answers: ``classes`` counts the distinct states at the start. The pods asked about come from
``--shapes`` pod shapes (1-6 CPUs); after each one, the node the extender ranked first admits it (as its
agent would report), so that node's kept answers are recomputed on the next pod. Printed per N:

- the request's JSON parse and the Filter reply's encoding (the wire, at N node names);
- Filter and Prioritize per pod: p50 and p99 over the pods, and the first pod of each shape apart (the cost
  of a shape seen for the first time over N nodes);
- NodeResourceTopologyMatch's Filter over the same N NRT objects per pod (its model: kubeletemu.scheduler
  .nrtmatch), and the ratio of the extender's p99 to it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.fleet.gc_tuning import fewer_collections
from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod
from kubeletemu.scheduler.extender.engine import Engine
from kubeletemu.scheduler.extender.ledger import Ledger
from kubeletemu.scheduler.extender.mirrors import Mirrors
from kubeletemu.scheduler.extender.protocol import encode_filter_result, parse_args
from kubeletemu.scheduler.live import node_info
from kubeletemu.scheduler.nrtmatch.filter import filter_pod
from kubeletemu.scheduler.state_class import state_class
from tests.nodes import probe_machine

KUBELET = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
cpuManagerPolicy: static
reservedSystemCPUs: "0"
memoryManagerPolicy: Static
reservedMemory: [{numaNode: 0, limits: {memory: 1124Mi}}]
kubeReserved: {memory: 1Gi}
evictionHard: {memory.available: 100Mi}
"""


def manifest(name: str, cpus: int, memory_gi: int = 1) -> dict[str, object]:
    resources = {"cpu": str(cpus), "memory": f"{memory_gi}Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": resources,
                                                                         "limits": resources}}]},
    }  # fmt: skip


def pod(name: str, cpus: int) -> Pod:
    return pod_from_manifest(manifest(name, cpus))


def fleet(count: int, seed: int, base: NodeEmulator, filled: bool) -> dict[str, NodeEmulator]:
    """``count`` nodes, each the base node with its own seeded stream of 0-4 pods admitted (or none)."""
    rng = random.Random(seed)
    nodes = {}
    for i in range(count):
        node = base.fork()
        for j in range(rng.randrange(5) if filled else 0):
            node.admit(pod(f"n{i}-p{j}", rng.randrange(1, 5)))
        nodes[f"worker-{i:05d}"] = node
    return nodes


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.1f} ms"


def run(count: int, pods: int, shapes: int, seed: int, base: NodeEmulator, filled: bool) -> dict[str, float]:
    nodes = fleet(count, seed, base, filled)
    classes = len({state_class(emulator) for emulator in nodes.values()})
    mirrors = Mirrors(stale_after=1e9)
    for generation, (name, emulator) in enumerate(nodes.items(), 1):
        mirrors.apply(name, generation, emulator)
    engine = Engine(mirrors, Ledger(ttl=1e9))
    names = list(nodes)
    infos = {name: node_info(emulator) for name, emulator in nodes.items()}  # RTE's NRT, as published
    rng = random.Random(seed + 1)
    sizes = [1 + (k % 6) for k in range(shapes)]
    parse_s: list[float] = []
    encode_s: list[float] = []
    filter_s: list[float] = []
    prioritize_s: list[float] = []
    nrt_s: list[float] = []
    first_filter: list[float] = []
    seen: set[int] = set()
    generation = len(nodes) + 1
    for k in range(pods):
        cpus = rng.choice(sizes)
        body = json.dumps({"Pod": manifest(f"ask-{k}", cpus), "Nodes": None, "NodeNames": names}).encode()
        start = time.perf_counter()
        args = parse_args(body)
        parse_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = engine.filter(args)
        elapsed = time.perf_counter() - start
        (first_filter if cpus not in seen else filter_s).append(elapsed)
        start = time.perf_counter()
        encode_filter_result(result)
        encode_s.append(time.perf_counter() - start)
        feasible = list(result.node_names or [])
        if len(feasible) > 1:
            args = dataclasses.replace(args, node_names=tuple(feasible))
            start = time.perf_counter()
            ranked = engine.prioritize(args)
            if cpus in seen:
                prioritize_s.append(time.perf_counter() - start)
            top = max(ranked or [], key=lambda h: h.score, default=None)
            chosen: str | None = top.host if top else feasible[0]
        else:
            chosen = feasible[0] if feasible else None
        seen.add(cpus)
        asked = pod(f"ask-{k}", cpus)
        start = time.perf_counter()
        for name in names:
            info = infos[name]
            filter_pod(asked, info.node, info.topology)
        nrt_s.append(time.perf_counter() - start)
        if chosen is not None:  # its agent admits it and reports the new state
            nodes[chosen].admit(asked)
            generation += 1
            mirrors.apply(chosen, generation, nodes[chosen])
            infos[chosen] = node_info(nodes[chosen])
    return {
        "nodes": count,
        "classes": classes,
        "parse_p50": statistics.median(parse_s),
        "encode_p50": statistics.median(encode_s),
        "filter_first_max": max(first_filter),
        "filter_p50": statistics.median(filter_s),
        "filter_p99": percentile(filter_s, 0.99),
        "prioritize_p50": statistics.median(prioritize_s) if prioritize_s else 0.0,
        "prioritize_p99": percentile(prioritize_s, 0.99) if prioritize_s else 0.0,
        "nrt_p99": percentile(nrt_s, 0.99),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--shapes", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        base = NodeEmulator(parse_config(KUBELET), probe_machine(Path(root)))
    columns = ("fleet", "nodes", "classes", "parse", "encode", "filter new", "filter p50", "filter p99",
               "prio p50", "prio p99", "NRT p99", "x NRT")  # fmt: skip
    print(" ".join(f"{c:>11}" for c in columns))
    keys = ("parse_p50", "encode_p50", "filter_first_max", "filter_p50", "filter_p99", "prioritize_p50",
            "prioritize_p99", "nrt_p99")  # fmt: skip
    for count in args.nodes:
        for filled in (True, False):
            with fewer_collections():  # as the extender's process runs (kubeletemu.extender.server)
                r = run(count, args.pods, args.shapes, args.seed, base, filled)
            ratio = r["filter_p99"] / r["nrt_p99"] if r["nrt_p99"] else float("nan")
            label = "filled" if filled else "empty"
            print(f"{label:>11} {count:>11} {r['classes']:>11} " + " ".join(f"{ms(r[k]):>11}" for k in keys)
                  + f" {ratio:>11.2f}", flush=True)  # fmt: skip
    print("target: Filter and Prioritize p99 under 100 ms at 5,000 nodes.")
    print("'filter new': the first Filter of a pod shape (the worst over shapes);")
    print("x NRT: the extender's Filter p99 over NodeResourceTopologyMatch's model's.")


if __name__ == "__main__":
    main()
