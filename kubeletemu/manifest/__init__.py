"""Pod manifests, decoded in one place: the daemon's requests, the CLI's ``-f`` files and the fleet's
workloads all go through the same two steps, each module holding one of them.

1. :mod:`~kubeletemu.manifest.documents`: text to documents within the bounds of
   :mod:`~kubeletemu.manifest.limits` (size, nodes, alias expansion, nesting, digits, valid text), each
   checked before the step it protects;
2. :mod:`~kubeletemu.manifest.pods`: documents to pods, defaulted and validated as the API server would,
   every quantity within apimachinery's bounds.

A request's pod (a structured message or a manifest string) enters at :mod:`~kubeletemu.manifest.source`.
Everything is decided before a pod reaches a manager: a refused manifest reserves nothing.
"""

from kubeletemu.manifest.documents import ManifestError
from kubeletemu.manifest.pods import (
    ANNOTATIONS_MAX_BYTES,
    API_VERSION,
    LIST_KINDS,
    MANIFEST_SUFFIXES,
    POD_LEVEL_RESOURCES,
    POD_PHASES,
    expand_paths,
    parse_pods,
    pod_from_manifest,
    pod_to_manifest,
    pods_from_documents,
    read_pods,
)

__all__ = [
    "ANNOTATIONS_MAX_BYTES",
    "API_VERSION",
    "LIST_KINDS",
    "MANIFEST_SUFFIXES",
    "POD_LEVEL_RESOURCES",
    "POD_PHASES",
    "ManifestError",
    "expand_paths",
    "parse_pods",
    "pod_from_manifest",
    "pod_to_manifest",
    "pods_from_documents",
    "read_pods",
]
