"""The kubelet's metrics, scraped from a real HTTP server on an ephemeral loopback port."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.parser import text_string_to_metric_families

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
