"""``schedule``: where would the scheduler put a pod, per scheduler-side model (``kubeletemu.scheduler``)?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.cli.common import (
    EXIT_OK,
    EXIT_REFUSED,
    add_file_arguments,
    add_output_argument,
    add_socket_arguments,
    align,
    call,
    emit,
    fail,
    pod_source,
    read_pod_files,
    socket_path,
    stub,
)
from kubeletemu.config import ConfigError
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import Decision
from kubeletemu.scheduler.live import FLAVOURS
from kubeletemu.scheduler.objects import ObjectError, object_files, read_objects
from kubeletemu.scheduler.profile import load_profile, node_infos, schedule


def decision_doc(decision: Decision) -> dict[str, Any]:
    """The JSON shape: ``{"pod", "nodes": [{"name", "fits", "reason", "score", "policy", "error"?}],
    "chosen"}``."""
    nodes = []
    for verdict in decision.nodes:
        node: dict[str, Any] = {
            "name": verdict.name,
            "fits": verdict.fits,
            "reason": verdict.status.message,
            "score": verdict.score,
            "policy": verdict.policy,
        }
        if verdict.crash is not None:
            node["error"] = str(verdict.crash)
        nodes.append(node)
    pod = decision.pod
    return {"pod": f"{pod.namespace}/{pod.name}", "nodes": nodes, "chosen": decision.chosen}


def _table(doc: dict[str, Any]) -> str:
    head = f"{doc['pod']}: {'scheduled on ' + doc['chosen'] if doc['chosen'] else 'no node fits'}\n"
    rows = [["NODE", "FITS", "SCORE", "POLICY", "REASON"]]
    for node in doc["nodes"]:
        fits = "crash" if node["fits"] is None else ("yes" if node["fits"] else "no")
        reason = node.get("error") or node["reason"]
        score = "-" if node["score"] is None else str(node["score"])
        rows.append([node["name"], fits, score, node["policy"] or "-", reason or ""])
    return head + align(rows)


def _objects_text(paths: list[str]) -> str:
    """The objects of every --nrt path as one YAML stream, for the daemon (which reads no files)."""
    texts = []
    try:
        files = object_files(paths)
    except ObjectError as err:
        fail(str(err))
    for file in files:
        try:
            texts.append(file.read_text(encoding="utf-8"))
        except OSError as err:
            fail(f"{file}: {err.strerror}")
    return "\n---\n".join(texts)


def _response_doc(response: pb.ScheduleResponse) -> dict[str, Any]:
    nodes = []
    for v in response.nodes:
        node: dict[str, Any] = {
            "name": v.name,
            "fits": v.fits if v.HasField("fits") else None,
            "reason": v.reason,
            "score": v.score if v.HasField("score") else None,
            "policy": v.policy,
        }
        if v.error:
            node["error"] = v.error
        nodes.append(node)
    return {"pod": response.pod, "nodes": nodes, "chosen": response.chosen or None}


def _on_daemon(args: argparse.Namespace, pods: list[Pod]) -> list[dict[str, Any]]:
    socket = socket_path(args)
    config = ""
    if args.scheduler_config:
        try:
            config = Path(args.scheduler_config).read_text(encoding="utf-8")
        except OSError as err:
            fail(f"{args.scheduler_config}: {err.strerror}")
    objects = _objects_text(args.nrt or [])
    client = stub(socket)
    return [
        _response_doc(
            call(
                client.Schedule,
                pb.ScheduleRequest(
                    pod=pod_source(pod),
                    objects=objects,
                    scheduler_config=config,
                    profile=args.profile or "",
                    flavour=args.flavour or "",
                ),
                socket,
            )
        )
        for pod in pods
    ]


def cmd_schedule(args: argparse.Namespace) -> int:
    pods = read_pod_files(args.files)
    if args.socket or args.live:
        docs = _on_daemon(args, pods)
    else:
        if args.flavour:
            fail("--flavour picks how the daemon's own node is published: it needs --live or --socket")
        if not args.nrt:
            fail("--nrt is required (or --live / --socket: the daemon's node and any --nrt objects)")
        try:
            cluster = read_objects(args.nrt)
            profile = load_profile(args.scheduler_config, args.profile)
        except (ObjectError, ConfigError) as err:
            fail(str(err))
        if not cluster.node_names:
            fail(f"no NodeResourceTopology or Node object in {', '.join(args.nrt)}")
        nodes = node_infos(cluster)
        docs = [decision_doc(schedule(pod, nodes, profile)) for pod in pods]
    emit(docs, args.output, _table)
    return EXIT_OK if all(d["chosen"] for d in docs) else EXIT_REFUSED


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "schedule",
        help="where the scheduler would put pods, given NodeResourceTopology, Node and Pod objects",
    )
    add_file_arguments(p, "the pod(s) to schedule")
    p.add_argument(
        "--nrt",
        action="append",
        metavar="PATH",
        help="files or directories of NodeResourceTopology, Node and Pod objects (kubectl get -o yaml); "
        "a Pod with spec.nodeName is on that node; repeatable",
    )
    p.add_argument(
        "--scheduler-config",
        metavar="FILE",
        help="a KubeSchedulerConfiguration (default: the default scheduler's resource plugins)",
    )
    p.add_argument("--profile", help="the profile's schedulerName (default: the first)")
    add_socket_arguments(
        p,
        "ask the daemon at this socket: its own node first (as its exporter would publish it), then the "
        "--nrt objects. Default: here, on the --nrt objects alone",
    )
    p.add_argument("--live", action="store_true", help="ask the daemon found as other commands find it")
    p.add_argument(
        "--flavour",
        choices=FLAVOURS,
        help="with --live/--socket: the daemon's node as this exporter publishes it (koordlet: its NRT, "
        "Device and pods' device-allocated annotations). Default: koordlet when the profile runs "
        "NodeNUMAResource(Design), else rte",
    )
    add_output_argument(p)
    p.set_defaults(func=cmd_schedule)
