"""The API objects a kubelet writes, built as the kubelet builds them: its Node (registration and status),
its Lease, its pods' statuses and its admission Events. Plain JSON values; no client here.

Upstream, as read at v1.37 (``k8s.io/kubernetes``):

- the Node: ``initialNode`` and the status setters (``pkg/kubelet/kubelet_node_status.go``,
  ``pkg/kubelet/nodestatus/setters.go``): the default labels, ``daemonEndpoints``, ``nodeInfo``, capacity and
  allocatable, and the four conditions with their reasons and messages;
- capacity quantities as cadvisor's ``CapacityFromMachineInfo`` makes them: cpu and pods ``DecimalSI``,
  memory, hugepages and ephemeral-storage ``BinarySI`` (allocatable keeps each capacity's format:
  ``Quantity.Sub``);
- the Lease (``component-helpers/apimachinery/lease``): ``holderIdentity`` the node, ``leaseDurationSeconds``,
  ``renewTime``, owned by the Node;
- a rejected pod (``Kubelet.rejectPod``): phase Failed, the handler's reason, ``"Pod was rejected: "`` and its
  message, the QoS class, and a Warning Event with the reason and the bare message;
- an admitted pod (``generateAPIPodStatus``): Pending with its containers waiting in ``ContainerCreating``,
  then Running with every container running and ready, and the pod conditions the kubelet owns
  (``PodReadyToStartContainers``, ``Initialized``, ``Ready``, ``ContainersReady``); the status manager sets
  ``startTime`` once and keeps it.
"""

from __future__ import annotations

import datetime
import platform
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeletemu import __version__
from kubeletemu.lifecycle.preemption import PREEMPTED_MESSAGE, PREEMPTED_REASON
from kubeletemu.memorymanager.quantity_format import QuantityFormat, canonical_string
from kubeletemu.node_allocatable import EPHEMERAL_STORAGE, HUGEPAGES_PREFIX, MEMORY, NodeAllocatable
from kubeletemu.quantity import Quantity
from kubeletemu.versions.gates import binary_version

JSON = dict[str, Any]

LEASE_NAMESPACE = "kube-node-lease"
KUBELET_PORT = 10250  # the kubelet's default --port, what daemonEndpoints advertises
REJECTED_PREFIX = "Pod was rejected: "
# The condition evictPodsToFreeRequests adds to a victim (v1.37.2).
PREEMPTED_CONDITION_MESSAGE = "Pod was preempted by Kubelet to accommodate a critical pod."
# kubelet_node_status.go's conditions while the node is healthy: type, reason, message.
NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)
# Go's GOARCH for Python's machine names (the kubernetes.io/arch label).
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le"}
_BINARY_SI = (MEMORY, EPHEMERAL_STORAGE)
_NAMESPACE = uuid.UUID("5b9e5f8e-2d62-4a4e-9a57-3c1d8c1b9f42")  # names this project's derived IDs


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def rfc3339(at: datetime.datetime) -> str:
    """``metav1.Time``: whole seconds, UTC, ``Z``."""
    return at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(at: datetime.datetime) -> str:
    """``metav1.MicroTime`` (a Lease's times): microseconds, UTC, ``Z``."""
    return at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def kubelet_version_string(version: str) -> str:
    """``nodeInfo.kubeletVersion``: the emulated kubelet's binary version (``master`` is 1.37), marked as
    this emulator's build (a semver pre-release, as vendor kubelets mark theirs)."""
    return f"v{binary_version(version)}.0-kubeletemu"


def go_arch() -> str:
    machine = platform.machine().lower()
    return _GOARCH.get(machine, machine)


def quantity_text(name: str, quantity: Quantity) -> str:
    """A capacity or allocatable entry as the kubelet's Quantity prints it (its format kept)."""
    binary = name in _BINARY_SI or name.startswith(HUGEPAGES_PREFIX)
    return canonical_string(
        quantity.amount, QuantityFormat.BINARY_SI if binary else QuantityFormat.DECIMAL_SI
    )


def resource_list(resources: Mapping[str, Quantity]) -> dict[str, str]:
    return {name: quantity_text(name, q) for name, q in sorted(resources.items())}


def node_labels(name: str, labels: Mapping[str, str]) -> dict[str, str]:
    """The kubelet's own labels (``initialNode``: hostname, os, arch, stable and beta), then the group's."""
    arch = go_arch()
    own = {
        "kubernetes.io/hostname": name.lower(),
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": arch,
    }
    return {**own, **labels}


def node_ids(name: str) -> dict[str, str]:
    """machineID, systemUUID and bootID: stable per node name (a restart of the emulator is no reboot)."""
    base = uuid.uuid5(_NAMESPACE, name)
    return {"machineID": base.hex, "systemUUID": str(base), "bootID": str(uuid.uuid5(base, "boot"))}


def node_conditions(now: datetime.datetime, since: Mapping[str, str] | None = None) -> list[JSON]:
    """The four healthy conditions, heartbeat ``now``; ``since`` keeps each type's last transition time."""
    heartbeat = rfc3339(now)
    return [
        {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": (since or {}).get(kind, heartbeat),
        }
        for kind, status, reason, message in NODE_CONDITIONS
    ]


def node_status(
    name: str,
    allocatable: NodeAllocatable,
    kubelet_version: str,
    address: str,
    now: datetime.datetime,
    since: Mapping[str, str] | None = None,
) -> JSON:
    release = platform.release()
    return {
        "capacity": resource_list(allocatable.capacity),
        "allocatable": resource_list(allocatable.allocatable),
        "conditions": node_conditions(now, since),
        "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
        "nodeInfo": {
            **node_ids(name),
            "kernelVersion": release,
            "osImage": "kubeletemu (emulated node)",
            "containerRuntimeVersion": f"kubeletemu://{__version__}",
            "kubeletVersion": kubelet_version_string(kubelet_version),
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": go_arch(),
        },
    }


def node_object(
    name: str,
    labels: Mapping[str, str],
    allocatable: NodeAllocatable,
    kubelet_version: str,
    address: str,
    now: datetime.datetime,
) -> JSON:
    """The Node the kubelet registers: its status included (``initialNode`` sets it before the create)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": node_labels(name, labels),
            # kubelet_node_status.go: the volume controller attaches for this node.
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
        "spec": {},
        "status": node_status(name, allocatable, kubelet_version, address, now),
    }


def lease_object(node: str, node_uid: str, duration_s: int, now: datetime.datetime) -> JSON:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": node,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}],
        },
        "spec": {"holderIdentity": node, "leaseDurationSeconds": duration_s, "renewTime": micro_time(now)},
    }


# ---- pods ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodWriter:
    """What a node's kubelet writes into every status of its pods.

    ``observed_generation``: ``PodObservedGenerationTracking`` (beta from 1.34) puts the pod's generation in
    ``status.observedGeneration`` and in each condition the kubelet writes; ``ready_to_start``: the
    ``PodReadyToStartContainers`` condition (``PodReadyToStartContainersCondition``), which from 1.37 says
    why it is False (``PodSandboxNotReady``, ``no pod sandbox exists``).
    """

    host_ip: str
    observed_generation: bool = True
    ready_to_start: bool = True
    sandbox_reason: bool = True

    def _stamp(self, pod: Mapping[str, Any], status: JSON) -> JSON:
        if self.observed_generation:
            generation = int(_meta(pod).get("generation") or 0)
            status["observedGeneration"] = generation
            for condition in status.get("conditions", []):
                condition["observedGeneration"] = generation
        return status

    def _base(self, phase: str, qos: str, started: datetime.datetime) -> JSON:
        return {
            "phase": phase,
            "qosClass": qos,
            "hostIP": self.host_ip,
            "hostIPs": [{"ip": self.host_ip}],
            "startTime": rfc3339(started),
        }

    def _sandbox(self, stamp: str, not_ready: str = "") -> list[JSON]:
        """``not_ready``: why no sandbox is ready (the kubelet's PodSandboxNotReadyMsg...); "": it is."""
        if not self.ready_to_start:
            return []
        condition: JSON = {"type": "PodReadyToStartContainers", "status": _bool(not not_ready)}
        if not_ready and self.sandbox_reason:
            condition.update(reason="PodSandboxNotReady", message=not_ready)
        else:
            condition.update(reason=None, message=None)  # a patch deletes what an earlier status had
        condition["lastTransitionTime"] = stamp
        return [condition]

    def pending(self, pod: Mapping[str, Any], qos: str, now: datetime.datetime) -> JSON:
        """Admitted, its sandbox and containers not created yet: the first status the kubelet writes."""
        stamp = rfc3339(now)
        inits, apps = _containers(pod, "initContainers"), _containers(pod, "containers")
        unready = [_name(c) for c in inits if _sidecar(c)] + [_name(c) for c in apps]
        incomplete = [_name(c) for c in inits]
        initialized: JSON = {"type": "Initialized", "status": "True", "lastTransitionTime": stamp}
        if incomplete:
            initialized.update(
                status="False",
                reason="ContainersNotInitialized",
                message=f"containers with incomplete status: [{' '.join(incomplete)}]",
            )
        not_ready = {
            "status": "False",
            "reason": "ContainersNotReady",
            "message": f"containers with unready status: [{' '.join(unready)}]",
            "lastTransitionTime": stamp,
        }
        status = self._base("Pending", qos, now)
        status["conditions"] = [
            *self._sandbox(stamp, "no pod sandbox exists"),
            initialized,
            {"type": "Ready", **not_ready},
            {"type": "ContainersReady", **not_ready},
        ]
        waiting = "PodInitializing" if inits else "ContainerCreating"
        status["containerStatuses"] = [_waiting(c, waiting) for c in apps]
        if inits:
            status["initContainerStatuses"] = [_waiting(c, "PodInitializing") for c in inits]
        return self._stamp(pod, status)

    def running(
        self, pod: Mapping[str, Any], qos: str, started: datetime.datetime, now: datetime.datetime
    ) -> JSON:
        """Every container started and ready (no probes run here), init containers completed: Running."""
        stamp = rfc3339(now)
        uid = str(_meta(pod).get("uid", ""))
        ready = {"status": "True", "reason": None, "message": None, "lastTransitionTime": stamp}
        status = self._base("Running", qos, started)
        status["conditions"] = [
            *self._sandbox(stamp),
            {"type": "Initialized", **ready},
            {"type": "Ready", **ready},
            {"type": "ContainersReady", **ready},
        ]
        status["containerStatuses"] = [_running(c, uid, stamp) for c in _containers(pod, "containers")]
        inits = _containers(pod, "initContainers")
        if inits:
            status["initContainerStatuses"] = [
                _running(c, uid, stamp)
                if _sidecar(c)
                else _completed(c, uid, rfc3339(started), stamp, ready=True)
                for c in inits
            ]
        return self._stamp(pod, status)

    def terminated(
        self, pod: Mapping[str, Any], qos: str, started: datetime.datetime, now: datetime.datetime
    ) -> JSON:
        """The containers stopped on deletion (an emulated container exits at once, with 0): Succeeded, its
        Ready and ContainersReady False with ``PodCompleted``."""
        stamp = rfc3339(now)
        uid = str(_meta(pod).get("uid", ""))
        completed = {
            "status": "False",
            "reason": "PodCompleted",
            "message": None,
            "lastTransitionTime": stamp,
        }
        status = self._base("Succeeded", qos, started)
        status["conditions"] = [
            *self._sandbox(stamp, "pod sandbox is not ready"),
            {"type": "Initialized", "status": "True", "reason": "PodCompleted", "lastTransitionTime": stamp},
            {"type": "Ready", **completed},
            {"type": "ContainersReady", **completed},
        ]
        status["containerStatuses"] = [
            _completed(c, uid, rfc3339(started), stamp, ready=False) for c in _containers(pod, "containers")
        ]
        return self._stamp(pod, status)

    def preempted(
        self, pod: Mapping[str, Any], qos: str, started: datetime.datetime, now: datetime.datetime
    ) -> JSON:
        """A victim of the kubelet's critical-pod preemption (``evictPodsToFreeRequests`` in
        ``pkg/kubelet/preemption/preemption.go``, v1.37.2): ``killPodFunc``'s status function sets phase
        ``Failed``, reason ``Preempting`` and its message, and a ``DisruptionTarget`` condition
        (``TerminationByKubelet``); the status generator gives a Failed pod Ready and ContainersReady False
        with ``PodFailed`` (``pkg/kubelet/status/generate.go``). Its emulated containers exit at once, 0."""
        stamp = rfc3339(now)
        uid = str(_meta(pod).get("uid", ""))
        failed = {"status": "False", "reason": "PodFailed", "message": None, "lastTransitionTime": stamp}
        status = self._base("Failed", qos, started)
        status.update(reason=PREEMPTED_REASON, message=PREEMPTED_MESSAGE)
        status["conditions"] = [
            *self._sandbox(stamp, "pod sandbox is not ready"),
            {"type": "Initialized", "status": "True", "reason": None, "lastTransitionTime": stamp},
            {"type": "Ready", **failed},
            {"type": "ContainersReady", **failed},
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "TerminationByKubelet",
                "message": PREEMPTED_CONDITION_MESSAGE,
                "lastTransitionTime": stamp,
            },
        ]
        status["containerStatuses"] = [
            _completed(c, uid, rfc3339(started), stamp, ready=False) for c in _containers(pod, "containers")
        ]
        return self._stamp(pod, status)


def _bool(value: bool) -> str:
    return "True" if value else "False"


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = pod.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _containers(pod: Mapping[str, Any], key: str) -> Sequence[Mapping[str, Any]]:
    containers = (pod.get("spec") or {}).get(key) or []
    return [c for c in containers if isinstance(c, Mapping)]


def _name(container: Mapping[str, Any]) -> str:
    return str(container.get("name", ""))


def _container_id(pod_uid: str, name: str) -> str:
    return f"kubeletemu://{uuid.uuid5(_NAMESPACE, f'{pod_uid}/{name}').hex}"


def _sidecar(container: Mapping[str, Any]) -> bool:
    """A restartable init container (``restartPolicy: Always``) keeps running beside the app containers."""
    return container.get("restartPolicy") == "Always"


def _waiting(container: Mapping[str, Any], reason: str) -> JSON:
    return {
        "name": _name(container),
        "image": container.get("image", ""),
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"waiting": {"reason": reason}},
    }


def _running(container: Mapping[str, Any], uid: str, stamp: str) -> JSON:
    return {
        "name": _name(container),
        "image": container.get("image", ""),
        "imageID": container.get("image", ""),
        "containerID": _container_id(uid, _name(container)),
        "ready": True,
        "restartCount": 0,
        "started": True,
        "state": {"running": {"startedAt": stamp}},
    }


def _completed(container: Mapping[str, Any], uid: str, started: str, stamp: str, *, ready: bool) -> JSON:
    """Exited with 0: a completed init container is ready (the prober manager's rule), an app one not."""
    container_id = _container_id(uid, _name(container))
    return {
        **_running(container, uid, stamp),
        "ready": ready,
        "started": False,
        "state": {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": started,
                "finishedAt": stamp,
                "containerID": container_id,
            }
        },
    }


def rejected_status(qos: str, reason: str, message: str, now: datetime.datetime) -> JSON:
    """``rejectPod``'s status; the status manager adds ``startTime`` to a status that has none."""
    return {
        "phase": "Failed",
        "qosClass": qos,
        "reason": reason,
        "message": REJECTED_PREFIX + message,
        "startTime": rfc3339(now),
    }


def warning_event(
    pod: Mapping[str, Any], node: str, reason: str, message: str, now: datetime.datetime
) -> JSON:
    """``recorder.Eventf(pod, Warning, reason, message)`` from the kubelet's event source."""
    metadata = pod.get("metadata") or {}
    stamp = rfc3339(now)
    name = str(metadata.get("name", ""))
    namespace = str(metadata.get("namespace", "default"))
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": name,
            "namespace": namespace,
            "uid": metadata.get("uid", ""),
            "resourceVersion": metadata.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message,
        "type": "Warning",
        "source": {"component": "kubelet", "host": node},
        "reportingComponent": "kubelet",
        "reportingInstance": node,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
