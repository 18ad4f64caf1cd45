"""The fleet what-if engine's speed: every setup on one large fleet, and what a local pool and Ray buy.

Run: python benchmarks/bench_fleet.py [--nodes 1000] [--pods 20000]
         [--setups default,nrt,nrt-shared,exact,exact-numa] [--sweep-scale 10] [--seeds 5] [--no-ray]
         [--skip-sweep | --sweep-only]

1. One seed of each setup on ``--nodes`` synthetic nodes of 8 NUMA nodes each (2 sockets x 16 cores x 2
   threads, 4 NUMA nodes per socket, single-numa-node, static CPU and Memory Managers) with ``--pods``
   Guaranteed pods of three shapes arriving as a Poisson stream that keeps the fleet about three-quarters
   full: ``default`` (NUMA-blind), ``nrt`` (NodeResourceTopologyMatch, overreserve cache with its default
   Dedicated informer, resync 5 s, exporters every 60 s and on change; as shipped, the Dedicated informer
   leaves Pending pods out of the fingerprint, so nodes stop matching and pods are retried for the whole
   run: far more scheduling attempts than pods), ``nrt-shared`` (the same over the Shared informer),
   ``exact`` and ``exact-numa`` (each node's WouldAdmit as Filter).
   Printed per setup: wall and CPU seconds, simulated pods per second, the kubelet's WouldAdmit calls
   (exact setups), and the ratio to the NUMA-blind default measured in the same run. Target (issue 28):
   every setup under 10 minutes wall for 1,000 nodes and 20,000 pods on the 2-CPU CI machine.
2. ``--seeds`` seeds of 8 configurations (default, exact, NodeResourceTopologyMatch x passthrough /
   overreserve / discardreserved x exporters every 10 s / 60 s) on a fleet ``--sweep-scale`` times
   smaller, through ``kubeletemu.fleet.parallel.run_many`` with 1 worker, on the local pool (2 workers) and
   on a local Ray instance (the ``cluster`` extra; skipped when Ray is not installed or with ``--no-ray``):
   wall time, the speed-up over 1 worker, and a check that every runner gave the same results.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubeletemu.fleet.engine import FleetRun
from kubeletemu.fleet.parallel import LOCAL, run_many
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
exporter: {{period: 60s, notifyFile: true}}
schedulers:
- {{name: default, model: default}}
- name: nrt
  model: NodeResourceTopologyMatch
  args: {{scoringStrategy: {{type: LeastAllocated}}, cacheResyncPeriodSeconds: 5}}
- name: nrt-shared
  model: NodeResourceTopologyMatch
  args:
    scoringStrategy: {{type: LeastAllocated}}
    cacheResyncPeriodSeconds: 5
    cache: {{informerMode: Shared}}
- {{name: exact, model: exact}}
- {{name: exact-numa, model: exact-numa}}
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
SETUPS = ("default", "nrt", "nrt-shared", "exact", "exact-numa")
SWEEP = (
    "{{schedulers: [default, exact, nrt], caches: [passthrough, overreserve, discardreserved], "
    "resyncPeriods: [5s], exporterPeriods: [10s, 60s], seeds: [{seeds}]}}"
)
TARGET_S = 600.0


def fleet_text(nodes: int, pods: int, matrix: str) -> str:
    # Mean request ~3.3 CPUs x 600 s lifetime: this rate fills ~75 % of 63 allocatable CPUs per node.
    rate = round(nodes * 63 * 0.75 / (3.33 * 600), 3)
    return FLEET.format(nodes=nodes, pods=pods, rate=rate, matrix=matrix)


def one(nodes: int, pods: int, setups: list[str]) -> None:
    # The default first: the reference every other setup is measured against.
    order = ["default", *(s for s in setups if s != "default")]
    matrix = f"{{schedulers: [{', '.join(order)}], caches: [overreserve]}}"
    configs = {
        c.scheduler: c for c in parse_fleet(fleet_text(nodes, pods, matrix), "bench.yaml").configurations()
    }
    walls: dict[str, float] = {}
    for setup in order:
        config = configs[setup]
        wall0, cpu0 = time.perf_counter(), time.process_time()
        run = FleetRun(config)
        result = run.run()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        walls[setup] = wall
        would_admit = getattr(getattr(run.scheduler, "would_admit", None), "asked", None)
        asked = f", {would_admit} WouldAdmit calls" if would_admit is not None else ""
        verdict = "under" if wall < TARGET_S else "OVER"
        print(
            f"  {config.name:<40} {wall:7.1f} s wall ({verdict} 10 min), {cpu:7.1f} s CPU, "
            f"{result['pods_created'] / wall:6.1f} pods/s, {result['scheduling_attempts']} attempts{asked}, "
            f"{result['topology_affinity_errors']} TopologyAffinityError, "
            f"x{wall / walls['default']:.2f} the NUMA-blind default"
        )


def sweep(nodes: int, pods: int, seeds: int, ray: bool) -> None:
    matrix = SWEEP.format(seeds=", ".join(str(s) for s in range(1, seeds + 1)))
    configs = parse_fleet(fleet_text(nodes, pods, matrix), "bench-sweep.yaml").configurations()
    per_seed = len(configs) // seeds
    print(f"  {per_seed} configurations x {seeds} seeds = {len(configs)} runs of {nodes} nodes, {pods} pods")
    runners: list[tuple[str, dict[str, Any]]] = [
        ("1 worker", {"workers": 1}),
        ("pool, 2 workers", {"workers": 2}),
    ]
    if ray and importlib.util.find_spec("ray") is not None:
        runners.append(("Ray (local), 2 CPUs", {"workers": 2, "ray_address": LOCAL}))
    elif ray:
        print("  Ray: not installed (pip install 'kubeletemu[cluster]'), skipped")
    walls: dict[str, float] = {}
    reference: list[dict[str, Any]] | None = None
    for label, kwargs in runners:
        start = time.perf_counter()
        results = run_many(configs, **kwargs)
        walls[label] = wall = time.perf_counter() - start
        if reference is None:
            reference = results
        assert results == reference, f"{label} changed a result"
        print(f"  {label:<22} {wall:7.1f} s wall, x{walls['1 worker'] / wall:.2f} over 1 worker")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--setups", default=",".join(SETUPS), help="comma-separated, of " + ", ".join(SETUPS))
    parser.add_argument(
        "--sweep-scale", type=int, default=10, help="the sweep's fleet is this many times smaller"
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--sweep-only", action="store_true", help="only part 2")
    args = parser.parse_args()
    setups = [s for s in args.setups.split(",") if s]
    unknown = sorted(set(setups) - set(SETUPS))
    if unknown:
        parser.error(f"--setups: unknown {', '.join(unknown)}")
    if not args.sweep_only:
        print(f"one seed per setup: {args.nodes} nodes x 8 NUMA nodes, {args.pods} pods")
        one(args.nodes, args.pods, setups)
    if not args.skip_sweep:
        small_nodes = max(1, args.nodes // args.sweep_scale)
        small_pods = max(1, args.pods // args.sweep_scale)
        print("seeds x configurations, one worker against the pool and Ray:")
        sweep(small_nodes, small_pods, args.seeds, not args.no_ray)


if __name__ == "__main__":
    main()
