"""A request's pod (``kubeletemu.v1.PodSource``) to :class:`kubeletemu.pod.Pod`: a structured ``Pod`` message
is turned into the manifest it stands for, a manifest string is decoded within a request's bounds; both are
then read by :mod:`kubeletemu.manifest.pods`, so both spellings get the same defaulting and the same errors.
"""

from __future__ import annotations

from typing import Any

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.manifest.documents import ManifestError
from kubeletemu.manifest.limits import REQUEST
from kubeletemu.manifest.pods import parse_pods, pod_from_manifest
from kubeletemu.pod import Pod

SOURCE = "request"


def pod_from_source(source: pb.PodSource) -> Pod:
    """The one pod of a request: a manifest may hold several documents, it must hold one pod."""
    which = source.WhichOneof("source")
    if which == "pod":
        return pod_from_manifest(_manifest_of(source.pod))
    if which == "manifest":
        pods = parse_pods(source.manifest, SOURCE, limits=REQUEST)
        if len(pods) != 1:
            raise ManifestError(f"pod.manifest: the manifest must hold exactly one pod, it holds {len(pods)}")
        return pods[0]
    raise ManifestError("pod: Required value: no pod given: set pod.pod or pod.manifest")


def _requirements(msg: pb.ResourceRequirements) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if msg.requests:
        out["requests"] = dict(msg.requests)
    if msg.limits:
        out["limits"] = dict(msg.limits)
    return out


def _container(msg: pb.Container) -> dict[str, Any]:
    out: dict[str, Any] = {"name": msg.name, "resources": _requirements(msg.resources)}
    if msg.restart_policy:
        out["restartPolicy"] = msg.restart_policy
    return out


def _manifest_of(msg: pb.Pod) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": msg.name}
    if msg.namespace:
        metadata["namespace"] = msg.namespace
    if msg.uid:
        metadata["uid"] = msg.uid
    if msg.annotations:
        metadata["annotations"] = dict(msg.annotations)
    spec: dict[str, Any] = {"containers": [_container(c) for c in msg.containers]}
    if msg.init_containers:
        spec["initContainers"] = [_container(c) for c in msg.init_containers]
    if msg.HasField("resources"):
        spec["resources"] = _requirements(msg.resources)
    if msg.overhead:
        spec["overhead"] = dict(msg.overhead)
    if msg.runtime_class_name:
        spec["runtimeClassName"] = msg.runtime_class_name
    if msg.HasField("priority"):
        spec["priority"] = msg.priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
