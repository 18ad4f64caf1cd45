"""kube-controller-manager's controllers a fleet run needs: the ReplicaSet controller that replaces a pod
the kubelet rejected (:mod:`.replicaset`), the Job controller that replaces it after its pod-failure
backoff (:mod:`.job`) and the pod garbage collector (:mod:`.podgc`). A bare pod has no controller: it is
never replaced."""

from kubeletemu.fleet.controllers.job import JobController, pod_failure_backoff
from kubeletemu.fleet.controllers.podgc import GC_CHECK_PERIOD_S, PodGC
from kubeletemu.fleet.controllers.replicaset import BURST_REPLICAS, ReplicaSetController, Slot

__all__ = [
    "BURST_REPLICAS",
    "GC_CHECK_PERIOD_S",
    "JobController",
    "PodGC",
    "ReplicaSetController",
    "Slot",
    "pod_failure_backoff",
]
