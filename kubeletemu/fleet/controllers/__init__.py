"""kube-controller-manager's controllers a fleet run needs: the ReplicaSet controller that replaces a pod
the kubelet rejected (:mod:`.replicaset`) and the pod garbage collector (:mod:`.podgc`)."""

from kubeletemu.fleet.controllers.podgc import GC_CHECK_PERIOD_S, PodGC
from kubeletemu.fleet.controllers.replicaset import BURST_REPLICAS, ReplicaSetController, Slot

__all__ = ["BURST_REPLICAS", "GC_CHECK_PERIOD_S", "PodGC", "ReplicaSetController", "Slot"]
