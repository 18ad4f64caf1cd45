"""The counters the podresources servers move: the kubelet's ``pod_resources_endpoint_*`` metrics
(pkg/kubelet/metrics/metrics.go), by server API version. The daemon's metrics registry
(:class:`kubeletemu.daemon.metrics.KubeletMetrics`) is one of these and makes them; the servers name only
this class, so the layer below the daemon does not reach up to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client import Counter


class PodResourcesMetrics:
    """Declares the counters; a subclass sets them."""

    pod_resources_endpoint_requests_total: Counter
    pod_resources_endpoint_requests_list: Counter
    pod_resources_endpoint_requests_get_allocatable: Counter
    pod_resources_endpoint_requests_get: Counter
    pod_resources_endpoint_errors_list: Counter
    pod_resources_endpoint_errors_get_allocatable: Counter
    pod_resources_endpoint_errors_get: Counter
