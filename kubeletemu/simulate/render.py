"""A simulation report as a text table and as JSON; both depend only on the report (no times, no paths)."""

from __future__ import annotations

import json

from kubeletemu.simulate.engine import LIVE, ConfigurationResult, SimulationReport

GIB = 1024**3
_HEADERS = (
    "#",
    "POLICY",
    "SCOPE",
    "OPTIONS",
    "ADMITTED",
    "FIRST REJECTION",
    "TAE",
    "CPU % PER NUMA",
    "MEMORY % PER NUMA",
    "LARGEST FREE (CPUS/MEM)",
    "SPREAD",
    "SCORED",
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:g}%"


def _memory(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value / GIB:.1f}Gi"


def _row(number: int, result: ConfigurationResult) -> tuple[str, ...]:
    conf = result.configuration
    head = (str(number), conf.policy, conf.scope, conf.options_label)
    if result.error is not None:
        return (*head, f"kubelet would not start: {result.error}", *("",) * (len(_HEADERS) - 5))
    first = (
        "-" if result.first_rejection is None else f"{result.first_rejection} ({result.first_rejection_pod})"
    )
    cpu = " ".join(f"{n.node}:{_pct(n.cpu_percent)}" for n in result.numa)
    memory = " ".join(f"{n.node}:{_pct(n.memory_percent)}" for n in result.numa)
    free_cpus = "-" if result.largest_free_cpus is None else str(result.largest_free_cpus)
    return (
        *head,
        f"{result.admitted}/{result.attempts}",
        first,
        str(result.topology_affinity_errors),
        cpu,
        memory,
        f"{free_cpus}/{_memory(result.largest_free_memory)}",
        str(result.spread_containers),
        str(result.admissions_decided_by_score),
    )


def _versions(report: SimulationReport) -> list[str]:
    return list(dict.fromkeys(r.configuration.kubelet_version for r in report.results))


def render_table(report: SimulationReport) -> str:
    """One line per configuration; an error row spans the metric columns. The kubelet version is in the
    title when every configuration runs the same one, else in a KUBELET column."""
    versions = _versions(report)
    rows = [_HEADERS, *(_row(i, r) for i, r in enumerate(report.results, start=1))]
    lead = 4  # the columns an error row keeps: #, POLICY, SCOPE, OPTIONS (and KUBELET)
    if len(versions) > 1:
        kubelets = ["KUBELET", *(r.configuration.kubelet_version for r in report.results)]
        rows = [(row[0], kubelet, *row[1:]) for row, kubelet in zip(rows, kubelets, strict=True)]
        lead = 5
    # An error row's message spans the metric columns: it does not widen them.
    widths = [
        max(len(row[col]) for row in rows if not _is_error(row, lead) or col < lead)
        for col in range(len(rows[0]))
    ]
    lines = []
    for row in rows:
        if _is_error(row, lead):
            head = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:lead]))
            lines.append(head + "  " + row[lead])
        else:
            lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    title = f"simulation on {_node(report)}: {len(report.results)} configuration(s)"
    if len(versions) == 1 and versions[0]:
        title += f", kubelet {versions[0]}"
    legend = (
        "TAE: TopologyAffinityError rejections; SPREAD: containers on several NUMA nodes; "
        "SCORED: admissions placed by a KEP-6007 score"
    )
    return "\n".join([title, *lines, legend]) + "\n"


def _node(report: SimulationReport) -> str:
    topology = report.topology
    if topology.get("kind") == LIVE:
        name = f"live node {topology['name']}" if topology.get("name") else "the live node"
        return f"{name} ({topology.get('pods', 0)} pod(s) before the stream)"
    return str(topology.get("name") or topology.get("kind") or "node")


def _is_error(row: tuple[str, ...], lead: int = 4) -> bool:
    return row[lead].startswith("kubelet would not start:")


def render_json(report: SimulationReport, *, events: bool = True) -> str:
    return json.dumps(report.to_dict(events=events), indent=2) + "\n"
