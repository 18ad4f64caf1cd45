"""The kubelet's metrics, scraped from a real HTTP server on an ephemeral loopback port."""

from __future__ import annotations

import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.parser import text_string_to_metric_families

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.daemon.metrics import (
    ALIGN_SCOPE_CONTAINER,
    ALIGN_SCOPE_POD,
    ALIGNED_NUMA_NODE,
    CONTENT_TYPE,
    TOPOLOGY_MANAGER_ADMISSION_DURATION_BUCKETS,
    KubeletMetrics,
    MetricsAddressError,
    go_float,
    parse_address,
    render,
    start_metrics_server,
)
from tests.daemon.conftest import sample_config
from tests.daemon.daemon_process import DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

KUBELET_NAMES = {
    "kubelet_topology_manager_admission_requests_total": "counter",
    "kubelet_topology_manager_admission_errors_total": "counter",
    "kubelet_topology_manager_admission_duration_ms": "histogram",
    "kubelet_cpu_manager_pinning_requests_total": "counter",
    "kubelet_cpu_manager_pinning_errors_total": "counter",
    "kubelet_cpu_manager_shared_pool_size_millicores": "gauge",
    "kubelet_cpu_manager_exclusive_cpu_allocation_count": "gauge",
    "kubelet_cpu_manager_allocation_per_numa": "gauge",
    "kubelet_memory_manager_pinning_requests_total": "counter",
    "kubelet_memory_manager_pinning_errors_total": "counter",
    "kubelet_container_aligned_compute_resources_count": "counter",
    "kubelet_container_aligned_compute_resources_failure_count": "counter",
    "kubelet_pod_resources_endpoint_requests_total": "counter",
    "kubelet_pod_resources_endpoint_requests_list": "counter",
    "kubelet_pod_resources_endpoint_requests_get_allocatable": "counter",
    "kubelet_pod_resources_endpoint_requests_get": "counter",
    "kubelet_pod_resources_endpoint_errors_list": "counter",
    "kubelet_pod_resources_endpoint_errors_get_allocatable": "counter",
    "kubelet_pod_resources_endpoint_errors_get": "counter",
}


def scrape(url: str) -> tuple[str, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def sample_lines(text: str) -> dict[str, str]:
    """``name{labels}`` -> value, for every sample line."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = value
    return out


def test_scrape_exposes_the_kubelet_names_and_values() -> None:
    metrics = KubeletMetrics()
    metrics.init_topology_manager_series()
    metrics.topology_manager_admission_requests_total.inc(2)
    metrics.topology_manager_admission_errors_total.inc()
    metrics.topology_manager_admission_duration_ms.observe(0.3)
    metrics.topology_manager_admission_duration_ms.observe(70)
    metrics.container_aligned_compute_resources_count.labels(ALIGN_SCOPE_POD, ALIGNED_NUMA_NODE).inc()
    metrics.cpu_manager_shared_pool_size_millicores.set(13000)
    metrics.cpu_manager_allocation_per_numa.labels("1").set(4)
    metrics.pod_resources_endpoint_requests_list.labels("v1").inc()
    with start_metrics_server("127.0.0.1:0", metrics.registry) as server:
        assert server.port != 0
        content_type, text = scrape(server.url)
    assert content_type == CONTENT_TYPE

    families = {f.name: f for f in text_string_to_metric_families(text)}
    # The Python parser strips _total from counter family names; the TYPE lines carry the real ones.
    types = dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE"))
    assert types == KUBELET_NAMES
    assert len(families) == len(KUBELET_NAMES)

    samples = sample_lines(text)
    assert samples["kubelet_topology_manager_admission_requests_total"] == "2"
    assert samples["kubelet_topology_manager_admission_errors_total"] == "1"
    assert samples["kubelet_cpu_manager_pinning_requests_total"] == "0"
    assert samples["kubelet_cpu_manager_shared_pool_size_millicores"] == "13000"
    assert samples['kubelet_cpu_manager_allocation_per_numa{numa_node="1"}'] == "4"
    assert samples['kubelet_pod_resources_endpoint_requests_list{server_api_version="v1"}'] == "1"
    # Counters named like the kubelet's: no _total appended, no _created series.
    aligned = "kubelet_container_aligned_compute_resources_count"
    assert samples[f'{aligned}{{boundary="numa_node",scope="pod"}}'] == "1"
    assert samples[f'{aligned}{{boundary="numa_node",scope="container"}}'] == "0"
    failure = "kubelet_container_aligned_compute_resources_failure_count"
    assert samples[f'{failure}{{boundary="numa_node",scope="{ALIGN_SCOPE_CONTAINER}"}}'] == "0"
    assert not any("_created" in key or key.endswith("_count_total") for key in samples)
    assert "# HELP kubelet_topology_manager_admission_requests_total [ALPHA] The number of admission " in text


def test_admission_duration_histogram_has_the_kubelet_buckets() -> None:
    metrics = KubeletMetrics()
    metrics.topology_manager_admission_duration_ms.observe(0.3)
    metrics.topology_manager_admission_duration_ms.observe(70)
    text = render(metrics.registry).decode()
    name = "kubelet_topology_manager_admission_duration_ms"
    lines = [line for line in text.splitlines() if line.startswith(name)]
    expected_le = ["0.05", "0.1", "0.2", "0.4", "0.8", "1.6", "3.2", "6.4", "12.8", "25.6", "51.2", "102.4",
                   "204.8", "409.6", "819.2", "+Inf"]  # fmt: skip
    counts = [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]
    assert lines[:16] == [
        f'{name}_bucket{{le="{le}"}} {n}' for le, n in zip(expected_le, counts, strict=True)
    ]
    assert lines[16:] == [f"{name}_sum 70.3", f"{name}_count 2"]
    assert len(TOPOLOGY_MANAGER_ADMISSION_DURATION_BUCKETS) == 15


def test_registries_are_independent() -> None:
    first, second = KubeletMetrics(), KubeletMetrics()
    first.memory_manager_pinning_requests_total.inc(3)
    assert "kubelet_memory_manager_pinning_requests_total 3" in render(first.registry).decode()
    assert "kubelet_memory_manager_pinning_requests_total 0" in render(second.registry).decode()


def test_two_servers_side_by_side() -> None:
    first, second = KubeletMetrics(), KubeletMetrics()
    first.cpu_manager_pinning_errors_total.inc()
    with (
        start_metrics_server("127.0.0.1:0", first.registry) as one,
        start_metrics_server("127.0.0.1:0", second.registry) as two,
    ):
        assert one.port != two.port
        assert sample_lines(scrape(one.url)[1])["kubelet_cpu_manager_pinning_errors_total"] == "1"
        assert sample_lines(scrape(two.url)[1])["kubelet_cpu_manager_pinning_errors_total"] == "0"


def test_cpu_manager_initial_series() -> None:
    metrics = KubeletMetrics()
    metrics.init_cpu_manager_series()
    samples = sample_lines(render(metrics.registry).decode())
    aligned = "kubelet_container_aligned_compute_resources_count"
    assert samples[f'{aligned}{{boundary="physical_cpu",scope="container"}}'] == "0"
    assert samples[f'{aligned}{{boundary="uncore_cache",scope="container"}}'] == "0"
    failure = "kubelet_container_aligned_compute_resources_failure_count"
    assert samples[f'{failure}{{boundary="physical_cpu",scope="container"}}'] == "0"


def test_foreign_collectors_render_as_prometheus_client_does() -> None:
    registry = CollectorRegistry()
    KubeletMetrics(registry)
    Gauge("kubeletemu_build_info", "Build information.", ["version"], registry=registry).labels("0.1.0").set(
        1
    )
    text = render(registry).decode()
    assert 'kubeletemu_build_info{version="0.1.0"} 1.0' in text
    assert "kubelet_cpu_manager_pinning_requests_total 0\n" in text


def test_other_paths_are_not_found() -> None:
    metrics = KubeletMetrics()
    with start_metrics_server("127.0.0.1:0", metrics.registry) as server:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/", timeout=5)
        assert err.value.code == 404
        assert scrape(f"http://127.0.0.1:{server.port}/metrics?x=1")[1].startswith("# HELP")


def test_server_close_releases_the_port() -> None:
    server = start_metrics_server("127.0.0.1:0", KubeletMetrics().registry)
    port = server.port
    server.close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_ipv6_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 support in this Python")
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with start_metrics_server("[::1]:0", KubeletMetrics().registry) as server:
        assert server.url.startswith("http://[::1]:")
        assert "kubelet_topology_manager_admission_requests_total 0" in scrape(server.url)[1]


@pytest.mark.parametrize(
    ("address", "expected"),
    [("127.0.0.1:10255", ("127.0.0.1", 10255)), (":9100", ("0.0.0.0", 9100)), ("[::1]:0", ("::1", 0))],
)
def test_parse_address(address: str, expected: tuple[str, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("localhost", "expected host:port"),
        ("127.0.0.1:http", "expected host:port"),
        ("127.0.0.1:70000", "expected host:port"),
        ("::1:9100", "write IPv6 hosts in brackets"),
    ],
)
def test_parse_address_rejects(address: str, message: str) -> None:
    with pytest.raises(MetricsAddressError, match=message):
        parse_address(address)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (0.0, "0"),
        (70.3, "70.3"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5, "-2.5"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
        (float("nan"), "NaN"),
    ],
)
def test_go_float(value: float, text: str) -> None:
    assert go_float(value) == text


# ---- the resource managers' metrics, driven through the real daemon --------------------------------------

# The sample node (tests/daemon/conftest.py): 16 CPUs, NUMA 0 = 0-3,8-11 (socket 0), NUMA 1 = 4-7,12-15
# (socket 1); kubeReserved cpu 1 reserves CPU 0, so 15 CPUs (15000 millicores) are shared when idle.
# Without cache information a CPU's uncore cache is its socket.
SHARED = "kubelet_cpu_manager_shared_pool_size_millicores"
EXCLUSIVE = "kubelet_cpu_manager_exclusive_cpu_allocation_count"
PER_NUMA = "kubelet_cpu_manager_allocation_per_numa"
CPU_PINS = "kubelet_cpu_manager_pinning_requests_total"
CPU_PIN_ERRORS = "kubelet_cpu_manager_pinning_errors_total"
MEM_PINS = "kubelet_memory_manager_pinning_requests_total"
MEM_PIN_ERRORS = "kubelet_memory_manager_pinning_errors_total"
ALIGNED = "kubelet_container_aligned_compute_resources_count"
ALIGN_FAILED = "kubelet_container_aligned_compute_resources_failure_count"
# Created at start: by the Topology Manager (any policy) ...
TOPOLOGY_SERIES = {
    f'{name}{{boundary="numa_node",scope="{scope}"}}': "0"
    for name in (ALIGNED, ALIGN_FAILED)
    for scope in ("container", "pod")
}
# ... and by the static CPU policy's Start.
STATIC_CPU_SERIES = {
    f'{ALIGNED}{{boundary="physical_cpu",scope="container"}}': "0",
    f'{ALIGNED}{{boundary="uncore_cache",scope="container"}}': "0",
    f'{ALIGN_FAILED}{{boundary="physical_cpu",scope="container"}}': "0",
}
UNCORE = f'{ALIGNED}{{boundary="uncore_cache",scope="container"}}'
# The Topology Manager's single-numa-node count (container scope: one per admitted container).
NUMA_ALIGNED = f'{ALIGNED}{{boundary="numa_node",scope="container"}}'


def per_numa(node0: int, node1: int) -> dict[str, str]:
    return {f'{PER_NUMA}{{numa_node="0"}}': str(node0), f'{PER_NUMA}{{numa_node="1"}}': str(node1)}


def resource_samples(text: str) -> dict[str, str]:
    """The CPU and Memory Manager samples, and the alignment counters, of one scrape."""
    prefixes = ("kubelet_cpu_manager_", "kubelet_memory_manager_", "kubelet_container_aligned_")
    return {k: v for k, v in sample_lines(text).items() if k.startswith(prefixes)}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def guaranteed_pod(name: str, cpu: str, memory: str = "1Gi") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: uid-{name}}}\n"
        f"spec:\n  containers:\n  - name: app\n    resources:\n"
        f'      limits: {{cpu: "{cpu}", memory: {memory}}}\n'
    )


BURSTABLE_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: burstable, namespace: default, uid: uid-burstable}\n"
    "spec:\n  containers:\n  - name: app\n    resources:\n"
    '      requests: {cpu: "1", memory: 1Gi}\n'
)


class MetricsDaemon:
    """The real daemon with ``--metrics-address`` on a free loopback port, and its /metrics."""

    def __init__(self, daemon: DaemonProcess) -> None:
        self.daemon = daemon
        self.url = f"http://{daemon.extra_args[1]}/metrics"

    def scrape(self) -> dict[str, str]:
        return resource_samples(scrape(self.url)[1])

    def admit(self, manifest: str) -> pb.AdmitResponse:
        reply = self.daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
        assert isinstance(reply, pb.AdmitResponse)
        return reply

    def remove(self, uid: str) -> None:
        self.daemon.stub().RemovePod(pb.RemovePodRequest(uid=uid), timeout=10)


@pytest.fixture
def metrics_daemon(tmp_path: Path, sample_tree: tuple[Path, Path]) -> Iterator[Callable[..., MetricsDaemon]]:
    started: list[DaemonProcess] = []

    def start(policy: str = "single-numa-node", config: str | None = None) -> MetricsDaemon:
        text = sample_config(policy) if config is None else config
        metrics = ["--metrics-address", f"127.0.0.1:{free_port()}"]
        daemon = DaemonProcess.in_dir(tmp_path, text, sample_tree, metrics)
        started.append(daemon)
        return MetricsDaemon(daemon.start())

    yield start
    for daemon in started:
        daemon.stop()


def idle_node() -> dict[str, str]:
    return {
        **TOPOLOGY_SERIES,
        **STATIC_CPU_SERIES,
        SHARED: "15000",
        EXCLUSIVE: "0",
        **per_numa(0, 0),
        CPU_PINS: "0",
        CPU_PIN_ERRORS: "0",
        MEM_PINS: "0",
        MEM_PIN_ERRORS: "0",
    }


def test_start_creates_the_kubelet_zero_series_and_the_idle_gauges(
    metrics_daemon: Callable[..., MetricsDaemon],
) -> None:
    node = metrics_daemon()
    assert node.scrape() == idle_node()


def test_guaranteed_admissions_and_removals_move_the_cpu_and_memory_metrics(
    metrics_daemon: Callable[..., MetricsDaemon],
) -> None:
    """single-numa-node: "a" (4 CPUs) lands on NUMA 0, whole cores 1-2 (CPU 0 is reserved), "b" (6 CPUs)
    fits only NUMA 1 (8 free there, 3 on NUMA 0). Each Guaranteed container is one CPU and one memory
    pinning request and one uncore-aligned allocation; the Burstable pod pins nothing."""
    node = metrics_daemon()
    a = node.admit(guaranteed_pod("a", "4"))
    assert a.admitted and tuple(a.containers[0].cpu_ids) == (1, 2, 9, 10)
    assert node.scrape() == {
        **idle_node(),
        SHARED: "11000",
        EXCLUSIVE: "4",
        **per_numa(4, 0),
        CPU_PINS: "1",
        MEM_PINS: "1",
        UNCORE: "1",
        NUMA_ALIGNED: "1",
    }
    assert node.admit(BURSTABLE_POD).admitted
    b = node.admit(guaranteed_pod("b", "6"))
    assert b.admitted and set(b.containers[0].cpu_ids) <= {4, 5, 6, 7, 12, 13, 14, 15}
    busy = {
        **idle_node(),
        SHARED: "5000",
        EXCLUSIVE: "10",
        **per_numa(4, 6),
        CPU_PINS: "2",
        MEM_PINS: "2",
        UNCORE: "2",
        NUMA_ALIGNED: "3",
    }
    assert node.scrape() == busy

    node.remove("uid-a")
    # NUMA 0's series drops to 0 (it does not keep its last value); the counters never go back.
    assert node.scrape() == {**busy, SHARED: "9000", EXCLUSIVE: "6", **per_numa(0, 6)}
    node.remove("uid-b")
    node.remove("uid-burstable")
    assert node.scrape() == {**busy, SHARED: "15000", EXCLUSIVE: "0", **per_numa(0, 0)}


def test_what_if_questions_move_nothing(metrics_daemon: Callable[..., MetricsDaemon]) -> None:
    node = metrics_daemon()
    assert node.admit(guaranteed_pod("a", "4")).admitted
    before = scrape(node.url)[1]
    stub = node.daemon.stub()
    for manifest in (guaranteed_pod("w", "6"), guaranteed_pod("huge", "15", "40Gi")):
        stub.WouldAdmit(pb.WouldAdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
    # The whole exposition, Topology Manager metrics included, is as it was.
    assert scrape(node.url)[1] == before


def test_allocation_failures_are_pinning_errors(metrics_daemon: Callable[..., MetricsDaemon]) -> None:
    """best-effort admits whatever the merge gives, so the managers' own Allocate refuses, and counts it.
    16 CPUs: 15 can be pinned, the CPU manager fails (the memory manager is never asked). 500m and 30Gi:
    no exclusive CPUs, but 30Gi is more than both nodes' memory (~13Gi each): the memory manager's
    Allocate fails. Under single-numa-node the Topology Manager would refuse both before any Allocate."""
    node = metrics_daemon("best-effort")
    cpu = node.admit(guaranteed_pod("many-cpus", "16"))
    assert (cpu.admitted, cpu.reason) == (False, "UnexpectedAdmissionError")
    assert node.scrape() == {**idle_node(), CPU_PINS: "1", CPU_PIN_ERRORS: "1"}
    memory = node.admit(guaranteed_pod("much-memory", "500m", "30Gi"))
    assert not memory.admitted and "memorymanager" in memory.message
    assert node.scrape() == {
        **idle_node(),
        CPU_PINS: "1",
        CPU_PIN_ERRORS: "1",
        MEM_PINS: "1",
        MEM_PIN_ERRORS: "1",
    }


def test_restart_restores_the_gauges_and_restarts_the_counters(
    metrics_daemon: Callable[..., MetricsDaemon],
) -> None:
    """Killed and started again on the same state directory: the gauges describe the restored pods from
    the first scrape, the counters start from 0 like a restarted kubelet's, the zero series are back."""
    node = metrics_daemon()
    for name, cpus in (("a", "4"), ("b", "6")):
        assert node.admit(guaranteed_pod(name, cpus)).admitted
    restored = {**idle_node(), SHARED: "5000", EXCLUSIVE: "10", **per_numa(4, 6)}
    assert node.scrape() == {**restored, CPU_PINS: "2", MEM_PINS: "2", UNCORE: "2", NUMA_ALIGNED: "2"}
    node.daemon.stop(signal.SIGKILL)
    node.daemon.start()
    assert node.scrape() == restored
    # The restored node goes on from there.
    node.remove("uid-b")
    assert node.scrape() == {**restored, SHARED: "11000", EXCLUSIVE: "4", **per_numa(4, 0)}


def test_sighup_reload_keeps_counters_and_gauges(
    metrics_daemon: Callable[..., MetricsDaemon], tmp_path: Path
) -> None:
    """A reload rebuilds the node from the state directory: the gauges are the rebuilt node's (the same),
    the counters neither restart nor count twice, and the next admission counts once."""
    node = metrics_daemon()
    assert node.admit(guaranteed_pod("a", "4")).admitted
    before = node.scrape()
    node.daemon.send(signal.SIGHUP)
    log = tmp_path / "daemon.log"
    deadline = time.monotonic() + 10
    while '"reloaded"' not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert '"reloaded"' in log.read_text()
    assert node.scrape() == before
    assert node.admit(guaranteed_pod("b", "2")).admitted
    after = {SHARED: "9000", EXCLUSIVE: "6", **per_numa(6, 0), CPU_PINS: "2", MEM_PINS: "2", UNCORE: "2"}
    assert node.scrape() == {**before, **after, NUMA_ALIGNED: "2"}


NONE_POLICIES = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: best-effort
cpuManagerPolicy: none
memoryManagerPolicy: None
kubeReserved: {cpu: "1", memory: 512Mi}
"""


def test_none_policies_set_and_count_nothing(metrics_daemon: Callable[..., MetricsDaemon]) -> None:
    """Under the none CPU policy the kubelet never sets its gauges (the unlabelled ones read 0, no per-NUMA
    series) nor creates its alignment series; the None memory policy never counts. The Topology Manager's
    zero series exist whatever the policies."""
    node = metrics_daemon(config=NONE_POLICIES)
    quiet = {
        **TOPOLOGY_SERIES,
        SHARED: "0",
        EXCLUSIVE: "0",
        CPU_PINS: "0",
        CPU_PIN_ERRORS: "0",
        MEM_PINS: "0",
        MEM_PIN_ERRORS: "0",
    }
    assert node.scrape() == quiet
    assert node.admit(guaranteed_pod("a", "4")).admitted
    assert node.scrape() == quiet
