"""The kubelet's resource-manager metrics (``pkg/kubelet/metrics/metrics.go``), names and all.

The kubelet registers them under subsystem ``kubelet`` with component-base, whose text exposition differs
from prometheus-client's in two ways that matter to dashboards built on the kubelet: a counter keeps its
name as written (``kubelet_container_aligned_compute_resources_count``, no ``_total`` appended) and no
``_created`` series exist. So the values live in prometheus-client objects (thread-safe, the familiar
``.inc()``/``.labels()``/``.observe()``), and :class:`KubeletMetrics` re-exposes them under the kubelet's
exact names; :func:`render` writes the text format the kubelet's ``/metrics`` serves, HELP texts carrying
component-base's ``[ALPHA]`` stability marker.

Each :class:`KubeletMetrics` lives in its own ``CollectorRegistry`` (not the process-global one), so a test
can run several daemons side by side.

The resource managers' metrics move where the kubelet moves them (read at kubernetes/kubernetes
121460defea7874f50c64bb8de51018a86c6eef3, see :mod:`kubeletemu.cpumanager.metrics` for the CPU manager and
the other revisions read): the engine counts and computes them, and :meth:`KubeletMetrics.sync_node` copies
a :class:`~kubeletemu.daemon.node_metrics.NodeMetrics` snapshot in after every change of the live node
(counters by their increase, gauges set). The zero series the kubelet creates at start come with the first
sync of a node: the Topology Manager's (``NewManager`` always builds one) and, under the static CPU policy,
its ``initializeMetrics`` ones. Counters restart from 0 with the process, as the kubelet's do; what-if
questions run on copies with counters of their own and never reach these objects.
"""

from __future__ import annotations

import http.server
import math
import socket
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric

from kubeletemu.cpumanager.metrics import CPUManagerGauges
from kubeletemu.daemon.node_metrics import NodeMetrics, read_node_metrics
from kubeletemu.podresources.metrics import PodResourcesMetrics

if TYPE_CHECKING:
    from kubeletemu.emulator import NodeEmulator

SUBSYSTEM = "kubelet"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Label keys and values of container_aligned_compute_resources_{count,failure_count}.
SCOPE_LABEL = "scope"
BOUNDARY_LABEL = "boundary"
ALIGN_SCOPE_CONTAINER = "container"
ALIGN_SCOPE_POD = "pod"
ALIGNED_PHYSICAL_CPU = "physical_cpu"
ALIGNED_NUMA_NODE = "numa_node"
ALIGNED_UNCORE_CACHE = "uncore_cache"


class MetricsAddressError(ValueError):
    """A ``metricsAddress`` that is not ``host:port``."""


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """component-base ``ExponentialBuckets``: ``start * factor**i`` by repeated multiplication, as Go does."""
    buckets = []
    value = start
    for _ in range(count):
        buckets.append(value)
        value *= factor
    return buckets


# TopologyManagerAdmissionDuration: ExponentialBuckets(.05, 2, 15), in milliseconds.
TOPOLOGY_MANAGER_ADMISSION_DURATION_BUCKETS = exponential_buckets(0.05, 2, 15)


@dataclass(frozen=True)
class _Spec:
    attr: str  # attribute on KubeletMetrics; also the kubelet's name without the subsystem
    kind: str  # counter | gauge | histogram
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()

    @property
    def name(self) -> str:
        return f"{SUBSYSTEM}_{self.attr}"


_SPECS = (
    _Spec(
        "topology_manager_admission_requests_total",
        "counter",
        "The number of admission requests where resources have to be aligned.",
    ),
    _Spec(
        "topology_manager_admission_errors_total",
        "counter",
        "The number of admission request failures where resources could not be aligned.",
    ),
    _Spec(
        "topology_manager_admission_duration_ms",
        "histogram",
        "Duration in milliseconds to serve a pod admission request.",
        buckets=tuple(TOPOLOGY_MANAGER_ADMISSION_DURATION_BUCKETS),
    ),
    _Spec(
        "cpu_manager_pinning_requests_total",
        "counter",
        "The number of cpu core allocations which required pinning.",
    ),
    _Spec(
        "cpu_manager_pinning_errors_total",
        "counter",
        "The number of cpu core allocations which required pinning failed.",
    ),
    _Spec(
        "cpu_manager_shared_pool_size_millicores",
        "gauge",
        "The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.",
    ),
    _Spec(
        "cpu_manager_exclusive_cpu_allocation_count",
        "gauge",
        "The total number of CPUs exclusively allocated to containers running on this node",
    ),
    _Spec(
        "cpu_manager_allocation_per_numa",
        "gauge",
        "Number of CPUs allocated per NUMA node",
        labels=("numa_node",),
    ),
    _Spec(
        "memory_manager_pinning_requests_total",
        "counter",
        "The number of memory pages allocations which required pinning.",
    ),
    _Spec(
        "memory_manager_pinning_errors_total",
        "counter",
        "The number of memory pages allocations which required pinning that failed.",
    ),
    _Spec(
        "container_aligned_compute_resources_count",
        "counter",
        "Cumulative number of aligned compute resources allocated to containers by alignment type.",
        labels=(SCOPE_LABEL, BOUNDARY_LABEL),
    ),
    _Spec(
        "container_aligned_compute_resources_failure_count",
        "counter",
        "Cumulative number of failures to allocate aligned compute resources to containers "
        "by alignment type.",
        labels=(SCOPE_LABEL, BOUNDARY_LABEL),
    ),
    _Spec(
        "pod_resources_endpoint_requests_total",
        "counter",
        "Cumulative number of requests to the PodResource endpoint. Broken down by server api version.",
        labels=("server_api_version",),
    ),
    _Spec(
        "pod_resources_endpoint_requests_list",
        "counter",
        "Number of requests to the PodResource List endpoint. Broken down by server api version.",
        labels=("server_api_version",),
    ),
    _Spec(
        "pod_resources_endpoint_requests_get_allocatable",
        "counter",
        "Number of requests to the PodResource GetAllocatableResources endpoint. "
        "Broken down by server api version.",
        labels=("server_api_version",),
    ),
    _Spec(
        "pod_resources_endpoint_requests_get",
        "counter",
        "Number of requests to the PodResource Get endpoint. Broken down by server api version.",
        labels=("server_api_version",),
    ),
    _Spec(
        "pod_resources_endpoint_errors_list",
        "counter",
        "Number of requests to the PodResource List endpoint which returned error. "
        "Broken down by server api version.",
        labels=("server_api_version",),
    ),
    _Spec(
        "pod_resources_endpoint_errors_get_allocatable",
        "counter",
        "Number of requests to the PodResource GetAllocatableResources endpoint which returned error. "
        "Broken down by server api version.",
        labels=("server_api_version",),
    ),
    _Spec(
        "pod_resources_endpoint_errors_get",
        "counter",
        "Number of requests to the PodResource Get endpoint which returned error. "
        "Broken down by server api version.",
        labels=("server_api_version",),
    ),
)


class _ExactMetric(Metric):
    """A family whose sample names are final: :func:`render` writes it without prometheus-client's munging."""


class KubeletMetrics(PodResourcesMetrics):
    """The metric objects, one attribute per kubelet metric, registered as one collector in ``registry``
    (the podresources servers' counters are declared by the base class, the one those servers name).

    ``metrics.topology_manager_admission_requests_total.inc()``,
    ``metrics.container_aligned_compute_resources_count.labels("pod", "numa_node").inc()``.
    """

    topology_manager_admission_requests_total: Counter
    topology_manager_admission_errors_total: Counter
    topology_manager_admission_duration_ms: Histogram
    cpu_manager_pinning_requests_total: Counter
    cpu_manager_pinning_errors_total: Counter
    cpu_manager_shared_pool_size_millicores: Gauge
    cpu_manager_exclusive_cpu_allocation_count: Gauge
    cpu_manager_allocation_per_numa: Gauge
    memory_manager_pinning_requests_total: Counter
    memory_manager_pinning_errors_total: Counter
    container_aligned_compute_resources_count: Counter
    container_aligned_compute_resources_failure_count: Counter

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._objects: list[tuple[_Spec, Any]] = []
        for spec in _SPECS:
            # registry=None: the objects are private storage; this collector is what the registry sees.
            obj: Any
            if spec.kind == "counter":
                obj = Counter(spec.attr, spec.help, spec.labels, subsystem=SUBSYSTEM, registry=None)
            elif spec.kind == "gauge":
                obj = Gauge(spec.attr, spec.help, spec.labels, subsystem=SUBSYSTEM, registry=None)
            else:
                obj = Histogram(
                    spec.attr,
                    spec.help,
                    spec.labels,
                    subsystem=SUBSYSTEM,
                    registry=None,
                    buckets=spec.buckets,
                )
            setattr(self, spec.attr, obj)
            self._objects.append((spec, obj))
        # The node last synced (its counters are the baseline of the next sync) and the per-NUMA series set.
        self._node_lock = threading.Lock()
        self._node: NodeMetrics | None = None
        self._numa_labels: set[str] = set()
        self.registry.register(self)

    def init_topology_manager_series(self) -> None:
        """The zero series the kubelet's Topology Manager creates at start (``initializeMetrics``)."""
        for scope in (ALIGN_SCOPE_CONTAINER, ALIGN_SCOPE_POD):
            self.container_aligned_compute_resources_count.labels(scope, ALIGNED_NUMA_NODE).inc(0)
            self.container_aligned_compute_resources_failure_count.labels(scope, ALIGNED_NUMA_NODE).inc(0)

    def init_cpu_manager_series(self) -> None:
        """The zero series the static CPU policy creates at start (its ``initializeMetrics``)."""
        failure = self.container_aligned_compute_resources_failure_count
        failure.labels(ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU).inc(0)
        aligned = self.container_aligned_compute_resources_count
        aligned.labels(ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU).inc(0)
        aligned.labels(ALIGN_SCOPE_CONTAINER, ALIGNED_UNCORE_CACHE).inc(0)

    def observe_node(self, emulator: NodeEmulator) -> None:
        """:meth:`sync_node` with the live node's values now (call it where the node is read: under the
        daemon's lock, or before serving)."""
        self.sync_node(read_node_metrics(emulator))

    def sync_node(self, node: NodeMetrics) -> None:
        """Bring the resource managers' metrics to ``node``: after start-up (restored pods included), a
        SIGHUP reload, a new shadow mirror, and every admission and removal.

        A node not synced before is a kubelet starting: its zero series are created and its counters are
        the baseline (what building it counted, e.g. a shadow mirror replaying the kubelet's pods, is not
        this daemon's doing). Later syncs of the same node add each counter's increase.
        """
        with self._node_lock:
            last = self._node
            if last is None or not node.same_node(last):
                self.init_topology_manager_series()
                if node.cpu.static:
                    self.init_cpu_manager_series()
                last = node
            cpu, memory = node.cpu, node.memory
            _add(self.cpu_manager_pinning_requests_total, cpu.pinning_requests - last.cpu.pinning_requests)
            _add(self.cpu_manager_pinning_errors_total, cpu.pinning_errors - last.cpu.pinning_errors)
            _add(
                self.memory_manager_pinning_requests_total,
                memory.pinning_requests - last.memory.pinning_requests,
            )
            _add(self.memory_manager_pinning_errors_total, memory.pinning_errors - last.memory.pinning_errors)
            aligned = self.container_aligned_compute_resources_count
            failed = self.container_aligned_compute_resources_failure_count
            _add_labelled(
                aligned,
                (ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU),
                cpu.aligned_physical_cpu - last.cpu.aligned_physical_cpu,
            )
            _add_labelled(
                failed,
                (ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU),
                cpu.aligned_physical_cpu_failures - last.cpu.aligned_physical_cpu_failures,
            )
            _add_labelled(
                aligned,
                (ALIGN_SCOPE_CONTAINER, ALIGNED_UNCORE_CACHE),
                cpu.aligned_uncore_cache - last.cpu.aligned_uncore_cache,
            )
            self._set_cpu_gauges(cpu.gauges)
            self._node = node

    def _set_cpu_gauges(self, gauges: CPUManagerGauges | None) -> None:
        """The static policy's gauges as it set them. Without them (the none policy never sets any) the
        unlabelled ones read 0, as registered and never set, and no per-NUMA series exists."""
        per_numa = self.cpu_manager_allocation_per_numa
        if gauges is None:
            self.cpu_manager_shared_pool_size_millicores.set(0)
            self.cpu_manager_exclusive_cpu_allocation_count.set(0)
            per_numa.clear()
            self._numa_labels = set()
            return
        self.cpu_manager_shared_pool_size_millicores.set(gauges.shared_pool_millicores)
        self.cpu_manager_exclusive_cpu_allocation_count.set(gauges.exclusive_cpus)
        labels = {str(numa): count for numa, count in gauges.allocation_per_numa}
        for gone in self._numa_labels - labels.keys():
            per_numa.remove(gone)
        for label, count in labels.items():
            per_numa.labels(label).set(count)
        self._numa_labels = set(labels)

    def collect(self) -> Iterator[Metric]:
        for spec, obj in self._objects:
            family = _ExactMetric(spec.name, f"[ALPHA] {spec.help}", spec.kind)
            for source in obj.collect():
                for sample in _kubelet_samples(spec, source.samples):
                    family.add_sample(sample.name, sample.labels, sample.value)
            yield family


def _add(counter: Counter, increase: int) -> None:
    if increase > 0:
        counter.inc(increase)


def _add_labelled(counter: Counter, labels: tuple[str, ...], increase: int) -> None:
    """Only a real increase touches the series: ``labels()`` alone would create one the kubelet has not."""
    if increase > 0:
        counter.labels(*labels).inc(increase)


def _kubelet_samples(spec: _Spec, samples: Sequence[Any]) -> Iterator[Any]:
    """prometheus-client's samples renamed to the kubelet's; ``_created`` dropped; histogram series in Go's
    order (buckets, sum, count)."""
    if spec.kind == "counter":
        for sample in samples:
            if sample.name.endswith("_total"):
                yield sample._replace(name=spec.name)
    elif spec.kind == "gauge":
        yield from samples
    else:
        for suffix in ("_bucket", "_sum", "_count"):
            yield from (s for s in samples if s.name == spec.name + suffix)


def go_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)``, which the kubelet's exposition uses: ``1``, ``0.3``,
    ``1.234567e+06`` (prometheus-client would print ``1.0`` and ``1234567.0``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # decimal point position, as Go's decimal.dp
    prefix = "-" if sign else ""
    if point - 1 < -4 or point - 1 >= 6:  # shortest formatting: %e when exp < -4 || exp >= 6
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp = point - 1
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _escape_label(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class _Single:
    def __init__(self, metric: Metric) -> None:
        self._metric = metric

    def collect(self) -> Iterable[Metric]:
        return [self._metric]


def render(registry: CollectorRegistry) -> bytes:
    """The Prometheus text format (0.0.4) as the kubelet writes it; foreign collectors in the same registry
    are rendered by prometheus-client as usual."""
    out: list[str] = []
    for metric in registry.collect():
        if not isinstance(metric, _ExactMetric):
            out.append(generate_latest(_Single(metric)).decode())
            continue
        out.append(f"# HELP {metric.name} {_escape_help(metric.documentation)}\n")
        out.append(f"# TYPE {metric.name} {metric.type}\n")
        for sample in metric.samples:
            labels = ",".join(f'{k}="{_escape_label(v)}"' for k, v in sorted(sample.labels.items()))
            out.append(f"{sample.name}{{{labels}}}" if labels else sample.name)
            out.append(f" {go_float(sample.value)}\n")
    return "".join(out).encode()


def parse_address(address: str) -> tuple[str, int]:
    """``host:port``, ``[v6]:port`` or ``:port`` (all interfaces); port 0 picks a free one."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise MetricsAddressError(f"metrics address {address!r}: expected host:port, e.g. 127.0.0.1:10255")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise MetricsAddressError(
            f"metrics address {address!r}: write IPv6 hosts in brackets, e.g. [::1]:10255"
        )
    return host or "0.0.0.0", int(port)


class _Handler(http.server.BaseHTTPRequestHandler):
    registry: CollectorRegistry

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404, "only /metrics is served here")
            return
        body = render(self.registry)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would flood the journal; the access log is dropped."""


class MetricsServer:
    """``/metrics`` over HTTP on a background thread; ``close()`` stops it."""

    def __init__(self, address: str, registry: CollectorRegistry) -> None:
        host, port = parse_address(address)
        handler = type("MetricsHandler", (_Handler,), {"registry": registry})
        server_class = type(
            "MetricsHTTPServer",
            (http.server.ThreadingHTTPServer,),
            {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET, "daemon_threads": True},
        )
        self._server = server_class((host, port), handler)
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="metrics-http",
            daemon=True,
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_metrics_server(address: str, registry: CollectorRegistry) -> MetricsServer:
    """Serve ``registry`` at ``http://<address>/metrics`` (off unless the daemon is given an address)."""
    return MetricsServer(address, registry)
