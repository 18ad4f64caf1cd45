"""The ``kubeletemu`` command: the daemon (``serve``) and its clients.

Exit status: 0 when every pod was admitted (or the command succeeded), 1 when a pod was rejected (for
``shadow-report``: when the self-check found a divergence), 2 on a usage or input error, with one readable
line on standard error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import grpc
from google.protobuf import json_format

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc as pb_grpc
from kubeletemu.manifest import ManifestError, pod_to_manifest, read_pods

DEFAULT_SOCKET = "/run/kubeletemu/kubeletemu.sock"
EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class CLIError(Exception):
    """A one-line error for standard error, exit status 2."""


def _fail(message: str) -> NoReturn:
    raise CLIError(message)


# A simulation's JSON report holds every admission attempt: more than gRPC's default 4 MiB for long streams.
SIMULATION_MAX_MESSAGE = 256 * 1024 * 1024
SIMULATION_TIMEOUT = 600.0


def _stub(socket: str, max_receive: int | None = None) -> pb_grpc.AdmissionStub:
    options = [] if max_receive is None else [("grpc.max_receive_message_length", max_receive)]
    channel = grpc.insecure_channel(f"unix:{socket}", options=options)
    return pb_grpc.AdmissionStub(channel)


def _call(method: Any, request: Any, timeout: float = 30.0) -> Any:
    try:
        return method(request, timeout=timeout)
    except grpc.RpcError as err:
        code = err.code()
        detail = err.details() or ""
        if code == grpc.StatusCode.UNAVAILABLE:
            _fail(f"cannot reach the daemon: {detail}")
        _fail(f"{code.name}: {detail}")


def _to_dict(message: Any) -> dict[str, Any]:
    out: dict[str, Any] = json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    return out


def _affinity(container: dict[str, Any]) -> list[int] | None:
    hint = container.get("affinity")
    if not hint or hint.get("any_numa"):
        return None
    return list(hint.get("numa_nodes", []))


def _pod_json(response: pb.AdmitResponse) -> dict[str, Any]:
    doc = _to_dict(response)
    for container in doc["containers"]:
        container["numa_affinity"] = _affinity(container)
    return doc


def _fmt_container(c: dict[str, Any]) -> str:
    hint = c.get("affinity")
    if not hint:
        affinity = "-"
    elif hint.get("any_numa"):
        affinity = f"any{' (preferred)' if hint.get('preferred') else ''}"
    else:
        affinity = f"{hint['numa_nodes']}{' preferred' if hint.get('preferred') else ''}"
    cpus = ",".join(map(str, c.get("cpu_ids", []))) or "-"
    cpus = cpus if c.get("exclusive_cpus") else f"shared({cpus})"
    memory = (
        ", ".join(f"{b['memory_type']}={b['size']}@{b['numa_nodes']}" for b in c.get("memory", [])) or "-"
    )
    devices = (
        ", ".join(f"{d['resource_name']}={','.join(d['device_ids'])}" for d in c.get("devices", [])) or "-"
    )
    head = f"  {c['name']:<20} {c['kind']:<8} numa={affinity:<16} cpus={cpus:<20}"
    return f"{head} memory={memory}  devices={devices}"


def _print_admit(doc: dict[str, Any]) -> None:
    verdict = "ADMITTED" if doc["admitted"] else f"REJECTED {doc['reason']}: {doc['message']}"
    print(f"{doc['namespace']}/{doc['name']} ({doc['uid']}) {doc['qos_class']}: {verdict}")
    if doc.get("decided_by") and not doc["admitted"]:
        print(f"  decided by the {doc['decided_by']} admit handler")
    for container in doc["containers"]:
        print(_fmt_container(container))
    if doc.get("cleanup"):
        print(f"  released: {doc['cleanup']}")


def _read(path: str) -> list[Any]:
    try:
        return read_pods(path)
    except ManifestError as err:
        _fail(str(err))
    except OSError as err:
        _fail(f"{path}: {err.strerror}")


def cmd_admit(args: argparse.Namespace, dry_run: bool) -> int:
    stub = _stub(args.socket)
    rejected = False
    docs = []
    for pod in _read(args.file):
        source = pb.PodSource(manifest=json.dumps(pod_to_manifest(pod)))
        if dry_run:
            overrides = pb.PolicyOverrides()
            if args.policy:
                overrides.topology_manager_policy = args.policy
            if args.scope:
                overrides.topology_manager_scope = args.scope
            if args.policy_option is not None:
                overrides.replace_policy_options = True
                for item in args.policy_option:
                    key, sep, value = item.partition("=")
                    if not sep:
                        _fail(f"--policy-option {item!r}: expected KEY=VALUE")
                    overrides.topology_manager_policy_options[key] = value
            response = _call(stub.WouldAdmit, pb.WouldAdmitRequest(pod=source, overrides=overrides))
        else:
            response = _call(stub.Admit, pb.AdmitRequest(pod=source))
        doc = _pod_json(response)
        rejected |= not doc["admitted"]
        if args.output == "json":
            docs.append(doc)
        else:
            _print_admit(doc)
    if args.output == "json":
        # One JSON object per pod, one per line (JSON Lines): the same shape for one pod or many.
        print("\n".join(json.dumps(doc, sort_keys=True) for doc in docs))
    return EXIT_REJECTED if rejected else EXIT_OK


def cmd_remove(args: argparse.Namespace) -> int:
    response = _call(_stub(args.socket).RemovePod, pb.RemovePodRequest(uid=args.uid))
    if args.output == "json":
        print(json.dumps(_to_dict(response), indent=2))
    else:
        print(f"removed {response.namespace}/{response.name} ({response.uid})")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    response = _call(_stub(args.socket).ListPods, pb.ListPodsRequest())
    doc = _to_dict(response)
    if args.output == "json":
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    for pod in doc["pods"]:
        print(f"{pod['namespace']}/{pod['name']} ({pod['uid']}) {pod['qos_class']}")
        for container in pod["containers"]:
            print(_fmt_container(container))
    return EXIT_OK


def cmd_topology(args: argparse.Namespace) -> int:
    doc = _to_dict(_call(_stub(args.socket).GetNodeTopology, pb.GetNodeTopologyRequest()))
    if args.output == "json":
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    print(
        f"topologyManagerPolicy={doc['topology_manager_policy']} scope={doc['topology_manager_scope']} "
        f"cpuManagerPolicy={doc['cpu_manager_policy']} memoryManagerPolicy={doc['memory_manager_policy']}"
    )
    for node in doc["numa_nodes"]:
        free = len(node["free_cpu_ids"])
        print(
            f"node {node['id']}: cpus {len(node['cpu_ids'])} (free {free}), memory free "
            f"{node['memory_free_bytes']} of {node['memory_allocatable_bytes']} allocatable"
        )
    for error in doc["kubelet_start_errors"]:
        print(f"a real kubelet would not start here: {error}")
    return EXIT_OK


def cmd_fingerprint(args: argparse.Namespace) -> int:
    request = pb.GetFingerprintRequest(method=args.method)
    response = _call(_stub(args.socket).GetFingerprint, request)
    if args.output == "json":
        print(json.dumps(_to_dict(response), indent=2))
    else:
        print(response.fingerprint)
    return EXIT_OK


def cmd_nrt(args: argparse.Namespace) -> int:
    import yaml

    from kubeletemu.daemon.convert import nrt_from_msg

    request = pb.GetNodeResourceTopologyRequest(fingerprint_method=args.method)
    manifest = nrt_from_msg(_call(_stub(args.socket).GetNodeResourceTopology, request)).to_manifest()
    if args.output == "json":
        print(json.dumps(manifest, indent=2))
    else:
        print(yaml.safe_dump(manifest, sort_keys=False), end="")
    return EXIT_OK


def cmd_shadow_report(args: argparse.Namespace) -> int:
    response = _call(_stub(args.socket).GetShadowReport, pb.GetShadowReportRequest())
    if args.output == "json":
        print(json.dumps(_to_dict(response), indent=2))
        return EXIT_REJECTED if response.divergences else EXIT_OK
    r = response
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.refreshed_at)) if r.refreshed_at else "never"
    print(
        f"kubelet: {r.kubelet_root_dir} (config {r.kubelet_config}, "
        f"podresources {r.kubelet_podresources_socket})"
    )
    print(
        f"mirror #{r.generation} built {when} on {r.trigger} in {r.duration_seconds * 1000:.0f} ms; "
        f"changes noticed by {r.watch_mode or '-'}"
    )
    print(
        f"pods: {r.pods_listed} listed, {r.pods_matched} matched to checkpoint UIDs, {r.pods_derived} derived"
    )
    if r.last_error:
        print(f"last refresh FAILED (this mirror is older): {r.last_error}")
    sections = (
        ("ambiguous UID matches", r.ambiguous_matches),
        ("stale checkpoint entries (pods no longer listed)", r.stale_uids),
        ("assumed requests", r.placeholders),
        ("warnings", r.warnings),
        ("interchangeable device choices", r.interchangeable_devices),
    )
    for title, lines in sections:
        if lines:
            print(f"{title}:")
            for line in lines:
                print(f"  {line}")
    print(
        f"self-check: {r.containers_agreeing} of {r.containers_checked} container(s) agree, "
        f"{len(r.divergences)} divergence(s); replay order: {', '.join(r.replay_order) or '-'}"
    )
    for d in r.divergences:
        detail = f" ({d.detail})" if d.detail else ""
        print(
            f"  #{d.replay_position} {d.namespace}/{d.name} {d.container}: {d.resource} "
            f"kubelet={d.kubelet} kubeletemu={d.kubeletemu}{detail}"
        )
    return EXIT_REJECTED if r.divergences else EXIT_OK


def _duration(text: str) -> float:
    from kubeletemu.config.emulator_config import parse_duration

    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def cmd_least_numa_nodes(args: argparse.Namespace) -> int:
    stub = _stub(args.socket)
    docs = []
    for pod in _read(args.file):
        request = pb.LeastNUMANodesRequest(
            pod=pb.PodSource(manifest=json.dumps(pod_to_manifest(pod))),
            scope=args.scope or "",
            max_numa_nodes=args.max_numa_nodes or 0,
        )
        doc = _to_dict(_call(stub.LeastNUMANodes, request))
        doc["pod"] = f"{pod.namespace}/{pod.name}"
        docs.append(doc)
    if args.output == "json":
        # One JSON object per pod, one per line (JSON Lines): the same shape for one pod or many.
        print("\n".join(json.dumps(doc, sort_keys=True) for doc in docs))
        return EXIT_OK
    for doc in docs:
        needed = "does not fit" if doc["numa_nodes"] < 0 else f"needs {doc['numa_nodes']} NUMA node(s)"
        distance = "minimum distance reachable" if doc["min_distance"] else "minimum distance not reachable"
        print(f"{doc['pod']} ({doc['scope']} scope): {needed}, {distance}, score {doc['score']}")
        for req in doc["requirements"]:
            nodes = req["numa_nodes"] if req["fits"] else "no combination fits"
            print(f"  {req['name']:<20} numa={nodes}")
    return EXIT_OK


def cmd_simulate(args: argparse.Namespace) -> int:
    """Runs locally from the file's topology, configuration and stream; with ``--socket``, on the daemon's
    node as it is now (gRPC ``Simulate``): the file then gives the matrix and the stream only."""
    from kubeletemu.simulate import SimulationError, render_chart, render_json, render_table
    from kubeletemu.simulate.spec import load_simulation, pod_files, read_text

    try:
        if args.socket is not None:
            text = read_text(args.file)
            request = pb.SimulateRequest(
                simulation=text, files=pod_files(text, Path(args.file).parent), png=bool(args.chart)
            )
            stub = _stub(args.socket, max_receive=SIMULATION_MAX_MESSAGE)
            response = _call(stub.Simulate, request, timeout=SIMULATION_TIMEOUT)
            output, chart = response.json if args.output == "json" else response.table, response.png
        else:
            report = load_simulation(args.file).run()
            output = render_json(report) if args.output == "json" else render_table(report)
            chart = render_chart(report) if args.chart else b""
    except SimulationError as err:
        _fail(str(err))
    except OSError as err:
        _fail(f"{args.file}: {err.strerror}")
    print(output)
    if args.chart:
        try:
            with open(args.chart, "wb") as out:
                out.write(chart)
        except OSError as err:
            _fail(f"{args.chart}: {err.strerror}")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from kubeletemu.daemon.logging import configure_logging
    from kubeletemu.daemon.server import ServeOptions, StartupError, serve

    configure_logging(args.log_level)
    options = ServeOptions(
        config_paths=args.config or (),
        socket=args.socket,
        podresources_socket=args.podresources_socket,
        state_dir=args.state_dir,
        sysfs_root=args.sysfs_root,
        procfs_root=args.procfs_root,
        metrics_address=args.metrics_address,
        sample=args.sample,
        shadow=args.shadow,
        kubelet_root_dir=args.kubelet_root_dir,
        kubelet_config=args.kubelet_config,
        kubelet_podresources_socket=args.kubelet_podresources_socket,
        shadow_refresh_period=args.shadow_refresh_period,
    )
    try:
        return serve(options)
    except StartupError as err:
        _fail(str(err))


def cmd_probe(args: argparse.Namespace) -> int:
    from hostprobe.__main__ import main as probe_main

    argv = ["--sysfs-root", args.sysfs_root, "--procfs-root", args.procfs_root]
    if args.output == "json":
        argv.append("--json")
    return probe_main(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubeletemu", description="The kubelet's NUMA-aware admission, emulated."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def client(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--socket", default=DEFAULT_SOCKET, help="the daemon's socket (%(default)s)")
        p.add_argument("-o", "--output", choices=("table", "json"), default="table")
        return p

    serve = sub.add_parser("serve", help="run the daemon")
    serve.add_argument("--config", action="append", help="KubeletConfiguration/EmulatorConfiguration YAML")
    serve.add_argument("--socket", help=f"admission socket (default from the config, else {DEFAULT_SOCKET})")
    serve.add_argument(
        "--podresources-socket",
        help="the kubelet podresources API socket (default from the config, else podresources.sock "
        "beside --socket)",
    )
    serve.add_argument("--state-dir", help="checkpoints and the pod registry")
    serve.add_argument("--sysfs-root", help="probe this sysfs tree instead of /sys")
    serve.add_argument("--procfs-root", help="probe this procfs tree instead of /proc")
    serve.add_argument("--metrics-address", help="serve Prometheus metrics on HOST:PORT (off by default)")
    serve.add_argument(
        "--sample",
        action="store_true",
        help="use the bundled sample topology (2 NUMA nodes) instead of this host",
    )
    serve.add_argument("--log-level", default="info")
    serve.add_argument(
        "--shadow",
        action="store_true",
        help="mirror this node's real kubelet (read-only) instead of emulating a node; Admit and RemovePod "
        "are refused",
    )
    serve.add_argument(
        "--kubelet-root-dir", help="shadow mode: the kubelet's root directory (/var/lib/kubelet)"
    )
    serve.add_argument(
        "--kubelet-config",
        help="shadow mode: the kubelet's config file (default: config.yaml in the root dir)",
    )
    serve.add_argument(
        "--kubelet-podresources-socket",
        help="shadow mode: the kubelet's podresources socket (default: pod-resources/kubelet.sock in the "
        "root dir)",
    )
    serve.add_argument(
        "--shadow-refresh-period",
        type=_duration,
        help="shadow mode: re-read the kubelet's state this often besides on changes (10s; 0s: never)",
    )
    serve.set_defaults(func=cmd_serve)

    for name, dry in (("admit", False), ("would-admit", True)):
        p = client(name, "admit pods" if not dry else "ask whether pods would be admitted, changing nothing")
        p.add_argument("-f", "--file", required=True, help="pod manifest(s), YAML or JSON; - for stdin")
        if dry:
            p.add_argument("--policy", help="what-if topologyManagerPolicy")
            p.add_argument("--scope", help="what-if topologyManagerScope")
            p.add_argument("--policy-option", action="append", help="what-if policy option KEY=VALUE")
        p.set_defaults(func=lambda a, d=dry: cmd_admit(a, d))

    remove = client("remove", "remove an admitted pod")
    remove.add_argument("--uid", required=True)
    remove.set_defaults(func=cmd_remove)
    client("list", "list admitted pods").set_defaults(func=cmd_list)
    client("topology", "per-NUMA-node allocatable and free resources").set_defaults(func=cmd_topology)
    methods = ("with-exclusive-resources", "all", "exclude-terminal")
    fingerprint = client("fingerprint", "the pfp0v001 fingerprint of the pods podresources List reports")
    fingerprint.add_argument(
        "--method",
        choices=methods,
        default=methods[0],
        help="which listed pods go in: %(choices)s (default %(default)s, as resource-topology-exporter)",
    )
    fingerprint.set_defaults(func=cmd_fingerprint)
    report = client("shadow-report", "shadow mode: the mirror of the real kubelet and its self-check")
    report.set_defaults(func=cmd_shadow_report)
    nrt = sub.add_parser("nrt", help="the NodeResourceTopology an exporter would publish (kubectl apply -f)")
    nrt.add_argument("--socket", default=DEFAULT_SOCKET, help="the daemon's socket (%(default)s)")
    nrt.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    nrt.add_argument("--method", choices=methods, default=methods[0], help="the fingerprint's pod selection")
    nrt.set_defaults(func=cmd_nrt)

    least = client("least-numa-nodes", "the scheduler's LeastNUMANodes answer for pods on this node")
    least.add_argument("-f", "--file", required=True, help="pod manifest(s); - for stdin")
    least.add_argument(
        "--scope", choices=("container", "pod"), help="default: the node's topologyManagerScope"
    )
    least.add_argument("--max-numa-nodes", type=int, help="default: the node's max-allowable-numa-nodes")
    least.set_defaults(func=cmd_least_numa_nodes)

    simulate = sub.add_parser(
        "simulate", help="replay a pod stream under a matrix of policies (here, or on the daemon's node)"
    )
    simulate.add_argument("-f", "--file", required=True, help="a kind: Simulation YAML file")
    simulate.add_argument(
        "--socket",
        help="run on the daemon's node as it is now (its topology, configuration and pods; shadow mode: the "
        "real node's), changing nothing; the file then gives matrix and stream only. Default: run here, "
        "on the file's topology",
    )
    simulate.add_argument("-o", "--output", choices=("table", "json"), default="table")
    simulate.add_argument("--chart", help="also write a PNG chart to this file")
    simulate.set_defaults(func=cmd_simulate)

    probe = sub.add_parser("probe", help="print the host's NUMA topology")
    probe.add_argument("--sysfs-root", default="/sys")
    probe.add_argument("--procfs-root", default="/proc")
    probe.add_argument("-o", "--output", choices=("table", "json"), default="table")
    probe.set_defaults(func=cmd_probe)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except CLIError as err:
        print(f"kubeletemu: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
