"""The cluster a real fleet run needs, from ``tests/upstream``: etcd and kube-apiserver,
kube-controller-manager (its ReplicaSet, garbage-collector, namespace and node-lifecycle controllers), the
Fleet file's nodes as ``kubeletemu nodes``, and a scheduler started afresh for each run (so each seed meets
an empty queue, a ``nextStartNodeIndex`` of 0 and a zero attempts counter, as a fleet run does).

A run has a namespace of its own, deleted after it; the next run starts once every pod of it is gone, so the
nodes are empty again (deletion frees what a pod held).
"""

from __future__ import annotations

import asyncio
import http.client
import re
import shutil
import ssl
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hostprobe.synthetic import write_tree
from kubeletemu.fleet.spec import ConfigurationSpec, load_fleet
from kubeletemu.nodes.api import ApiError, ApiServer, load_kubeconfig
from tests.e2e import exporters as ex
from tests.e2e.extender_process import ExtenderProcess, extender_config, scheduler_config_with_extender
from tests.e2e.test_nodes import NodesProcess
from tests.e2e.test_nodes_feed import FeedNodesProcess
from tests.e2e.test_scheduler_plugins import PodresourcesNodes
from tests.feed.test_feed_daemon import free_port
from tests.realfleet.measure import RealRun
from tests.upstream.build import Assets
from tests.upstream.certs import Credentials, generate
from tests.upstream.controlplane import METRICS_OPEN, ControlPlane, Process, read_metrics
from tests.upstream.exporters import crd_path

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
NRT = "noderesourcetopologies.topology.node.k8s.io"
RTE_METHOD = "with-exclusive-resources"  # RTE's default pod-set fingerprint method
DEFAULT_SCHEDULER = "default-scheduler"
EXACT_PROFILE = "kubeletemu-exact"  # the profile asking kubeletemu extender
WAIT_S = 180.0
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)$", re.M)
# kube-controller-manager's own account of how its ReplicaSet controller kept up, per run (differences):
# syncs skipped because its informer had not yet seen its last write (StaleControllerConsistencyReplicaSet,
# beta and on from 1.36: pkg/controller/replicaset/replica_set.go), the work queue's rate-limited retries
# and the time keys waited in it, and the client-side rate limiter's waits (--kube-api-qps).
MANAGER_SERIES = {
    "stale_sync_skips": ("replicaset_controller_stale_sync_skips_total", ""),
    "queue_retries": ("workqueue_retries_total", 'name="replicaset"'),
    "queue_wait_sum_s": ("workqueue_queue_duration_seconds_sum", 'name="replicaset"'),
    "queue_waits": ("workqueue_queue_duration_seconds_count", 'name="replicaset"'),
    "client_throttle_sum_s": ("rest_client_rate_limiter_duration_seconds_sum", ""),
    "client_requests": ("rest_client_rate_limiter_duration_seconds_count", ""),
}


@dataclass(frozen=True)
class SchedulerSetup:
    """A real scheduler: its binary (None: the control plane's kube-scheduler), its arguments and the
    profile its pods name."""

    name: str
    binary: Path | None = None
    args: tuple[str, ...] = ()
    profile: str = DEFAULT_SCHEDULER


def metric_sum(text: str, name: str, labels: str = "") -> float:
    """The sum of a metric's samples in Prometheus text whose labels contain ``labels``."""
    return sum(float(v) for n, ls, v in _SAMPLE.findall(text) if n == name and labels in (ls or ""))


def attempts_from_metrics(text: str, profile: str) -> int:
    """``scheduler_schedule_attempts_total`` of the profile, summed over its results (scheduled,
    unschedulable, error): every scheduling cycle the scheduler ran."""
    return int(metric_sum(text, "scheduler_schedule_attempts_total", f'profile="{profile}"'))


def manager_figures(text: str) -> dict[str, float]:
    return {key: metric_sum(text, name, labels) for key, (name, labels) in MANAGER_SERIES.items()}


class RealCluster:
    """A control plane with the controller manager and the Fleet file's nodes; :meth:`run` runs one
    configuration under a scheduler."""

    def __init__(self, plane: ControlPlane, nodes: NodesProcess, manager: Process) -> None:
        self.plane, self.nodes, self.manager = plane, nodes, manager
        self.exporters: list[ex.Exporter] = []
        self.extender: ExtenderProcess | None = None
        self.extender_port: int | None = None
        self.runs = 0

    @classmethod
    def start(
        cls,
        assets: Assets,
        fleet_file: Path,
        node_names: Sequence[str],
        manager_args: Sequence[str] = (),
        rte: Path | None = None,
        extender: bool = False,
        close_on: str = "agent-report",
    ) -> RealCluster:
        """``rte``: resource-topology-exporter's binary, one per node on its podresources socket (the
        NodeResourceTopology CRD installed first), for the topology-aware setups. ``extender``: the nodes
        stream their states over a mutual-TLS feed, and ``kubeletemu extender`` mirrors them (its own
        process, kept across the runs as a deployment keeps it), its ledger closing entries ``close_on``."""
        plane = ControlPlane.start(assets)
        try:
            manager = plane.start_controller_manager([METRICS_OPEN, *manager_args])
            state = Path(tempfile.mkdtemp(prefix="kubeletemu-realfleet-", dir=plane.workdir))
            sockets = Path(tempfile.mkdtemp(prefix="rf-", dir="/tmp"))  # socket paths stay under 107 bytes
            feed_pki: Credentials | None = None
            nodes: NodesProcess
            if rte is not None:
                nodes = PodresourcesNodes(fleet_file, plane.kubeconfig, state / "nodes", sockets)
            elif extender:
                (state / "feed-pki").mkdir()
                feed_pki = generate(state / "feed-pki", service_ip="10.96.0.1")
                nodes = FeedNodesProcess(fleet_file, plane.kubeconfig, state / "nodes", feed_pki, free_port())
            else:
                nodes = NodesProcess(fleet_file, plane.kubeconfig, state / "nodes")
            nodes.start()
            cluster = cls(plane, nodes, manager)
            cluster._wait("every node Ready and schedulable", lambda: cluster._ready(node_names))
            if rte is not None:
                cluster._start_exporters(rte, fleet_file, state, sockets)
            if isinstance(nodes, FeedNodesProcess) and feed_pki is not None:
                cluster._start_extender(state, nodes.port, feed_pki, node_names, close_on)
            return cluster
        except BaseException:
            plane.stop()
            raise

    def _start_exporters(self, binary: Path, fleet_file: Path, state: Path, sockets: Path) -> None:
        """An RTE per node (tests/e2e/exporters.py), reading the node's podresources socket, its group's
        KubeletConfiguration and a sysfs tree of its group's synthetic shape; every one has published before
        a run starts."""
        self.plane.kubectl("apply", "-f", str(crd_path()))
        self.plane.kubectl("wait", "--for=condition=Established", f"crd/{NRT}", "--timeout=60s")
        for group in load_fleet(fleet_file).node_groups:
            if group.topology.synthetic is None:
                raise ValueError(f"node group {group.name}: RTE here needs a synthetic topology")
            sysfs_root, _ = write_tree(state / f"host-{group.name}", group.topology.synthetic)
            config = ex.write_kubelet_config(group.config_text, state / f"kubelet-{group.name}.yaml")
            for index in range(group.count):
                name = f"{group.name}-{index:03d}"
                files = ex.NodeFiles(
                    name, sockets / name / "kubelet.sock", state / "nodes" / name, config, sysfs_root
                )
                (state / name).mkdir()
                exporter = ex.rte(binary, files, self.plane.kubeconfig, state / name, RTE_METHOD)
                self.exporters.append(exporter.start())
        self._wait("every RTE published", self._published)

    def _start_extender(
        self, state: Path, feed_port: int, feed_pki: Credentials, names: Sequence[str], close_on: str
    ) -> None:
        port = free_port()
        config = state / "extender.yaml"
        ledger = f"ledger: {{closeOn: {close_on}}}\n"
        config.write_text(extender_config(port, self.plane.creds, feed_port, feed_pki, ledger))
        self.extender = ExtenderProcess(config, self.plane.workdir / "kubeletemu-extender.log").start()
        self.extender_port = port
        self._wait("every node mirrored by the extender", lambda: self._mirrored(names))

    def _mirrored(self, names: Sequence[str]) -> bool:
        assert self.extender_port is not None
        creds = self.plane.creds
        context = ssl.create_default_context(cafile=str(creds.ca_cert))
        context.load_cert_chain(str(creds.admin_cert), str(creds.admin_key))
        connection = http.client.HTTPSConnection("127.0.0.1", self.extender_port, context=context, timeout=10)
        try:
            connection.request("GET", "/metrics")
            text = connection.getresponse().read().decode()
        finally:
            connection.close()
        return metric_sum(text, "kubeletemu_extender_nodes", 'state="fresh"') >= len(names)

    def extender_setup(self, binary: Path | None = None) -> SchedulerSetup:
        """kube-scheduler (the control plane's, or ``binary``) with one profile, ``kubeletemu-exact``, and
        docs/extender.md's extenders entry pointed at this cluster's extender. Without ``managedResources``:
        the fleet's pods carry no opt-in resource, so the scheduler asks the extender about every pod (the
        extender passes those with nothing exclusive through untouched)."""
        assert self.extender_port is not None
        path = scheduler_config_with_extender(self.plane, self.extender_port, EXACT_PROFILE, managed=False)
        return SchedulerSetup(EXACT_PROFILE, binary, (f"--config={path}",), EXACT_PROFILE)

    def _published(self) -> bool:
        for exporter in self.exporters:
            if not exporter.running():
                raise RuntimeError(f"an RTE exited:\n{exporter.tail()}")
        items = self.plane.get_json(NRT).get("items")
        return isinstance(items, list) and len(items) >= len(self.exporters)

    def stop(self, keep_logs: Path | None = None) -> None:
        """Stops everything; ``keep_logs``: copy the components' logs there first."""
        for exporter in self.exporters:
            exporter.stop()
        if self.extender is not None:
            self.extender.stop()
        self.nodes.stop()
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            for log in [*self.plane.workdir.glob("*.log"), self.nodes.log, self.nodes.err]:
                shutil.copy(log, keep_logs / log.name)
        self.plane.stop()

    def _wait(self, what: str, probe: Any, timeout: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if probe():
                return
            time.sleep(0.5)
        raise TimeoutError(f"not within {timeout:.0f} s: {what}")

    def _ready(self, names: Sequence[str]) -> bool:
        items = self.plane.get_json("nodes").get("items")
        assert isinstance(items, list)
        schedulable = set()
        for node in items:
            conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
            taints = {t["key"] for t in node.get("spec", {}).get("taints") or []}
            if conditions.get("Ready") == "True" and NOT_READY_TAINT not in taints:
                schedulable.add(node["metadata"]["name"])
        return schedulable >= set(names)

    def run(self, config: ConfigurationSpec, setup: SchedulerSetup) -> dict[str, Any]:
        """One seed: a namespace, a fresh scheduler, the workload measured; then all of it removed."""
        self.runs += 1
        namespace = f"fleet-{self.runs}-seed-{config.seed}"
        self.plane.kubectl("create", "namespace", namespace)
        # The ServiceAccount admission refuses pods until the controller manager has made the account.
        self._wait(
            f"{namespace}/default ServiceAccount",
            lambda: (
                self.plane.kubectl(
                    "-n", namespace, "get", "serviceaccount", "default", check=False
                ).returncode
                == 0
            ),
        )
        args = (METRICS_OPEN, *setup.args)
        scheduler = self.plane.start_scheduler(args, binary=setup.binary, name=f"{setup.name}-{self.runs}")
        before = manager_figures(read_metrics(self.manager))
        try:
            result = asyncio.run(self._measure(config, namespace, scheduler, setup.profile))
        finally:
            self.plane.stop_process(scheduler)
        after = manager_figures(read_metrics(self.manager))
        result["controller_manager"] = {k: round(after[k] - before[k], 6) for k in after}
        self.plane.kubectl("delete", "namespace", namespace, "--wait=false")
        self._wait(f"namespace {namespace} gone", lambda: not self._exists(namespace))
        return result

    def _exists(self, namespace: str) -> bool:
        return self.plane.kubectl("get", "namespace", namespace, check=False).returncode == 0

    async def _measure(
        self, config: ConfigurationSpec, namespace: str, scheduler: Process, profile: str
    ) -> dict[str, Any]:
        api = ApiServer(load_kubeconfig(self.plane.kubeconfig))

        async def attempts() -> int:
            text = await asyncio.to_thread(read_metrics, scheduler)
            return attempts_from_metrics(text, profile)

        try:
            run = RealRun(api, config, namespace, attempts, None if profile == DEFAULT_SCHEDULER else profile)
            return await run.run()
        except ApiError as err:
            raise RuntimeError(f"the API server refused: {err}") from None
        finally:
            await api.close()
