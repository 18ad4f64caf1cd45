"""``schedule``: where would the scheduler put a pod, per scheduler-side model (``kubeletemu.scheduler``)?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubeletemu.cli.choices import FLAVOURS
from kubeletemu.cli.common import (
    EXIT_OK,
    EXIT_REFUSED,
    add_file_arguments,
    add_live_argument,
    add_output_argument,
    add_socket_arguments,
    align,
    call_doc,
    emit,
    fail,
    on_daemon,
    one_line,
    pod_source,
    read_pod_files,
    socket_path,
)
from kubeletemu.cli.parsing import ExamplesEpilogFormatter

if TYPE_CHECKING:
    from kubeletemu.pod import Pod
    from kubeletemu.scheduler.framework import Decision
    from kubeletemu.scheduler.profile import Profile

# The modelled plugins that read NodeResourceTopology; a profile without one places pods NUMA-blind.
NUMA_AWARE_PLUGINS = frozenset({"NodeResourceTopologyMatch", "NodeNUMAResource", "NodeNUMAResourceDesign"})


def profile_doc(profile: Profile) -> dict[str, Any]:
    """Which model decides: the profile's name, its modelled filters in order, its score plugins."""
    return {
        "name": profile.name,
        "filter": [m.name for m in profile.filters],
        "score": [{"plugin": m.name, "weight": w} for m, w in profile.scores],
    }


def decision_doc(decision: Decision, profile: Profile) -> dict[str, Any]:
    """The JSON shape: ``{"pod", "profile": {"name", "filter", "score": [{"plugin", "weight"}]},
    "nodes": [{"name", "fits", "reason", "score", "scores": [{"plugin", "score", "weight"}], "policy",
    "error"?}], "chosen"}``; a node's ``score`` is the sum of its ``scores``' score × weight."""
    nodes = []
    for verdict in decision.nodes:
        node: dict[str, Any] = {
            "name": verdict.name,
            "fits": verdict.fits,
            "reason": verdict.status.message,
            "score": verdict.score,
            "scores": [
                {"plugin": s.plugin, "score": s.score, "weight": s.weight} for s in verdict.plugin_scores
            ],
            "policy": verdict.policy,
        }
        if verdict.crash is not None:
            node["error"] = str(verdict.crash)
        nodes.append(node)
    pod = decision.pod
    return {
        "pod": f"{pod.namespace}/{pod.name}",
        "profile": profile_doc(profile),
        "nodes": nodes,
        "chosen": decision.chosen,
    }


def _profile_line(profile: dict[str, Any]) -> str:
    filters = ", ".join(profile["filter"]) or "-"
    scores = ", ".join(f"{s['plugin']} (weight {s['weight']})" for s in profile["score"]) or "-"
    line = f"profile {profile['name']}: filter {filters}; score {scores}\n"
    if not NUMA_AWARE_PLUGINS.intersection(profile["filter"]):
        line += (
            "  NUMA-blind: no filter of this profile reads NodeResourceTopology, so the node it picks may "
            "still refuse the pod (TopologyAffinityError)\n"
        )
    return line


def _score_cell(node: dict[str, Any]) -> str:
    """The total, and its terms when more than one plugin scores: ``119 (62+57)``, ``186 (2*43+100)``."""
    if node["score"] is None:
        return "-"
    parts = [str(s["score"]) if s["weight"] == 1 else f"{s['weight']}*{s['score']}" for s in node["scores"]]
    return f"{node['score']} ({'+'.join(parts)})" if len(parts) > 1 else str(node["score"])


def _table(doc: dict[str, Any]) -> str:
    head = f"{doc['pod']}: {'scheduled on ' + doc['chosen'] if doc['chosen'] else 'no node fits'}\n"
    rows = [["NODE", "FITS", "SCORE", "POLICY", "REASON"]]
    for node in doc["nodes"]:
        fits = "crash" if node["fits"] is None else ("yes" if node["fits"] else "no")
        reason = node.get("error") or node["reason"]
        rows.append([node["name"], fits, _score_cell(node), node["policy"] or "-", reason or ""])
    return head + _profile_line(doc["profile"]) + align(rows)


def _objects_text(paths: list[str]) -> str:
    """The objects of every --nrt path as one YAML stream, for the daemon (which reads no files)."""
    from kubeletemu.scheduler.objects import ObjectError, object_files

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


def _response_doc(response: dict[str, Any]) -> dict[str, Any]:
    """The daemon's answer (a ``kubeletemu.v1.ScheduleResponse`` document) in :func:`decision_doc`'s
    shape."""
    nodes = []
    for v in response["nodes"]:
        node: dict[str, Any] = {
            "name": v["name"],
            "fits": v.get("fits"),  # None where the field was not set
            "reason": v["reason"],
            "score": v.get("score"),
            "scores": [
                {"plugin": s["plugin"], "score": s["score"], "weight": s["weight"]} for s in v["scores"]
            ],
            "policy": v["policy"],
        }
        if v["error"]:
            node["error"] = v["error"]
        nodes.append(node)
    profile = {
        "name": response["profile"],
        "filter": list(response["filter_plugins"]),
        "score": [{"plugin": s["plugin"], "weight": s["weight"]} for s in response["score_plugins"]],
    }
    return {"pod": response["pod"], "profile": profile, "nodes": nodes, "chosen": response["chosen"] or None}


def _on_daemon(args: argparse.Namespace, pods: list[Pod]) -> list[dict[str, Any]]:
    socket = socket_path(args)
    config = ""
    if args.scheduler_config:
        try:
            config = Path(args.scheduler_config).read_text(encoding="utf-8")
        except OSError as err:
            fail(f"{args.scheduler_config}: {err.strerror}")
    objects = _objects_text(args.nrt or [])
    return [
        _response_doc(
            call_doc(
                socket,
                "Schedule",
                "kubeletemu.v1.ScheduleResponse",
                (
                    "kubeletemu.v1.ScheduleRequest",
                    {
                        "pod": pod_source(pod),
                        "objects": objects,
                        "scheduler_config": config,
                        "profile": args.profile or "",
                        "flavour": args.flavour or "",
                    },
                ),
            )
        )
        for pod in pods
    ]


def cmd_schedule(args: argparse.Namespace) -> int:
    pods = read_pod_files(args.files)
    if on_daemon(args):
        docs = _on_daemon(args, pods)
    else:
        from kubeletemu.config import ConfigError
        from kubeletemu.scheduler.objects import ObjectError, read_objects
        from kubeletemu.scheduler.profile import load_profile, node_infos, schedule

        if args.flavour:
            fail("schedule: --flavour picks how the daemon's own node is published: it needs --live")
        if not args.nrt:
            fail(
                "schedule: which nodes? --nrt FILE (NodeResourceTopology, Node and Pod objects) or --live "
                "(the daemon's node, and any --nrt objects)"
            )
        try:
            cluster = read_objects(args.nrt)
            profile = load_profile(args.scheduler_config, args.profile)
        except (ObjectError, ConfigError) as err:
            fail(str(err))
        if not cluster.node_names:
            fail(f"no NodeResourceTopology or Node object in {', '.join(args.nrt)}")
        nodes = node_infos(cluster)
        docs = [decision_doc(schedule(pod, nodes, profile), profile) for pod in pods]
    emit(docs, args.output, _table)
    unplaced = [d["pod"] for d in docs if not d["chosen"]]
    if unplaced:
        fail(one_line(f"schedule: no node fits pod {', '.join(unplaced)}"), EXIT_REFUSED)
    return EXIT_OK


# The example KubeSchedulerConfigurations shipped as package data, one per supported setup.
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "data" / "examples"
EXAMPLES = {
    "scheduler-nrtmatch-passthrough.yaml": "NodeResourceTopologyMatch, no cache (passthrough)",
    "scheduler-nrtmatch-overreserve.yaml": "NodeResourceTopologyMatch, overreserve cache",
    "scheduler-nrtmatch-discardreserved.yaml": "NodeResourceTopologyMatch, discardreserved cache",
    "scheduler-koordinator.yaml": "Koordinator NodeNUMAResource (reads `nrt --flavour koordlet`)",
}


def _examples_epilog() -> str:
    width = max(map(len, EXAMPLES))
    lines = [f"  {name.ljust(width)}  {what}" for name, what in EXAMPLES.items()]
    return (
        "Without --scheduler-config the profile is the default scheduler's NodeResourcesFit and\n"
        "NodeResourcesBalancedAllocation, which read no NodeResourceTopology (NUMA-blind).\n"
        f"Example --scheduler-config files, in {EXAMPLES_DIR}:\n" + "\n".join(lines)
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "schedule",
        help="where the scheduler would put pods, and why",
        description="Where the scheduler would put pods, per scheduler-side model: on NodeResourceTopology, "
        "Node and Pod objects (--nrt), and with --live on the daemon's node too.",
        epilog=_examples_epilog(),
        formatter_class=ExamplesEpilogFormatter,
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
    p.add_argument("--profile", metavar="NAME", help="the profile's schedulerName (default: the first)")
    add_live_argument(
        p,
        "ask the daemon: its own node first (as its exporter would publish it), then the --nrt objects. "
        "Default: here, on the --nrt objects alone",
    )
    add_socket_arguments(p)
    p.add_argument(
        "--flavour",
        choices=FLAVOURS,
        help="with --live: the daemon's node as this exporter publishes it (koordlet: its NRT, "
        "Device and pods' device-allocated annotations). Default: koordlet when the profile runs "
        "NodeNUMAResource(Design), else rte",
    )
    add_output_argument(p)
    p.set_defaults(func=cmd_schedule)
