"""What-if tools: ``simulate`` (a pod stream under a policy matrix) and ``least-numa-nodes``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kubeletemu.cli.choices import TOPOLOGY_MANAGER_SCOPES
from kubeletemu.cli.common import (
    EXIT_OK,
    EXIT_REFUSED,
    add_file_arguments,
    add_live_argument,
    add_output_argument,
    add_socket_arguments,
    call_doc,
    emit,
    fail,
    on_daemon,
    one_line,
    pod_source,
    read_pod_files,
    socket_path,
)

# A simulation's JSON report holds every admission attempt: more than gRPC's default 4 MiB for long streams.
SIMULATION_MAX_MESSAGE = 256 * 1024 * 1024
SIMULATION_TIMEOUT = 600.0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Runs locally from the file's topology, configuration and stream; with ``--live``, on the daemon's
    node as it is now (gRPC ``Simulate``): the file then gives the matrix and the stream only. ``--chart``
    is drawn here from the JSON report, wherever it ran: the daemon has no plotting library."""
    [path] = args.files if len(args.files) == 1 else fail("simulate takes one -f file")
    live = on_daemon(args)

    import yaml

    from kubeletemu.plot import PlotUnavailable, require_matplotlib
    from kubeletemu.simulate import SimulationError, render_json, render_table
    from kubeletemu.simulate.spec import load_simulation, pod_files, read_text

    if args.chart:
        try:
            require_matplotlib()  # before a long run, not after it
        except PlotUnavailable as err:
            fail(str(err))
    try:
        if live:
            socket = socket_path(args)
            text = read_text(path)
            request = {"simulation": text, "files": pod_files(text, Path(path).parent)}
            response = call_doc(
                socket,
                "Simulate",
                "kubeletemu.v1.SimulateResponse",
                ("kubeletemu.v1.SimulateRequest", request),
                timeout=SIMULATION_TIMEOUT,
                max_receive=SIMULATION_MAX_MESSAGE,
            )
            table, as_json = response["table"], response["json"]
        else:
            report = load_simulation(path).run()
            table, as_json = render_table(report), render_json(report)
    except SimulationError as err:
        fail(str(err))
    except OSError as err:
        fail(f"{path}: {err.strerror}")
    if args.output == "table":
        sys.stdout.write(table + "\n")
    elif args.output == "json":
        sys.stdout.write(as_json + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(json.loads(as_json), sort_keys=False))
    sys.stdout.flush()
    if args.chart:
        from kubeletemu.plot import simulation_chart

        try:
            simulation_chart(json.loads(as_json), Path(args.chart))
        except OSError as err:
            fail(f"{args.chart}: {err.strerror}")
    return EXIT_OK


def _least_table(doc: dict[str, Any]) -> str:
    needed = "does not fit" if doc["numa_nodes"] < 0 else f"needs {doc['numa_nodes']} NUMA node(s)"
    distance = "minimum distance reachable" if doc["min_distance"] else "minimum distance not reachable"
    lines = [f"{doc['pod']} ({doc['scope']} scope): {needed}, {distance}, score {doc['score']}"]
    for req in doc["requirements"]:
        nodes = req["numa_nodes"] if req["fits"] else "no combination fits"
        lines.append(f"  {req['name']:<20} numa={nodes}")
    return "\n".join(lines)


def cmd_least_numa_nodes(args: argparse.Namespace) -> int:
    pods = read_pod_files(args.files)
    socket = socket_path(args)
    misfits: list[str] = []

    def answers() -> Any:
        for pod in pods:
            request = {
                "pod": pod_source(pod),
                "scope": args.scope or "",
                "max_numa_nodes": args.max_numa_nodes or 0,
            }
            doc = call_doc(
                socket,
                "LeastNUMANodes",
                "kubeletemu.v1.LeastNUMANodesResponse",
                ("kubeletemu.v1.LeastNUMANodesRequest", request),
            )
            doc["pod"] = f"{pod.namespace}/{pod.name}"
            if doc["numa_nodes"] < 0:
                misfits.append(doc["pod"])
            yield doc

    emit(answers(), args.output, _least_table)
    if misfits:
        fail(
            one_line(f"least-numa-nodes: no NUMA node combination fits pod {', '.join(misfits)}"),
            EXIT_REFUSED,
        )
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    least = sub.add_parser(
        "least-numa-nodes",
        help="the scheduler's LeastNUMANodes score for pods here",
        description="The NodeResourceTopologyMatch plugin's LeastNUMANodes answer for pods on the daemon's "
        "node as it is now: the NUMA nodes each needs, and the score.",
    )
    add_file_arguments(least)
    add_socket_arguments(least)
    add_output_argument(least)
    least.add_argument(
        "--scope",
        choices=TOPOLOGY_MANAGER_SCOPES,
        help="count per container or per pod: %(choices)s (default: the node's topologyManagerScope)",
    )
    least.add_argument(
        "--max-numa-nodes",
        type=int,
        metavar="N",
        help="the most NUMA nodes a combination may span (default: the node's max-allowable-numa-nodes)",
    )
    least.set_defaults(func=cmd_least_numa_nodes)

    simulate = sub.add_parser(
        "simulate",
        help="replay a pod stream under a matrix of policies",
        description="Replay a pod stream under a matrix of policies, scopes and options: here, on the "
        "file's topology, or with --live on the daemon's node as it is now.",
    )
    add_file_arguments(simulate, "a kind: Simulation YAML file")
    add_live_argument(
        simulate,
        "run on the daemon's node as it is now (its topology, configuration and pods; shadow mode: the real "
        "node's), changing nothing; the file then gives matrix and stream only. Default: run here, on the "
        "file's topology",
    )
    add_socket_arguments(simulate)
    add_output_argument(simulate)
    simulate.add_argument(
        "--chart",
        metavar="PNG",
        help="also write a PNG chart to this file (needs matplotlib: pip install 'kubeletemu[plot]')",
    )
    simulate.set_defaults(func=cmd_simulate)
