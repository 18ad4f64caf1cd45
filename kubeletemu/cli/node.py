"""The daemon's node as others see it: ``topology``, ``fingerprint``, ``nrt``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kubeletemu.cli.choices import (
    FINGERPRINT_METHOD_DEFAULT,
    FINGERPRINT_METHODS,
    FINGERPRINT_METHODS_PUBLISHED,
    FLAVOURS,
    RTE_UPDATES,
)
from kubeletemu.cli.common import (
    EXIT_OK,
    add_output_argument,
    add_socket_arguments,
    align,
    binary_bytes,
    call,
    call_doc,
    cpu_list,
    emit,
    socket_path,
)

# The kubelet's cpumanager.PolicyNone (the engine's cpumanager.POLICY_NONE, not imported: clients stay light).
CPU_POLICY_NONE = "none"


def _topology_table(doc: dict[str, Any]) -> str:
    head = (
        f"topologyManagerPolicy={doc['topology_manager_policy']} scope={doc['topology_manager_scope']} "
        f"cpuManagerPolicy={doc['cpu_manager_policy']} memoryManagerPolicy={doc['memory_manager_policy']}\n"
    )
    # The none policy pins nothing (policy_none.go: no allocatable CPUs, Allocate a no-op): every container
    # runs on all the node's CPUs, so "0 free" would misread an idle node; the pool is shown instead.
    unpinned = doc["cpu_manager_policy"] == CPU_POLICY_NONE
    rows = [["NODE", "CPUS", "FREE CPUS", "MEMORY ALLOCATABLE", "MEMORY FREE"]]
    for node in doc["numa_nodes"]:
        free = node["free_cpu_ids"]
        rows.append(
            [
                str(node["id"]),
                cpu_list(node["cpu_ids"]),
                f"shared {cpu_list(node['cpu_ids'])}" if unpinned else f"{len(free)} ({cpu_list(free)})",
                binary_bytes(node["memory_allocatable_bytes"]),
                binary_bytes(node["memory_free_bytes"]),
            ]
        )
    note = (
        f"cpuManagerPolicy={CPU_POLICY_NONE}: no CPU is exclusive; every container shares the node's CPUs\n"
        if unpinned
        else ""
    )
    errors = "".join(f"a real kubelet would not start here: {e}\n" for e in doc["kubelet_start_errors"])
    return head + align(rows) + note + errors


def cmd_topology(args: argparse.Namespace) -> int:
    socket = socket_path(args)
    doc = call_doc(socket, "GetNodeTopology", "kubeletemu.v1.NodeTopology")
    emit([doc], args.output, _topology_table)
    return EXIT_OK


def cmd_fingerprint(args: argparse.Namespace) -> int:
    socket = socket_path(args)
    request = ("kubeletemu.v1.GetFingerprintRequest", {"method": args.method})
    doc = call_doc(socket, "GetFingerprint", "kubeletemu.v1.GetFingerprintResponse", request)
    emit([doc], args.output, lambda d: d["fingerprint"])
    return EXIT_OK


def _amount(resource: str, quantity: str) -> str:
    """An NRT amount for people: memory and hugepages in binary units (``12.4Gi``, as ``topology``),
    everything else (CPUs, devices) as the object says it."""
    if resource != "memory" and not resource.startswith("hugepages-"):
        return quantity
    from kubeletemu.quantity import Quantity

    return binary_bytes(Quantity.parse(quantity).value())


def _nrt_table(manifest: dict[str, Any]) -> str:
    rows = [["ZONE", "RESOURCE", "CAPACITY", "ALLOCATABLE", "AVAILABLE"]]
    for zone in manifest["zones"]:
        for r in zone["resources"]:
            amounts = (_amount(r["name"], r[k]) for k in ("capacity", "allocatable", "available"))
            rows.append([zone["name"], r["name"], *amounts])
    attributes = "".join(f"{a['name']}={a['value']}\n" for a in manifest.get("attributes", []))
    return f"{manifest['metadata']['name']}\n" + align(rows) + attributes


def cmd_nrt(args: argparse.Namespace) -> int:
    from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
    from kubeletemu.daemon.convert import nrt_from_msg

    socket = socket_path(args)
    request = pb.GetNodeResourceTopologyRequest(
        fingerprint_method=args.method, update_trigger=args.update, flavour=args.flavour
    )
    response = call(socket, "GetNodeResourceTopology", request, pb.NodeResourceTopology)
    manifest = nrt_from_msg(response).to_manifest()
    if response.koordinator_device:
        # koordlet publishes the node's Device next to its NRT: one List, as `kubectl get -o yaml` prints
        # several objects (and `kubeletemu schedule --nrt` reads back).
        device = json.loads(response.koordinator_device)
        emit([{"apiVersion": "v1", "kind": "List", "items": [manifest, device]}], args.output, _list_table)
    else:
        emit([manifest], args.output, _nrt_table)
    return EXIT_OK


def _list_table(doc: dict[str, Any]) -> str:
    """The NRT's table, then the Device's: one row per device."""
    topology, device = doc["items"]
    rows = [["DEVICE", "MINOR", "ID", "HEALTH", "NUMA", "PCIE", "RESOURCES"]]
    for d in device["spec"].get("devices", []):
        t = d.get("topology") or {}
        resources = ",".join(f"{k}={v}" for k, v in sorted(d.get("resources", {}).items()))
        where = [str(t.get("nodeID", "-")), t.get("pcieID", "-")]
        rows.append(
            [d["type"], str(d["minor"]), d.get("id", ""), str(d["health"]).lower(), *where, resources]
        )
    return _nrt_table(topology) + "\n" + align(rows)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    topology = sub.add_parser(
        "topology",
        help="per-NUMA-node allocatable and free resources",
        description="The daemon's node under its managers' policies, per NUMA node: its CPUs and memory, "
        "allocatable and free, and anything that would stop a real kubelet starting there.",
    )
    add_socket_arguments(topology)
    add_output_argument(topology)
    topology.set_defaults(func=cmd_topology)

    fingerprint = sub.add_parser(
        "fingerprint",
        help="the pod set's pfp0v001 fingerprint (podresources List)",
        description="The pfp0v001 fingerprint of the pods podresources List reports, as "
        "resource-topology-exporter computes it.",
    )
    add_socket_arguments(fingerprint)
    add_output_argument(fingerprint)
    fingerprint.add_argument(
        "--method",
        choices=FINGERPRINT_METHODS,
        default=FINGERPRINT_METHOD_DEFAULT,
        help="which listed pods go in: %(choices)s (default %(default)s, as resource-topology-exporter)",
    )
    fingerprint.set_defaults(func=cmd_fingerprint)

    nrt = sub.add_parser(
        "nrt",
        help="the NodeResourceTopology an exporter would publish",
        description="The NodeResourceTopology an exporter would publish for the daemon's node, ready for "
        "kubectl apply -f.",
    )
    add_socket_arguments(nrt)
    add_output_argument(nrt, default="yaml")
    nrt.add_argument(
        "--method",
        choices=FINGERPRINT_METHODS_PUBLISHED,
        default=FINGERPRINT_METHOD_DEFAULT,
        help="the fingerprint's pod selection, as resource-topology-exporter's --pods-fingerprint-method: "
        "%(choices)s (default %(default)s)",
    )
    nrt.add_argument(
        "--update",
        choices=RTE_UPDATES,
        default=RTE_UPDATES[0],
        help="the k8stopoawareschedwg/rte-update annotation, what triggered the scan: %(choices)s "
        "(default %(default)s)",
    )
    nrt.add_argument(
        "--flavour",
        choices=FLAVOURS,
        default=FLAVOURS[0],
        help="which exporter's object: rte (resource-topology-exporter, read by NodeResourceTopologyMatch), "
        "koordlet (Koordinator's, read by NodeNUMAResource; with the node's Device object, in a List, "
        "when it has GPU or RDMA devices) or nfd (nfd-topology-updater's; --method and --update do not "
        "apply); default %(default)s",
    )
    nrt.set_defaults(func=cmd_nrt)
