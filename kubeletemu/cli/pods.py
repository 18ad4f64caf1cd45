"""Pods on the daemon's node: ``admit``, ``would-admit``, ``remove``, ``list``."""

from __future__ import annotations

import argparse
from typing import Any

from kubeletemu.cli.choices import KUBELET_VERSIONS, TOPOLOGY_MANAGER_POLICIES, TOPOLOGY_MANAGER_SCOPES
from kubeletemu.cli.common import (
    EXIT_OK,
    EXIT_REFUSED,
    add_file_arguments,
    add_output_argument,
    add_socket_arguments,
    align,
    binary_bytes,
    call_doc,
    cpu_list,
    emit,
    fail,
    kubelet_version,
    one_line,
    pod_source,
    read_pod_files,
    socket_path,
)

ADMIT_REQUEST, WOULD_ADMIT_REQUEST = "kubeletemu.v1.AdmitRequest", "kubeletemu.v1.WouldAdmitRequest"
ADMIT_RESPONSE = "kubeletemu.v1.AdmitResponse"


def _affinity(container: dict[str, Any]) -> list[int] | None:
    hint = container.get("affinity")
    if not hint or hint.get("any_numa"):
        return None
    return list(hint.get("numa_nodes", []))


def _pod_json(doc: dict[str, Any]) -> dict[str, Any]:
    for container in doc["containers"]:
        container["numa_affinity"] = _affinity(container)
    return doc


def _container_row(c: dict[str, Any]) -> list[str]:
    hint = c.get("affinity")
    if not hint:
        numa = "-"
    elif hint.get("any_numa"):
        numa = "any"
    else:
        numa = ",".join(map(str, hint["numa_nodes"]))
    if hint and hint.get("preferred"):
        numa += " (preferred)"
    ids = c.get("cpu_ids", [])
    # A container that holds no CPU (its pod was rejected) gets "-", as MEMORY and DEVICES do.
    cpus = cpu_list(ids) if c.get("exclusive_cpus") or not ids else f"shared {cpu_list(ids)}"
    memory = (
        ", ".join(
            f"{b['memory_type']} {binary_bytes(int(b['size']))} on {','.join(map(str, b['numa_nodes']))}"
            for b in c.get("memory", [])
        )
        or "-"
    )
    devices = (
        ", ".join(f"{d['resource_name']}={','.join(d['device_ids'])}" for d in c.get("devices", [])) or "-"
    )
    return [f"  {c['name']}", c["kind"], numa, cpus, memory, devices]


_CONTAINER_HEADER = ["  CONTAINER", "KIND", "NUMA", "CPUS", "MEMORY", "DEVICES"]


def _containers_table(containers: list[dict[str, Any]]) -> str:
    return align([_CONTAINER_HEADER, *(_container_row(c) for c in containers)])


def _admit_table(doc: dict[str, Any]) -> str:
    verdict = "ADMITTED" if doc["admitted"] else f"REJECTED {doc['reason']}: {doc['message']}"
    lines = [f"{doc['namespace']}/{doc['name']} ({doc['uid']}) {doc['qos_class']}: {verdict}"]
    if doc.get("decided_by") and not doc["admitted"]:
        lines.append(f"  decided by the {doc['decided_by']} admit handler")
    text = "\n".join(lines) + "\n" + _containers_table(doc["containers"])
    if doc.get("cleanup"):
        text += f"  released: {doc['cleanup']}\n"
    for victim in doc.get("preempted") or ():
        text += (
            f"  preempted: {victim['namespace']}/{victim['name']} ({victim['uid']}) {victim['phase']} "
            f"{victim['reason']}: {victim['message']}\n"
        )
    return text


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The what-if flags as a ``kubeletemu.v1.PolicyOverrides`` document."""
    overrides: dict[str, Any] = {}
    if args.policy:
        overrides["topology_manager_policy"] = args.policy
    if args.scope:
        overrides["topology_manager_scope"] = args.scope
    if args.policy_option is not None:
        overrides["replace_policy_options"] = True
        options = overrides["topology_manager_policy_options"] = {}
        for item in args.policy_option:
            key, sep, value = item.partition("=")
            if not sep:
                fail(f"--policy-option {item!r}: expected KEY=VALUE")
            options[key] = value
    return overrides


def _rejections(command: str, docs: list[dict[str, Any]], asked: int) -> str:
    """The stderr line of a refusal: the first rejected pod, its reason and the kubelet's message."""
    first = docs[0]
    what = f"{first['reason']} ({first['message']})" if first["message"] else first["reason"]
    pod = f"pod {first['namespace']}/{first['name']}"
    if len(docs) == 1:
        return one_line(f"{command}: {pod}: rejected: {what}")
    return one_line(f"{command}: {len(docs)} of {asked} pods rejected, the first {pod}: {what}")


def cmd_admit(args: argparse.Namespace, dry_run: bool) -> int:
    pods = read_pod_files(args.files)
    overrides = _overrides(args) if dry_run else None
    # --kubelet-version was checked (and normalised) by the parser; the daemon checks it again.
    version = (args.kubelet_version or "") if dry_run else ""
    socket = socket_path(args)
    rejected: list[dict[str, Any]] = []

    def answers() -> Any:
        for pod in pods:
            source = pod_source(pod)
            if dry_run:
                request = {"pod": source, "overrides": overrides, "kubelet_version": version}
                response = call_doc(socket, "WouldAdmit", ADMIT_RESPONSE, (WOULD_ADMIT_REQUEST, request))
            else:
                response = call_doc(socket, "Admit", ADMIT_RESPONSE, (ADMIT_REQUEST, {"pod": source}))
            doc = _pod_json(response)
            if not doc["admitted"]:
                rejected.append(doc)
            yield doc

    emit(answers(), args.output, _admit_table)
    if rejected:
        fail(_rejections(args.command, rejected, len(pods)), EXIT_REFUSED)
    return EXIT_OK


def cmd_remove(args: argparse.Namespace) -> int:
    """By ``--uid``, or the pods of ``-f`` files by their UIDs (derived from namespace/name where the
    manifest has none, as ``admit`` derives them)."""
    uids = [args.uid] if args.uid else [pod.uid for pod in read_pod_files(args.files)]
    socket = socket_path(args)
    answers = (
        call_doc(
            socket,
            "RemovePod",
            "kubeletemu.v1.RemovePodResponse",
            ("kubeletemu.v1.RemovePodRequest", {"uid": uid}),
        )
        for uid in uids
    )
    emit(answers, args.output, lambda d: f"removed {d['namespace']}/{d['name']} ({d['uid']})")
    return EXIT_OK


def _list_table(doc: dict[str, Any]) -> str:
    if not doc["pods"]:
        return "no pods admitted\n"
    return "".join(
        f"{p['namespace']}/{p['name']} ({p['uid']}) {p['qos_class']}\n" + _containers_table(p["containers"])
        for p in doc["pods"]
    )


def cmd_list(args: argparse.Namespace) -> int:
    socket = socket_path(args)
    emit([call_doc(socket, "ListPods", "kubeletemu.v1.ListPodsResponse")], args.output, _list_table)
    return EXIT_OK


ADMIT = (
    "Admit pods on the daemon's node as the kubelet admits them: the Topology, CPU, Memory and Device "
    "Managers give each container its CPUs, memory and devices, or the pod is rejected with the kubelet's "
    "reason (exit 1). An admitted pod keeps what it was given, in the daemon's checkpoints, until removed."
)
WOULD_ADMIT = (
    "Ask whether pods would be admitted on the daemon's node as it is now, changing nothing: admit's "
    "answer, optionally under another Topology Manager policy, scope, options or kubelet version."
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, dry in (("admit", False), ("would-admit", True)):
        p = sub.add_parser(
            name,
            help="ask whether pods would be admitted, changing nothing" if dry else "admit pods",
            description=WOULD_ADMIT if dry else ADMIT,
        )
        add_file_arguments(p)
        add_socket_arguments(p)
        add_output_argument(p)
        if dry:
            p.add_argument(
                "--policy",
                choices=TOPOLOGY_MANAGER_POLICIES,
                help="what-if topologyManagerPolicy: %(choices)s (default: the node's)",
            )
            p.add_argument(
                "--scope",
                choices=TOPOLOGY_MANAGER_SCOPES,
                help="what-if topologyManagerScope: %(choices)s (default: the node's)",
            )
            p.add_argument(
                "--policy-option",
                action="append",
                metavar="KEY=VALUE",
                help="what-if topologyManagerPolicyOptions entry; repeat it; given at all, it replaces the "
                "node's options",
            )
            p.add_argument(
                "--kubelet-version",
                type=kubelet_version,
                metavar="VERSION",
                help=f"ask the kubelet of this version ({', '.join(KUBELET_VERSIONS)}; v1.34.2 reads as "
                "1.34) on the node as it is now: an upgrade what-if (default: the daemon's version)",
            )
        p.set_defaults(func=lambda a, d=dry: cmd_admit(a, d))

    remove = sub.add_parser(
        "remove",
        help="remove admitted pods",
        description="Remove admitted pods from the daemon's node, named by UID or by the manifests they "
        "were admitted from: their CPUs, memory and devices are released (exit 1 for a pod not there).",
    )
    which = remove.add_mutually_exclusive_group(required=True)
    which.add_argument("--uid", help="the pod's UID")
    which.add_argument(
        "-f",
        "--filename",
        "--file",
        dest="files",
        action="append",
        metavar="FILE",
        help="the pods of these manifests (as for admit)",
    )
    add_socket_arguments(remove)
    add_output_argument(remove)
    remove.set_defaults(func=cmd_remove)

    listing = sub.add_parser(
        "list",
        help="list admitted pods",
        description="List the pods admitted on the daemon's node: each pod's QoS class, and each "
        "container's CPUs, memory, devices and NUMA affinity.",
    )
    add_socket_arguments(listing)
    add_output_argument(listing)
    listing.set_defaults(func=cmd_list)
