"""A stand-in for a real kubelet: its root directory and its podresources socket.

:class:`FakeKubelet` runs a reference :class:`NodeEmulator` in the kubelet's role. The reference keeps its
checkpoints in a private directory; :meth:`FakeKubelet.publish` copies them into the fake root as the
kubelet writes its own (a temporary file in the same directory, renamed over the old one), together with
``config.yaml``, a KubeletConfiguration as kubeadm writes it (with fields kubeletemu does not read). The
podresources answers are the reference's own ``List`` and ``GetAllocatableResources`` (the kubelet's shape,
checked elsewhere against the kubelet's), captured at each publish. ``tamper_*`` rewrite a checkpoint in the
kubelet's format (checksum recomputed) as if the kubelet had decided otherwise, and make the podresources
answers agree, as the real kubelet's always do.

:class:`PodResourcesDouble` serves those answers on a unix socket with the kubelet's v1 proto.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterable, Mapping
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

import hostprobe
from hostprobe.synthetic import SyntheticHost, write_tree
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu.config import parse_config
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.state.checkpoint import CPUManagerCheckpoint, load_checkpoint
from kubeletemu.devicemanager.checkpoint import marshal as marshal_devices
from kubeletemu.devicemanager.checkpoint import unmarshal as unmarshal_devices
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from kubeletemu.podresources import view
from tests.podresources.nodes import GENERAL_HOST

HOST: SyntheticHost = GENERAL_HOST  # 2 NUMA nodes; node 0: CPUs 0-3,8-11; node 1: 4-7,12-15; 16 GiB each

# What kubeadm writes, trimmed: fields kubeletemu does not read stay in, as on a real node.
KUBELET_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {{enabled: false}}
  webhook: {{cacheTTL: 0s, enabled: true}}
  x509: {{clientCAFile: /etc/kubernetes/pki/ca.crt}}
cgroupDriver: systemd
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
staticPodPath: /etc/kubernetes/manifests
topologyManagerPolicy: {policy}
topologyManagerScope: {scope}
cpuManagerPolicy: static
reservedSystemCPUs: "0"
systemReserved: {{memory: 924Mi}}
{memory}{gates}"""
STATIC_MEMORY = """\
memoryManagerPolicy: Static
reservedMemory:
- numaNode: 0
  limits: {memory: 1Gi}
"""

# The device plugins the reference kubelet has (the mirror learns them from GetAllocatableResources).
REFERENCE_DEVICES = """\
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
nodeName: node-a
devices:
- resourceName: example.com/nic
  devices:
  - {id: nic0, numaNodes: [0]}
  - {id: nic1, numaNodes: [0]}
  - {id: nic2, numaNodes: [1]}
  - {id: nic3, numaNodes: [1]}
- resourceName: example.com/gpu
  devices:
  - {id: gpu-both, numaNodes: [0, 1]}
- resourceName: example.com/fpga
  devices:
  - {id: fpga0}
"""

# The daemon's own configuration in shadow mode: settings of ours only.
SHADOW_OWN_CONFIG = """\
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
nodeName: node-a
"""


def _gu(container: str, cpu: str, memory: str, extra: str = "") -> str:
    """A container whose limits (and so requests) make it Guaranteed, indented for ``containers:``."""
    return f"""\
  - name: {container}
    resources:
      limits: {{cpu: "{cpu}", memory: {memory}{extra}}}"""


# A node as a kubelet fills it: Guaranteed pods with exclusive CPUs, memory and devices, an init container
# whose CPUs the app container reuses, a sidecar, a Guaranteed container with a fractional CPU, and pods
# holding nothing exclusive.
PODS = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: gu-a, namespace: prod, uid: 11111111-0000-0000-0000-00000000000a}}
spec:
  containers:
{_gu("c", "2", "1Gi", ", example.com/nic: 1")}
---
apiVersion: v1
kind: Pod
metadata: {{name: gu-b, namespace: prod, uid: 11111111-0000-0000-0000-00000000000b}}
spec:
  containers:
{_gu("c", "4", "2Gi", ", hugepages-2Mi: 64Mi")}
---
apiVersion: v1
kind: Pod
metadata: {{name: be, namespace: default, uid: 11111111-0000-0000-0000-0000000000be}}
spec:
  containers:
  - name: shell
---
apiVersion: v1
kind: Pod
metadata: {{name: bu, namespace: default, uid: 11111111-0000-0000-0000-0000000000bu}}
spec:
  containers:
  - name: web
    resources:
      requests: {{cpu: 100m, memory: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {{name: gu-c, namespace: batch, uid: 11111111-0000-0000-0000-00000000000c}}
spec:
  initContainers:
{_gu("prep", "2", "256Mi")}
  - name: proxy
    restartPolicy: Always
    resources:
      limits: {{cpu: "1", memory: 128Mi}}
  containers:
{_gu("main", "2", "512Mi", ", example.com/fpga: 1")}
  - name: helper
    resources:
      limits: {{cpu: 500m, memory: 256Mi}}
---
apiVersion: v1
kind: Pod
metadata: {{name: gpu, namespace: ml, uid: 11111111-0000-0000-0000-0000000000d0}}
spec:
  containers:
  - name: train
    resources:
      limits: {{example.com/gpu: 1}}
"""


def tree_digest(root: Path) -> dict[str, tuple[int, str]]:
    """Every entry below ``root``: mode and content hash (sockets and directories: mode only)."""
    out: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            info = path.lstat()
            content = ""
            if stat.S_ISREG(info.st_mode):
                content = hashlib.sha256(path.read_bytes()).hexdigest()
            out[str(path.relative_to(root))] = (info.st_mode, content)
    return out


def write_like_kubelet(path: Path, data: bytes) -> None:
    """The kubelet's filestore (``writeFile``): a ``.``-prefixed temporary file in the same directory
    (``os.CreateTemp``: mode 0600), written, synced, renamed over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=".", dir=path.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.rename(temp, path)


@dataclass
class FakeKubelet:
    base: Path  # holds root/, the reference's state and the synthetic host
    policy: str = "single-numa-node"
    # The topologyManagerPolicy config.yaml claims, when it is not the one the reference runs with.
    claimed_policy: str | None = None
    static_memory: bool = True
    shuffle_list: bool = False
    # (sysfs, procfs) of an already written synthetic host; None: write one below base
    host: tuple[Path, Path] | None = None
    topology_scope: str = "container"
    # The kubelet's version (None: kubeletemu's default, master) and its config.yaml's featureGates: they
    # decide the checkpoint formats the reference writes.
    kubelet_version: str | None = None
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    root: Path = field(init=False)
    emulator: NodeEmulator = field(init=False)
    sys_root: Path = field(init=False)
    proc_root: Path = field(init=False)
    listing: v1.ListPodResourcesResponse = field(init=False)
    allocatable: v1.AllocatableResourcesResponse = field(init=False)
    # (namespace/name, container) -> what the List reports instead of the reference's answer
    _cpu_overrides: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    _device_overrides: dict[tuple[str, str], dict[str, list[tuple[str, int | None]]]] = field(
        default_factory=dict
    )

    def __post_init__(self) -> None:
        self.root = self.base / "kubelet"
        self.root.mkdir(parents=True)
        (self.root / "pod-resources").mkdir()
        self.sys_root, self.proc_root = self.host or write_tree(self.base / "host", HOST)
        machine = Machine.from_host(hostprobe.probe(str(self.sys_root), str(self.proc_root)))
        version = "" if self.kubelet_version is None else f"kubeletVersion: '{self.kubelet_version}'\n"
        config = parse_config(self.kubelet_config(self.policy) + REFERENCE_DEVICES + version, "reference")
        self.emulator = NodeEmulator(config, machine, self.base / "reference-state")
        self.publish()

    def kubelet_config(self, policy: str | None = None) -> str:
        memory = STATIC_MEMORY if self.static_memory else ""
        gates = "".join(f"  {name}: {str(on).lower()}\n" for name, on in self.feature_gates.items())
        return KUBELET_CONFIG.format(
            policy=policy or self.claimed_policy or self.policy,
            scope=self.topology_scope,
            memory=memory,
            gates=f"featureGates:\n{gates}" if gates else "",
        )

    # ---- the kubelet's behaviour ------------------------------------------------------------------

    def admit(self, manifests: str, *, publish: bool = True) -> list[Pod]:
        pods = parse_pods(manifests, "test")
        for pod in pods:
            report = self.emulator.admit(pod)
            assert report.admitted, (pod.name, report.reason, report.message)
        if publish:
            self.publish()
        return pods

    def remove(self, uid: str, *, publish: bool = True) -> None:
        self.emulator.remove(uid)
        if publish:
            self.publish()

    def publish(self) -> None:
        """Write what changed into the root, then capture the podresources answers."""
        state = self.base / "reference-state"
        files = {
            self.root / "config.yaml": self.kubelet_config().encode(),
            self.root / "cpu_manager_state": (state / "cpu_manager_state").read_bytes(),
            self.root / "memory_manager_state": (state / "memory_manager_state").read_bytes(),
            self.root / "device-plugins" / "kubelet_internal_checkpoint": (
                state / "device-plugins" / "kubelet_internal_checkpoint"
            ).read_bytes(),
        }
        for path, data in files.items():
            if not path.exists() or path.read_bytes() != data:
                write_like_kubelet(path, data)
        self._cpu_overrides.clear()
        self._device_overrides.clear()
        self.capture()

    def capture(self) -> None:
        listing = view.list_pods(self.emulator).response
        for pod in listing.pod_resources:
            for container in pod.containers:
                key = (f"{pod.namespace}/{pod.name}", container.name)
                if key in self._cpu_overrides:
                    del container.cpu_ids[:]
                    container.cpu_ids.extend(self._cpu_overrides[key])
                if key in self._device_overrides:
                    for resource, devices in self._device_overrides[key].items():
                        kept = [d for d in container.devices if d.resource_name != resource]
                        del container.devices[:]
                        container.devices.extend(kept)
                        for device_id, node in devices:
                            entry = container.devices.add(resource_name=resource, device_ids=[device_id])
                            if node is not None:
                                entry.topology.nodes.add(ID=node)
        if self.shuffle_list:
            pods = list(listing.pod_resources)
            random.Random(len(pods)).shuffle(pods)
            listing = v1.ListPodResourcesResponse(pod_resources=pods)
        self.listing = listing
        self.allocatable = view.allocatable_resources(self.emulator)

    # ---- the kubelet deciding otherwise -------------------------------------------------------------

    def tamper_cpus(self, uid: str, container: str, cpus: Iterable[int]) -> None:
        """Rewrite ``cpu_manager_state`` so the container holds ``cpus`` (taken from the shared pool)."""
        path = self.root / "cpu_manager_state"
        checkpoint = load_checkpoint(path.read_bytes())
        entries = checkpoint.entries or {}
        held = entries[uid]
        assert held is not None
        old = CPUSet.parse(held[container])
        new = CPUSet(list(cpus))
        default = CPUSet.parse(checkpoint.default_cpu_set)
        assert (new - old).is_subset_of(default), f"{new - old} is not in the shared pool {default}"
        held[container] = str(new)
        checkpoint = CPUManagerCheckpoint(checkpoint.policy_name, str((default | old) - new), entries)
        write_like_kubelet(path, checkpoint.marshal())
        pod = self.emulator.registry.get(uid)
        assert pod is not None
        self._cpu_overrides[(f"{pod.pod.namespace}/{pod.pod.name}", container)] = new.list()
        self.capture()

    def tamper_devices(
        self, uid: str, container: str, resource: str, devices: Mapping[str, int | None]
    ) -> None:
        """Rewrite the device checkpoint so the container holds ``devices`` (id -> NUMA node)."""
        path = self.root / "device-plugins" / "kubelet_internal_checkpoint"
        checkpoint = unmarshal_devices(path.read_bytes())
        for entry in checkpoint.entries or []:
            if (entry.pod_uid, entry.container_name, entry.resource_name) == (uid, container, resource):
                per_numa: dict[int, list[str]] = {}
                for device_id, node in devices.items():
                    per_numa.setdefault(-1 if node is None else node, []).append(device_id)
                entry.device_ids = per_numa
        write_like_kubelet(path, marshal_devices(checkpoint))
        pod = self.emulator.registry.get(uid)
        assert pod is not None
        key = (f"{pod.pod.namespace}/{pod.pod.name}", container)
        self._device_overrides.setdefault(key, {})[resource] = list(devices.items())
        self.capture()


class _Lister(v1_grpc.PodResourcesListerServicer):
    def __init__(self, kubelet: FakeKubelet) -> None:
        self.kubelet = kubelet
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def _count(self, method: str) -> None:
        with self.lock:
            self.calls[method] = self.calls.get(method, 0) + 1

    def List(self, request: Any, context: Any) -> v1.ListPodResourcesResponse:
        self._count("List")
        return self.kubelet.listing

    def GetAllocatableResources(self, request: Any, context: Any) -> v1.AllocatableResourcesResponse:
        self._count("GetAllocatableResources")
        return self.kubelet.allocatable

    def Get(self, request: Any, context: Any) -> v1.GetPodResourcesResponse:
        self._count("Get")
        for pod in self.kubelet.listing.pod_resources:
            if (pod.namespace, pod.name) == (request.pod_namespace, request.pod_name):
                return v1.GetPodResourcesResponse(pod_resources=pod)
        context.abort(
            grpc.StatusCode.UNKNOWN, f"pod {request.pod_name} in namespace {request.pod_namespace} not found"
        )
        raise AssertionError("unreachable")


class PodResourcesDouble:
    """The kubelet's podresources v1 service on ``<root>/pod-resources/kubelet.sock`` (or ``socket``)."""

    def __init__(self, kubelet: FakeKubelet, socket: Path | None = None) -> None:
        self.socket = socket or kubelet.root / "pod-resources" / "kubelet.sock"
        self.lister = _Lister(kubelet)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        v1_grpc.add_PodResourcesListerServicer_to_server(self.lister, self.server)
        if self.server.add_insecure_port(f"unix:{self.socket}") == 0:
            raise RuntimeError(f"cannot bind {self.socket}")

    def __enter__(self) -> PodResourcesDouble:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(None).wait()
        # The kubelet leaves its socket behind when it stops; so does this double, unless told otherwise.

    @property
    def calls(self) -> dict[str, int]:
        with self.lister.lock:
            return dict(self.lister.calls)


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True)
