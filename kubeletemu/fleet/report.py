"""A fleet's results for people (an aligned table in Kubernetes units), for programs (JSON, exact
integers) and for spreadsheets (CSV, one row per run, the scalar fields).

Each setup runs once per seed (a run, :mod:`kubeletemu.fleet.setups`); ``summaries``
(:mod:`kubeletemu.fleet.stats`) give each setup's mean and 95 % interval over its seeds. The table is a row
per setup, at most :data:`WIDTH` columns for the worked example, and states a ranking only where the
intervals separate; ``-o wide`` adds a row per run. JSON keeps every run under ``configurations``."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from kubeletemu.fleet.paired import comparisons, paired_ranking, per_seed
from kubeletemu.fleet.setups import runs_text, short_names
from kubeletemu.fleet.stats import base_name, summaries

CSV_FIELDS = (
    "name", "scheduler", "scheduler_version", "cache", "resync_period_s", "exporter", "exporter_period_s",
    "seed", "kubelet_versions", "pods_total", "pods_created", "replacements", "admissions",
    "topology_affinity_errors", "topology_affinity_error_rate", "other_admission_errors", "pending_p50_s",
    "pending_p99_s", "pending_max_s", "time_to_running_p50_s", "time_to_running_p99_s",
    "time_to_running_max_s", "scheduling_attempts", "running_at_end", "never_scheduled", "never_running",
    "pending_censored",
    "resyncs.fingerprint_match", "resyncs.fingerprint_mismatch", "stale_flushes",
    "largest_single_numa_free.cpu", "largest_single_numa_free.memory", "plugin_crashes", "simulated_s",
)  # fmt: skip
# The figures ranked (when their intervals separate), as the table names them.
RANKED = (
    ("topology_affinity_errors", "TopologyAffinityError"),
    ("pending_p99_s", "pending p99"),
    ("time_to_running_p99_s", "time to Running p99"),
)
# The default table fits a terminal this wide (the ranking lines wrap to it).
WIDTH = 120
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


def document(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{configurations: [per run...], summaries: [per setup...], comparisons: [per pair of setups and
    figure...]}`` (:func:`kubeletemu.fleet.paired.comparisons`)."""
    runs = [dict(r) for r in results]
    return {"configurations": runs, "summaries": summaries(runs), "comparisons": comparisons(runs)}


def render_json(results: Sequence[Mapping[str, Any]]) -> str:
    """One object on one line, as every command's ``-o json`` prints its objects (JSON Lines)."""
    return json.dumps(document(results))


def render_yaml(results: Sequence[Mapping[str, Any]]) -> str:
    """The JSON document as YAML (``-o yaml``, as every other command offers)."""
    return yaml.safe_dump(document(results), sort_keys=False)


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


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def render_table(results: Sequence[Mapping[str, Any]], *, per_seed: bool = False) -> str:
    """The headline, then one row per setup (the mean and 95 % interval over its seeds, and the ranking
    where intervals separate); with ``per_seed`` (``-o wide``), one row per run after them."""
    summary = summaries([dict(r) for r in results])
    short = short_names([s["name"] for s in summary])
    lines = [_headline(results)]
    if short.shared:
        lines.append(short.note())
    lines.extend(["", *_summary_table(summary, short.names)])
    if any(len(s["seeds"]) > 1 for s in summary):
        lines.extend(["", *_rankings(summary, short.names, results)])
    if per_seed:
        lines.extend(["", *_per_seed_table(results, short.names)])
    return "\n".join(lines)


def render_wide(results: Sequence[Mapping[str, Any]]) -> str:
    """``-o wide``: the table with a row per run (seed) after the summary."""
    return render_table(results, per_seed=True)


def _per_seed_table(results: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> list[str]:
    header = (
        "SETUP", "SEED", "TOPOLOGYAFFINITYERROR", "OTHER", "PENDING P50", "P99", "MAX", "TO RUNNING P99",
        "ATTEMPTS", "RUNNING", "NEVER RUNNING", "RESYNCS MATCH/MISMATCH", "LARGEST FREE NUMA CPU/MEMORY",
    )  # fmt: skip
    rows = [header]
    for r in results:
        resyncs = r["resyncs"]
        matched = f"{resyncs['fingerprint_match']}/{resyncs['fingerprint_mismatch']}"
        free = r["largest_single_numa_free"]
        rate = r["topology_affinity_error_rate"] * 100
        setup = base_name(str(r["name"]))
        rows.append(
            (
                names.get(setup, setup),
                str(r.get("seed", "-")),
                f"{r['topology_affinity_errors']} ({rate:.1f}%)",
                str(r["other_admission_errors"]),
                wait_text(r["pending_p50_s"]),
                wait_text(r["pending_p99_s"]),
                wait_text(r["pending_max_s"]),
                wait_text(r["time_to_running_p99_s"]),
                str(r["scheduling_attempts"]),
                str(r["running_at_end"]),
                str(r["never_running"]),
                matched if r["cache"] == "overreserve" else "-",
                f"{cpu_text(free['cpu'])}/{bytes_text(free['memory'])}",
            )
        )
    return ["per run (setup and seed):", *_aligned(rows)]


def _headline(results: Sequence[Mapping[str, Any]]) -> str:
    nodes = results[0].get("nodes", "?") if results else 0
    pods = results[0]["pods_total"] if results else 0
    runs = runs_text([str(r["name"]) for r in results])
    text = f"fleet: {runs}; {nodes} node(s), {pods} workload pod(s) a run"
    schedulers = sorted({str(r["scheduler_version"]) for r in results if r.get("scheduler_version")})
    kubelets = sorted({str(v) for r in results for v in r.get("kubelet_versions", ())})
    if schedulers:
        text += f"; kube-scheduler {', '.join(schedulers)}"
    if kubelets:
        text += f", kubelet {', '.join(kubelets)}"
    return text


def _count(value: float | None) -> str:
    return "-" if value is None else f"{max(0.0, value):.1f}".removesuffix(".0")


def _seconds(value: float | None) -> str:
    return "-" if value is None else duration_text(max(0.0, value))


CENSORED_TEXT = "> run length"


def wait_text(seconds: float | None) -> str:
    """A run's wait percentile: a duration, or :data:`CENSORED_TEXT` where a wait that never ended
    decides it (None, :mod:`kubeletemu.fleet.censored`)."""
    return CENSORED_TEXT if seconds is None else duration_text(seconds)


def interval_text(summary: Mapping[str, Any], key: str) -> str:
    """``mean [low, high]`` in the figure's unit (a count, or a duration for ``*_s``); the interval is
    shown from 0, as neither can be negative. A wait censored in some seeds has no mean: ``> run length``
    (in every seed) or ``> run length in k of n seeds``."""
    censored = summary[key].get("censored_seeds")
    if censored:
        seeds = len(summary["seeds"])
        return CENSORED_TEXT if censored == seeds else f"{CENSORED_TEXT} in {censored} of {seeds} seeds"
    return figure_text(summary[key], seconds=key.endswith("_s"))


def figure_text(figure: Mapping[str, float | None], *, seconds: bool) -> str:
    """A ``{mean, low, high}`` figure (:func:`kubeletemu.fleet.stats.interval`) as ``mean [low, high]``,
    or the mean alone without an interval: a duration, or a count."""
    show = _seconds if seconds else _count
    if figure["low"] is None:
        return show(figure["mean"])
    return f"{show(figure['mean'])} [{show(figure['low'])}, {show(figure['high'])}]"


def _summary_table(summary: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> list[str]:
    """The README's table: a row per setup. A SEEDS column only where setups differ in seeds (an
    interrupted fleet); the headline gives the one count otherwise."""
    seeds = {len(s["seeds"]) for s in summary}
    header = ["SETUP", "SEEDS", "TOPOLOGYAFFINITYERROR", "PENDING P99", "TO RUNNING P99", "NEVER RUNNING"]
    rows = [header]
    for s in summary:
        rows.append(
            [
                names.get(s["name"], s["name"]),
                str(len(s["seeds"])),
                interval_text(s, "topology_affinity_errors"),
                interval_text(s, "pending_p99_s"),
                interval_text(s, "time_to_running_p99_s"),
                _count(s["never_running"]["mean"]),
            ]
        )
    if len(seeds) <= 1:
        rows = [[row[0], *row[2:]] for row in rows]
    if max(seeds, default=1) <= 1:
        return _aligned(rows)
    return ["summary over seeds: mean [95 % interval, Student's t]", *_aligned(rows)]


def _rankings(
    summary: Sequence[Mapping[str, Any]], names: Mapping[str, str], results: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Per figure: the ranking from paired differences (:mod:`kubeletemu.fleet.paired`), then each
    neighbouring pair's difference over their common seeds and in how many seeds each was lower."""
    named = [{**s, "name": names.get(s["name"], s["name"])} for s in summary]
    lines = [
        "ranking ('<' only where the paired 95 % interval of the difference over common seeds is below 0,",
        "'≈' otherwise); each neighbouring pair: A − B mean [paired t interval], A lower in k of n seeds",
    ]
    for key, label in RANKED:
        values = {names.get(name, name): seeds for name, seeds in per_seed(results, key).items()}
        text, pairs = paired_ranking(named, key, values)
        lines.extend(_wrapped(f"  {label}: ", text))
        seconds = key.endswith("_s")
        for a, b, difference in pairs:
            if difference["seeds"] < 2:
                continue
            span = f"[{_signed(difference['low'], seconds)}, {_signed(difference['high'], seconds)}]"
            lines.append(
                f"    {a} − {b}: {_signed(difference['mean_difference'], seconds)} {span}, lower in "
                f"{difference['a_better']} of {difference['seeds']}"
            )
    return lines


def _signed(value: float | None, seconds: bool) -> str:
    """A difference: a count or a duration, with its sign."""
    if value is None:
        return "-"
    sign = "−" if value < 0 else ""
    return sign + (duration_text(abs(value)) if seconds else f"{abs(value):.1f}".removesuffix(".0"))


def _wrapped(first: str, text: str) -> list[str]:
    """``text`` after ``first``, broken before a ``<`` or ``≈`` to keep lines within :data:`WIDTH`,
    continuation lines indented under the first item."""
    words = re.split(r" (?=[<≈] )", text)
    lines, line = [], first + words[0]
    for word in words[1:]:
        if len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line = " " * len(first) + word
        else:
            line += " " + word
    return [*lines, line]


__all__ = [
    "CSV_FIELDS", "base_name", "bytes_text", "cpu_text", "document", "duration_text", "figure_text",
    "interval_text", "render_csv", "render_json", "render_table", "render_wide", "render_yaml", "wait_text",
]  # fmt: skip
