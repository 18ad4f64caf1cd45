"""Shadow mode: ``shadow-report``, the mirror of the real kubelet and its self-check."""

from __future__ import annotations

import argparse
import time
from typing import Any

from kubeletemu.cli.common import (
    EXIT_OK,
    EXIT_REFUSED,
    add_output_argument,
    add_socket_arguments,
    call_doc,
    emit,
    fail,
    socket_path,
)


def _report_table(r: dict[str, Any]) -> str:
    when = r.get("refreshed_at") or 0
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when)) if when else "never"
    lines = [
        f"kubelet: {r['kubelet_root_dir']} (config {r['kubelet_config']}, "
        f"podresources {r['kubelet_podresources_socket']})",
        f"mirror #{r['generation']} built {stamp} on {r['trigger']} in "
        f"{r['duration_seconds'] * 1000:.0f} ms; changes noticed by {r['watch_mode'] or '-'}",
        f"pods: {r['pods_listed']} listed, {r['pods_matched']} matched to checkpoint UIDs, "
        f"{r['pods_derived']} derived",
    ]
    if r.get("kubelet_version"):
        said = (
            f" ({r['kubelet_binary']} says {r['kubelet_binary_version']})"
            if r["kubelet_binary_version"]
            else ""
        )
        source = r["kubelet_version_source"]
        lines.insert(1, f"kubelet version: emulating {r['kubelet_version']}, from the {source}{said}")
        if r["kubelet_version_note"]:
            lines.insert(2, f"  {r['kubelet_version_note']}")
    if r["last_error"]:
        lines.append(f"last refresh FAILED (this mirror is older): {r['last_error']}")
    sections = (
        ("ambiguous UID matches", "ambiguous_matches"),
        ("stale checkpoint entries (pods no longer listed)", "stale_uids"),
        ("assumed requests", "placeholders"),
        ("warnings", "warnings"),
        ("interchangeable device choices", "interchangeable_devices"),
    )
    for title, key in sections:
        if r[key]:
            lines.append(f"{title}:")
            lines.extend(f"  {line}" for line in r[key])
    lines.append(
        f"self-check: {r['containers_agreeing']} of {r['containers_checked']} container(s) agree, "
        f"{len(r['divergences'])} divergence(s); replay order: {', '.join(r['replay_order']) or '-'}"
    )
    for d in r["divergences"]:
        detail = f" ({d['detail']})" if d["detail"] else ""
        lines.append(
            f"  #{d['replay_position']} {d['namespace']}/{d['name']} {d['container']}: {d['resource']} "
            f"kubelet={d['kubelet']} kubeletemu={d['kubeletemu']}{detail}"
        )
    return "\n".join(lines)


def cmd_shadow_report(args: argparse.Namespace) -> int:
    socket = socket_path(args)
    doc = call_doc(socket, "GetShadowReport", "kubeletemu.v1.ShadowReport")
    emit([doc], args.output, _report_table)
    if doc["divergences"]:
        count = len(doc["divergences"])
        fail(f"shadow-report: {count} divergence(s) from the kubelet (listed above)", EXIT_REFUSED)
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser(
        "shadow-report",
        help="shadow mode: the mirror and its self-check",
        description="Shadow mode: how the mirror of the real kubelet was built, and its self-check "
        "against every decision the kubelet took (exit 1 on a divergence).",
    )
    add_socket_arguments(report)
    add_output_argument(report)
    report.set_defaults(func=cmd_shadow_report)
