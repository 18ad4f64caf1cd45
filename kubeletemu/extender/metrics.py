"""The extender's Prometheus metrics, in a registry of its own (several servers can share a test process):

| metric | type | labels |
|---|---|---|
| ``kubeletemu_extender_request_duration_seconds`` | histogram | ``verb`` |
| ``kubeletemu_extender_requests_total`` | counter | ``verb``, ``code`` (HTTP status) |
| ``kubeletemu_extender_nodes`` | gauge | ``state``: fresh, never-reported, stale, disconnected |
| ``kubeletemu_extender_ledger_entries`` | gauge | |
| ``kubeletemu_extender_ledger_closed_total`` | counter | ``reason``: agent, ttl, refilter, bind-error |

The node and ledger series are read from the mirrors and the ledger when scraped.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubeletemu.scheduler.extender.ledger import Ledger
from kubeletemu.scheduler.extender.mirrors import Mirrors

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "kubeletemu_extender"
# A Filter over thousands of nodes takes milliseconds to tens of them; the scheduler gives up at 5 s.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class _StateCollector(Collector):
    def __init__(self, mirrors: Mirrors, ledger: Ledger) -> None:
        self.mirrors = mirrors
        self.ledger = ledger

    def collect(self) -> Iterator[Metric]:
        nodes = GaugeMetricFamily(
            f"{PREFIX}_nodes", "Nodes known to the extender, by mirror state.", labels=["state"]
        )
        for state, count in self.mirrors.counts().items():
            nodes.add_metric([state], count)
        yield nodes
        yield GaugeMetricFamily(
            f"{PREFIX}_ledger_entries", "Open in-flight placements.", value=len(self.ledger)
        )
        closed = CounterMetricFamily(
            f"{PREFIX}_ledger_closed", "In-flight placements closed, by why.", labels=["reason"]
        )
        for reason, count in self.ledger.closed.items():
            closed.add_metric([reason], count)
        yield closed


class ExtenderMetrics:
    def __init__(self, mirrors: Mirrors, ledger: Ledger) -> None:
        self.registry = CollectorRegistry()
        self.duration = Histogram(
            f"{PREFIX}_request_duration_seconds",
            "Time to answer a scheduler request, by verb.",
            ["verb"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            f"{PREFIX}_requests",
            "Scheduler requests answered, by verb and HTTP status.",
            ["verb", "code"],
            registry=self.registry,
        )
        self.registry.register(_StateCollector(mirrors, ledger))

    def render(self) -> bytes:
        data: bytes = generate_latest(self.registry)
        return data
