"""``schedule``: where would the scheduler put a pod, per scheduler-side model (``kubeletemu.scheduler``)?"""

from __future__ import annotations

import argparse
from typing import Any

from kubeletemu.cli.common import (
    EXIT_OK,
    EXIT_REFUSED,
    add_file_arguments,
    add_output_argument,
    align,
    emit,
    fail,
    read_pod_files,
)
from kubeletemu.config import ConfigError
from kubeletemu.scheduler.framework import Decision
from kubeletemu.scheduler.objects import ObjectError, read_objects
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


def cmd_schedule(args: argparse.Namespace) -> int:
    pods = read_pod_files(args.files)
    try:
        cluster = read_objects(args.nrt)
        profile = load_profile(args.scheduler_config, args.profile)
    except (ObjectError, ConfigError) as err:
        fail(str(err))
    if not cluster.node_names:
        fail(f"no NodeResourceTopology or Node object in {', '.join(args.nrt)}")
    nodes = node_infos(cluster)
    decisions = [schedule(pod, nodes, profile) for pod in pods]
    emit((decision_doc(d) for d in decisions), args.output, _table)
    return EXIT_OK if all(d.chosen for d in decisions) else EXIT_REFUSED


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "schedule",
        help="where the scheduler would put pods, given NodeResourceTopology, Node and Pod objects",
    )
    add_file_arguments(p, "the pod(s) to schedule")
    p.add_argument(
        "--nrt",
        action="append",
        required=True,
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
    add_output_argument(p)
    p.set_defaults(func=cmd_schedule)
