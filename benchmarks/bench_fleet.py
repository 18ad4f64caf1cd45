"""The fleet what-if engine: how fast one large configuration runs, and what a local pool buys.

Run: python benchmarks/bench_fleet.py [--nodes 1000] [--pods 20000] [--sweep-scale 10]
1. One configuration, NodeResourceTopologyMatch with the overreserve cache (resync 5 s), on ``--nodes``
   synthetic nodes of 8 NUMA nodes each (2 sockets x 16 cores x 2 threads, 4 NUMA nodes per socket,
   single-numa-node, static CPU and Memory Managers), ``--pods`` Guaranteed pods arriving as a Poisson
   stream that keeps the fleet about three-quarters full: wall time and simulated pods per second (target:
   under 10 minutes for 1,000 nodes and 20,000 pods on a 2-CPU VM), and, measured in the same run, the same
   fleet under the NUMA-blind default scheduler with the ratio between the two.
2. A sweep of 8 configurations (passthrough/overreserve x exporter period 10 s/60 s x 2 seeds) on a fleet
   ``--sweep-scale`` times smaller, through ``kubeletemu.fleet.parallel.run_many`` with 2 workers and with
   1: the speed-up.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubeletemu.fleet.engine import run_configuration
from kubeletemu.fleet.parallel import run_many
from kubeletemu.fleet.spec import parse_fleet

FLEET = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Fleet
seed: 1
nodeGroups:
- name: n
  count: {nodes}
  topology:
    synthetic: {{sockets: 2, coresPerSocket: 16, threadsPerCore: 2, nodesPerSocket: 4, memoryGiBPerNode: 32}}
  config:
    apiVersion: kubelet.config.k8s.io/v1beta1
    kind: KubeletConfiguration
    topologyManagerPolicy: single-numa-node
    cpuManagerPolicy: static
    memoryManagerPolicy: Static
    kubeReserved: {{cpu: "1", memory: 1Gi}}
    reservedMemory:
    - numaNode: 0
      limits: {{memory: 1124Mi}}
exporter: {{period: 60s, jitter: 10s, onChange: {{delay: 1s}}}}
schedulers:
- {{name: default, model: default}}
- name: nrt
  model: NodeResourceTopologyMatch
  args: {{scoringStrategy: {{type: LeastAllocated}}, cacheResyncPeriodSeconds: 5}}
workload:
  templates:
  - weight: 3
    pod:
      metadata: {{name: s}}
      spec: {{containers: [{{name: c, resources: {{limits: {{cpu: "2", memory: 2Gi}}}}}}]}}
  - weight: 2
    pod:
      metadata: {{name: m}}
      spec: {{containers: [{{name: c, resources: {{limits: {{cpu: "4", memory: 4Gi}}}}}}]}}
  - weight: 1
    pod:
      metadata: {{name: l}}
      spec: {{containers: [{{name: c, resources: {{limits: {{cpu: "6", memory: 8Gi}}}}}}]}}
  rate: {rate}
  total: {pods}
  lifetime: {{exponential: 600s}}
  drain: 120s
matrix: {matrix}
"""


def fleet_text(nodes: int, pods: int, matrix: str) -> str:
    # Mean request ~3.3 CPUs x 600 s lifetime: this rate fills ~75 % of 63 allocatable CPUs per node.
    rate = round(nodes * 63 * 0.75 / (3.33 * 600), 3)
    return FLEET.format(nodes=nodes, pods=pods, rate=rate, matrix=matrix)


def one(nodes: int, pods: int) -> None:
    spec = parse_fleet(fleet_text(nodes, pods, "{schedulers: [nrt, default]}"), "bench-fleet.yaml")
    nrt, default = spec.configurations()
    timings = {}
    for config in (nrt, default):
        start = time.perf_counter()
        result = run_configuration(config)
        timings[config.scheduler] = wall = time.perf_counter() - start
        print(
            f"  {config.name:<45} {wall:8.1f} s wall  {result['pods_created'] / wall:7.1f} pods/s  "
            f"simulated {result['simulated_s']:.0f} s, {result['scheduling_attempts']} attempts, "
            f"{result['topology_affinity_errors']} TopologyAffinityError, "
            f"p99 pending {result['pending_p99_s']} s"
        )
    print(f"  NodeResourceTopologyMatch / NUMA-blind default: {timings['nrt'] / timings['default']:.2f}x")


def sweep(nodes: int, pods: int) -> None:
    matrix = "{schedulers: [nrt], caches: [passthrough, overreserve], resyncPeriods: [5s], " \
        "exporterPeriods: [10s, 60s], seeds: [1, 2]}"  # fmt: skip
    configs = parse_fleet(fleet_text(nodes, pods, matrix), "bench-sweep.yaml").configurations()
    assert len(configs) == 8, [c.name for c in configs]
    walls = {}
    results = {}
    for workers in (1, 2):
        start = time.perf_counter()
        results[workers] = run_many(configs, workers=workers)
        walls[workers] = time.perf_counter() - start
        print(
            f"  8 configurations ({nodes} nodes, {pods} pods each), {workers} worker(s): "
            f"{walls[workers]:.1f} s"
        )
    assert results[1] == results[2], "the pool changed a result"
    print(f"  speed-up with 2 workers: {walls[1] / walls[2]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument(
        "--sweep-scale", type=int, default=10, help="the sweep's fleet is this many times smaller"
    )
    args = parser.parse_args()
    print(f"one configuration: {args.nodes} nodes x 8 NUMA nodes, {args.pods} pods")
    one(args.nodes, args.pods)
    small_nodes, small_pods = max(1, args.nodes // args.sweep_scale), max(1, args.pods // args.sweep_scale)
    print("sweep on the local pool:")
    sweep(small_nodes, small_pods)


if __name__ == "__main__":
    main()
