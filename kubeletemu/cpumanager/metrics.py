"""What the CPU manager contributes to the kubelet's ``/metrics``, as plain values (no prometheus-client here:
the daemon copies a :class:`CPUManagerMetrics` snapshot into its exposition).

Read at kubernetes/kubernetes 121460defea7874f50c64bb8de51018a86c6eef3
(``pkg/kubelet/cm/cpumanager/policy_static_metrics_test.go``, which pins the behaviour of master's
``policy_static.go`` after kubernetes/kubernetes#141261 "Fix exclusive allocation metrics accounting"), with
``policy_static.go`` as stored at 62c7eac08995112e3699b2c523cdaf8b51774e04 and its pod-level revision for
the counters, ``topology/alignment.go`` at 81810de635aa13aa0a32992f6def3aa9d6025ebc and ``topology.go`` at
08715a58e5cd59e77f7a9543522cc50e3e9c4c79:

* the three gauges are set by ``updateMetricsFromState`` from the state alone: at ``Start``
  (``initializeMetrics``), after a fresh allocation (container or pod bubble) and after a release. Before
  #141261 they were moved by deltas and drifted (a CPU an app container reused from an init container was
  counted twice; a NUMA node whose CPUs all went back kept its last value); master derives them:
  - ``shared_pool_size_millicores`` = ``GetAvailableCPUs`` (default set minus reserved) x 1000,
  - ``exclusive_cpu_allocation_count`` = the union of every container assignment (a reused CPU counts
    once), plus every pod-level CPU set when ``PodLevelResourceManagers`` is on,
  - ``allocation_per_numa{numa_node}`` = that union's CPUs on each NUMA node the CPU topology knows, every
    node set (zero included), labelled ``strconv.Itoa(node)``;
* up to v1.36.3 (read at every supported tag in openshift/kubernetes as vendored by openshift/microshift:
  v1.33.13 release-4.20 @ 78a3953430 … v1.36.3 release-4.23 @ ab25d11482, the same code in each; behaviour
  ``cpumanager.metrics-from-state``) the gauges are moved instead: ``initializeMetrics`` sets them at
  ``Start`` from the container assignments only (pod-level CPU sets never count); ``updateMetricsOnAllocate``
  adds the allocation's size to the exclusive count and takes it off the shared pool (a CPU reused from an
  init container counts again; a pod's CPU set is counted here, before it is stored);
  ``updateMetricsOnRelease`` moves back what was released; and the per-NUMA gauge is set only for the nodes
  holding some container-assigned CPU (on release: minus the released ones), so a node never set has no
  series and a node whose CPUs all went back keeps its last value;
* ``pinning_requests_total`` counts every ``Allocate`` of a container that asks for exclusive CPUs (after
  the pod-level-resources skip), ``pinning_errors_total`` those returning an error (a ``defer``);
  ``AllocatePod`` counts one request per exclusive container it carves out of the bubble and one error
  per failed call;
* ``container_aligned_compute_resources_count{scope=container}``: ``boundary=physical_cpu`` for every
  ``Allocate`` that succeeds with ``full-pcpus-only`` (``_failure_count`` when it fails), and
  ``boundary=uncore_cache`` for every fresh allocation whose CPUs share one uncore cache
  (``CheckAlignment``); the none policy sets and counts nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.topology import CPUTopology


@dataclass(frozen=True)
class CPUManagerGauges:
    """The static policy's gauges as ``updateMetricsFromState`` last set them."""

    shared_pool_millicores: int
    exclusive_cpus: int
    # (NUMA node, exclusively allocated CPUs on it), ascending: every NUMA node of the CPU topology (master);
    # before kubernetes#141261, the nodes set so far (see the module docstring).
    allocation_per_numa: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CPUManagerMetrics:
    """The CPU manager's counters (since the policy was built) and gauges (None: never set, the none
    policy). ``static`` says whether the static policy's ``initializeMetrics`` ran."""

    static: bool = False
    pinning_requests: int = 0
    pinning_errors: int = 0
    aligned_physical_cpu: int = 0
    aligned_physical_cpu_failures: int = 0
    aligned_uncore_cache: int = 0
    gauges: CPUManagerGauges | None = None


def gauges_from_state(
    topology: CPUTopology,
    numa_nodes: Iterable[int],
    available: CPUSet,
    assignments: Iterable[CPUSet],
) -> CPUManagerGauges:
    """``updateMetricsFromState``: ``available`` is ``GetAvailableCPUs``, ``assignments`` every exclusive set
    (container assignments, and pod-level sets when those count)."""
    exclusive = CPUSet().union(*assignments)
    details = topology.cpu_details
    per_numa = tuple(
        (numa, (exclusive & details.cpus_in_numa_nodes(numa)).size()) for numa in sorted(numa_nodes)
    )
    return CPUManagerGauges(available.size() * 1000, exclusive.size(), per_numa)


def aligned_at_uncore_cache(topology: CPUTopology, cpus: CPUSet) -> bool:
    """``CheckAlignment(...).UncoreCache``: at most one CPU, or all on the first CPU's uncore cache; a CPU
    the topology does not know breaks the alignment."""
    ids = cpus.list()
    if len(ids) <= 1:
        return True
    details = topology.cpu_details
    reference = details.get(ids[0])
    if reference is None:
        return False
    for cpu in ids[1:]:
        info = details.get(cpu)
        if info is None or info.uncore_cache_id != reference.uncore_cache_id:
            return False
    return True
