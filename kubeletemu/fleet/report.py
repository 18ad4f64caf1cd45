"""A fleet's results for people (an aligned table in Kubernetes units), for programs (JSON, exact
integers) and for spreadsheets (CSV, one row per configuration, the scalar fields)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

CSV_FIELDS = (
    "name", "scheduler", "cache", "resync_period_s", "exporter_period_s", "seed", "kubelet_versions",
    "pods_total", "pods_created", "admissions", "topology_affinity_errors", "topology_affinity_error_rate",
    "other_admission_errors", "pending_p50_s", "pending_p99_s", "pending_max_s", "scheduling_attempts",
    "running_at_end", "never_scheduled", "resyncs.fingerprint_match", "resyncs.fingerprint_mismatch",
    "largest_single_numa_free.cpu", "largest_single_numa_free.memory", "plugin_crashes", "simulated_s",
)  # fmt: skip
_BINARY = (
    ("Ei", 1 << 60),
    ("Pi", 1 << 50),
    ("Ti", 1 << 40),
    ("Gi", 1 << 30),
    ("Mi", 1 << 20),
    ("Ki", 1 << 10),
)


def cpu_text(millicores: int) -> str:
    """``36`` or ``1500m``, as Kubernetes writes CPU."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def bytes_text(amount: int) -> str:
    """The largest binary unit, one decimal at most (``77Gi``, ``1.5Gi``, ``512Mi``)."""
    for suffix, size in _BINARY:
        if amount >= size:
            value = f"{amount / size:.1f}".removesuffix(".0")
            return f"{value}{suffix}"
    return str(amount)


def duration_text(seconds: float) -> str:
    """``0s``, ``2.5s``, ``1m5s``, ``1h2m``, as Go prints durations (rounded to 0.1 s)."""
    tenths = round(seconds * 10)
    hours, rest = divmod(tenths, 36000)
    minutes, rest = divmod(rest, 600)
    secs = f"{rest / 10:.1f}".removesuffix(".0")
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes or hours else "")
    return text + (f"{secs}s" if rest or not text else "")


def render_json(results: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps({"configurations": list(results)}, indent=2)


def render_yaml(results: Sequence[Mapping[str, Any]]) -> str:
    """The JSON document as YAML (``-o yaml``, as every other command offers)."""
    return yaml.safe_dump({"configurations": [dict(r) for r in results]}, sort_keys=False)


def _flat(result: Mapping[str, Any], key: str) -> Any:
    value: Any = result
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, list):
        return ";".join(str(v) for v in value)
    return "" if value is None else value


def render_csv(results: Sequence[Mapping[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for result in results:
        writer.writerow([_flat(result, key) for key in CSV_FIELDS])
    return out.getvalue()


def render_table(results: Sequence[Mapping[str, Any]]) -> str:
    header = (
        "CONFIGURATION", "TOPOLOGYAFFINITYERROR", "OTHER", "PENDING P50", "P99", "MAX", "ATTEMPTS",
        "RUNNING", "NEVER SCHEDULED", "RESYNCS (MATCH/MISMATCH)", "LARGEST FREE NUMA (CPU/MEMORY)",
    )  # fmt: skip
    rows = [header]
    for r in results:
        resyncs = r["resyncs"]
        matched = f"{resyncs['fingerprint_match']}/{resyncs['fingerprint_mismatch']}"
        free = r["largest_single_numa_free"]
        rate = r["topology_affinity_error_rate"] * 100
        rows.append(
            (
                r["name"],
                f"{r['topology_affinity_errors']} ({rate:.1f}%)",
                str(r["other_admission_errors"]),
                duration_text(r["pending_p50_s"]),
                duration_text(r["pending_p99_s"]),
                duration_text(r["pending_max_s"]),
                str(r["scheduling_attempts"]),
                str(r["running_at_end"]),
                str(r["never_scheduled"]),
                matched if r["cache"] == "overreserve" else "-",
                f"{cpu_text(free['cpu'])}/{bytes_text(free['memory'])}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    nodes = results[0].get("nodes", "?") if results else 0
    pods = results[0]["pods_total"] if results else 0
    lines.insert(0, f"fleet: {len(results)} configuration(s), {nodes} node(s), {pods} workload pod(s)")
    return "\n".join(lines)
