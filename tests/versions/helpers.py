"""What the kubelet-version tests share: a node's configuration at a version and the pods they admit."""

from __future__ import annotations

from collections.abc import Mapping

from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from tests.nodes import STATIC_CPUS, kubelet_config


def versioned_config(
    version: str,
    policy: str = "best-effort",
    scope: str | None = None,
    *,
    managers: str = STATIC_CPUS,
    gates: Mapping[str, bool] | None = None,
    device_numa: int | None = None,
) -> str:
    """A node running the kubelet of ``version`` (:func:`tests.nodes.kubelet_config`, the static CPU
    Manager with CPU 0 reserved unless ``managers`` says otherwise); with ``device_numa``, one
    ``example.com/dev`` device, ``dev0``, on that NUMA node."""
    emulator = f'kubeletVersion: "{version}"\n'
    if device_numa is not None:
        emulator += (
            "devices:\n- resourceName: example.com/dev\n  devices:\n"
            f"  - {{id: dev0, numaNodes: [{device_numa}]}}\n"
        )
    return kubelet_config(policy, scope, managers=managers, gates=gates, emulator=emulator)


def pod_manifest(name: str, limits: str, pod_resources: str = "") -> str:
    """Pod ``name`` (uid ``uid-NAME``, namespace default) with one container ``c`` and its ``limits``;
    ``pod_resources``, when given, is the pod-level ``spec.resources`` (both flow-mapping bodies)."""
    pod_level = f"  resources: {{{pod_resources}}}\n" if pod_resources else ""
    return (
        "apiVersion: v1\n"
        "kind: Pod\n"
        f"metadata: {{name: {name}, namespace: default, uid: uid-{name}}}\n"
        "spec:\n"
        f"{pod_level}"
        "  containers:\n"
        "  - name: c\n"
        "    resources:\n"
        f"      limits: {{{limits}}}\n"
    )


def pod(name: str, limits: str, pod_resources: str = "") -> Pod:
    """:func:`pod_manifest`, parsed."""
    (parsed,) = parse_pods(pod_manifest(name, limits, pod_resources))
    return parsed
