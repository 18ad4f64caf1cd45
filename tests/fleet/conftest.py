"""A small fleet for the quick tests, written into a temporary directory."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.nodes import kubelet_config, static_managers

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "kubeletemu" / "data" / "examples" / "fleet-reserve-cache.yaml"
)

# The static CPU and Memory Managers, 1 CPU and 1Gi kube-reserved.
KUBELET_CONFIG = kubelet_config("single-numa-node", managers=static_managers(1024))

SMALL = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Fleet
seed: 3
nodeGroups:
- name: small
  count: 6
  topology:
    synthetic: {sockets: 2, coresPerSocket: 8, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 32}
  config: [kubelet-config.yaml]
exporter: {period: 20s, notifyFile: true}
schedulers:
- {name: default, model: default}
- name: nrt
  model: NodeResourceTopologyMatch
  args: {scoringStrategy: {type: LeastAllocated}}
- {name: exact, model: exact}
workload:
  templates:
  - weight: 2
    pod: {metadata: {name: a}, spec: {containers: [{name: c, resources: {limits: {cpu: "3", memory: 2Gi}}}]}}
  - weight: 1
    pod: {metadata: {name: b}, spec: {containers: [{name: c, resources: {limits: {cpu: "6", memory: 4Gi}}}]}}
  rate: 2
  total: 150
  lifetime: {exponential: 30s}
  drain: 120s
matrix:
  schedulers: [default, nrt, exact]
  caches: [passthrough, overreserve]
  resyncPeriods: [5s]
  exporterPeriods: [20s, 5s]
  seeds: [3, 4]
"""


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Path:
    (tmp_path / "kubelet-config.yaml").write_text(KUBELET_CONFIG)
    (tmp_path / "fleet.yaml").write_text(SMALL)
    return tmp_path


class FakeClock:
    """A clock for one part alone: timers run in time order by :meth:`run_until`."""

    def __init__(self) -> None:
        self.time = 0.0
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.sequence = 0

    def now(self) -> float:
        return self.time

    def after(self, delay: float, action: Callable[[], None]) -> None:
        self.sequence += 1
        heapq.heappush(self.timers, (self.time + delay, self.sequence, action))

    def every(self, first: float, period: float, action: Callable[[], None]) -> None:
        def tick() -> None:
            action()
            self.after(period, tick)

        self.after(first, tick)

    def run_until(self, end: float) -> None:
        while self.timers and self.timers[0][0] <= end:
            self.time, _, action = heapq.heappop(self.timers)
            action()
        self.time = end
