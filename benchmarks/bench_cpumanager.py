"""CPU manager benchmark: take-by-topology and hint generation on a 2-socket, 8-NUMA, 384-CPU machine.

Run: ``.venv/bin/python benchmarks/bench_cpumanager.py``. Prints the median of each case in milliseconds;
the target is < 5 ms per call.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubeletemu.cpumanager import (
    CPUInfo,
    CPUSet,
    CPUTopology,
    StaticPolicy,
    take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
)
from kubeletemu.cpumanager.state import MemoryState
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyHint
from kubeletemu.topologymanager.policy_none import NonePolicy

SOCKETS, NUMA_PER_SOCKET, CORES_PER_NUMA, THREADS = 2, 4, 24, 2
REPEATS = 50


def machine() -> CPUTopology:
    """384 CPUs: core c has threads c and c+192; 24 cores per NUMA node, 4 NUMA nodes per socket,
    one uncore cache per 8 cores."""
    num_cores = SOCKETS * NUMA_PER_SOCKET * CORES_PER_NUMA
    cpus = []
    for core in range(num_cores):
        numa = core // CORES_PER_NUMA
        for thread in range(THREADS):
            cpus.append(CPUInfo(core + thread * num_cores, core, numa // NUMA_PER_SOCKET, numa, core // 8))
    return CPUTopology(cpus)


class _Store:
    """No stored hints (hint generation does not read them)."""

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        return TopologyHint()

    def get_policy(self) -> NonePolicy:
        return NonePolicy()


def median_ms(fn: Callable[[], object]) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def guaranteed_pod(cpus: int) -> Pod:
    quantities = {"cpu": Quantity(cpus), "memory": Quantity.parse("1Gi")}
    return Pod("p", "default", "uid", (Container("c", quantities, quantities),))


def main() -> None:
    topo = machine()
    rng = random.Random(42)
    everything = list(range(topo.num_cpus))
    # Busy nodes: CPUs taken at random, so no NUMA node or socket is whole.
    fragmented = sorted(rng.sample(everything, k=topo.num_cpus * 2 // 3))
    nearly_free = sorted(random.Random(0).sample(everything, k=topo.num_cpus * 9 // 10))
    print(f"topology: {topo}")
    results: list[tuple[str, float]] = []

    for label, available in (("all free", everything), ("9/10 free", nearly_free), ("2/3 free", fragmented)):
        for request in (1, 7, 48, 100, 250):
            if request > len(available):
                continue
            results.append(
                (
                    f"take_by_topology_numa_packed      {label:10} n={request:<3}",
                    median_ms(partial(take_by_topology_numa_packed, topo, available, request)),
                )
            )
        results.append(
            (
                f"take_by_topology_numa_packed      {label:10} n=7 uncore",
                median_ms(partial(take_by_topology_numa_packed, topo, available, 7, "packed", True)),
            )
        )
        # 154 and 262 CPUs are among the slowest requests for this machine (most combinations scored).
        for request, group in ((100, 1), (100, 2), (154, 1), (170, 2), (262, 1)):
            if request > len(available):
                continue
            results.append(
                (
                    f"take_by_topology_numa_distributed {label:10} n={request:<3} g={group}",
                    median_ms(partial(take_by_topology_numa_distributed, topo, available, request, group)),
                )
            )

    policy = StaticPolicy(topo, 2, None, _Store())
    for label, default in (("all free", everything), ("2/3 free", fragmented)):
        state = MemoryState()
        state.set_default_cpu_set(CPUSet(default))
        for request in (4, 60, 200):
            test_pod = guaranteed_pod(request)
            results.append(
                (
                    f"get_topology_hints (255 masks)    {label:10} n={request:<3}",
                    median_ms(partial(policy.get_topology_hints, state, test_pod, test_pod.containers[0])),
                )
            )
            results.append(
                (
                    f"get_pod_topology_hints            {label:10} n={request:<3}",
                    median_ms(partial(policy.get_pod_topology_hints, state, test_pod)),
                )
            )

    width = max(len(name) for name, _ in results)
    for name, value in results:
        flag = "" if value < 5 else "  <-- over 5 ms"
        print(f"{name:{width}}  median {value:7.3f} ms{flag}")


if __name__ == "__main__":
    main()
