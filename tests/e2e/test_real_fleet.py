"""The fleet's oracle: the same workload on a real cluster and through ``kubeletemu fleet``.

A smaller case of ``benchmarks/bench_real_fleet.py``: the ten 2-NUMA nodes of
``tests/realfleet/fleet-small.yaml`` as ``kubeletemu nodes``, the real kube-controller-manager and a real
default kube-scheduler (fresh per seed), two seeds of 90 arrivals each from the fleet's own seeded stream.
The real NUMA-blind scheduler must make the kubelet refuse pods (TopologyAffinityError) as the simulated one
does, as often within the intervals over the seeds, and every slot must reach Running on both sides.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeletemu.fleet.spec import ConfigurationSpec, load_fleet
from tests.realfleet import compare
from tests.realfleet.cluster import RealCluster, SchedulerSetup
from tests.upstream import build

pytestmark = pytest.mark.slow

FLEET = Path(__file__).resolve().parents[1] / "realfleet" / "fleet-small.yaml"
SEEDS = (1, 2)
ARRIVALS = 90  # 30 s of arrivals at 3 a second


def small_case() -> list[ConfigurationSpec]:
    spec = load_fleet(FLEET)
    return [
        dataclasses.replace(c, workload=dataclasses.replace(c.workload, total=ARRIVALS))
        for c in compare.configurations(spec, "default", SEEDS)
    ]


@pytest.fixture(scope="module")
def real_cluster(upstream_assets: build.Assets) -> Iterator[RealCluster]:
    spec = load_fleet(FLEET)
    names = [f"{g.name}-{i:03d}" for g in spec.node_groups for i in range(g.count)]
    cluster = RealCluster.start(upstream_assets, FLEET, names)
    try:
        yield cluster
    finally:
        cluster.stop()


def test_real_default_scheduler_agrees_with_the_fleet(real_cluster: RealCluster) -> None:
    configs = small_case()
    real = [real_cluster.run(c, SchedulerSetup("kube-scheduler-default")) for c in configs]
    simulated = compare.simulate(configs)
    rows = {r.measure: r for r in compare.rows("default", real, simulated)}
    detail = compare.table(list(rows.values())) + "\n" + compare.per_seed("default", real, simulated)
    for result in (*real, *simulated):
        assert result["never_running"] == 0, detail
        # The NUMA-blind scheduler binds pods the single-numa-node kubelet refuses, on both sides.
        assert result["topology_affinity_errors"] > 0, detail
    assert rows["topology_affinity_errors"].agrees, detail
    assert rows["scheduling_attempts"].agrees, detail
