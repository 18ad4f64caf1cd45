"""Answers with error bars: a configuration's figures over its seeds, as a mean and a 95 % interval.

The interval is Student's t on the per-seed values: ``mean ± t(0.975, n-1) · s / √n`` with ``s`` the sample
standard deviation — the seeds are independent runs of the same configuration, and a seed's figure (a
count, a percentile) is one observation. Fewer than two seeds give no interval (``low``/``high`` None).

The t quantile is computed, not tabled: for an integer number of degrees of freedom ν the two-sided
probability ``P(|T| ≤ t)`` has a closed form (Abramowitz & Stegun 26.7.3–26.7.4: a finite series in
``cos θ`` with ``θ = atan(t/√ν)``), which is bisected for 0.95. scipy would do the same and is not a
dependency (far too heavy for one quantile); the stdlib's ``statistics`` has the normal distribution only.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

CONFIDENCE = 0.95
DIGITS = 6


def t_cdf_two_sided(t: float, dof: int) -> float:
    """``P(|T| ≤ t)`` for Student's t with ``dof`` ≥ 1 degrees of freedom (A&S 26.7.3/26.7.4)."""
    if dof < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {dof}")
    if t <= 0:
        return 0.0
    theta = math.atan(t / math.sqrt(dof))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    if dof % 2 == 1:
        if dof == 1:
            return 2 * theta / math.pi
        term = total = 1.0
        for k in range(1, (dof - 3) // 2 + 1):  # (2·4···2k)/(3·5···(2k+1)) cos^(2k) θ
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + s * c * total)
    term = total = 1.0
    for k in range(1, (dof - 2) // 2 + 1):  # (1·3···(2k-1))/(2·4···2k) cos^(2k) θ
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


@cache
def t_quantile(dof: int, confidence: float = CONFIDENCE) -> float:
    """The ``t`` with ``P(|T| ≤ t) = confidence`` (the two-sided critical value), to float precision."""
    low, high = 0.0, 1.0
    while t_cdf_two_sided(high, dof) < confidence:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf_two_sided(mid, dof) < confidence:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2


def interval(values: Sequence[float]) -> dict[str, float | None]:
    """``{mean, low, high}`` of the values, rounded to :data:`DIGITS` places (None: under two values)."""
    if not values:
        return {"mean": None, "low": None, "high": None}
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": round(mean, DIGITS), "low": None, "high": None}
    half = t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return {
        "mean": round(mean, DIGITS),
        "low": round(mean - half, DIGITS),
        "high": round(mean + half, DIGITS),
    }


# The figures summarised, as result keys: the contract's three, then the medians, then the pods that never
# reached Running (the table's last column).
SUMMARISED = (
    "topology_affinity_errors",
    "pending_p99_s",
    "time_to_running_p99_s",
    "pending_p50_s",
    "time_to_running_p50_s",
    "never_running",
)
TEMPLATE_SUMMARISED = ("topology_affinity_errors", "pending_p99_s", "time_to_running_p99_s")
# Waits a run may leave censored (None: the percentile fell on a wait that never ended, see
# kubeletemu.fleet.censored).
CENSORABLE = frozenset({"pending_p99_s", "time_to_running_p99_s", "pending_p50_s", "time_to_running_p50_s"})


def figure(values: Sequence[float | None], key: str) -> dict[str, Any]:
    """:func:`interval` of a figure over the seeds; a censorable one carries ``censored_seeds``, the seeds
    whose value is None, and has no mean (nor interval) when there is one."""
    if key not in CENSORABLE:
        return interval([float(v) for v in values if v is not None])
    censored = sum(v is None for v in values)
    if censored:
        return {"mean": None, "low": None, "high": None, "censored_seeds": censored}
    return {**interval([float(v) for v in values if v is not None]), "censored_seeds": 0}


def base_name(name: str) -> str:
    """A configuration's name without its ``/seed=N`` part: what its seeds share."""
    head, _, last = name.rpartition("/")
    return head if head and last.startswith("seed=") else name


def summaries(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary per configuration (results grouped by :func:`base_name`, in first-seen order): its
    seeds, then the mean and interval of each :data:`SUMMARISED` figure, and per template."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        groups.setdefault(base_name(str(result["name"])), []).append(result)
    out = []
    for name, members in groups.items():
        summary: dict[str, Any] = {
            "name": name,
            "seeds": [m["seed"] for m in members],
            "scheduler": members[0].get("scheduler"),
        }
        for key in SUMMARISED:
            summary[key] = figure([m[key] for m in members], key)
        templates: dict[str, dict[str, Any]] = {}
        for template in members[0].get("templates", {}):
            per = [m["templates"][template] for m in members if template in m.get("templates", {})]
            templates[template] = {key: figure([p[key] for p in per], key) for key in TEMPLATE_SUMMARISED}
        summary["templates"] = templates
        out.append(summary)
    return out


def separated(a: Mapping[str, float | None], b: Mapping[str, float | None]) -> bool:
    """Whether two intervals do not overlap (both known)."""
    if a["low"] is None or b["low"] is None or a["high"] is None or b["high"] is None:
        return False
    return a["high"] < b["low"] or b["high"] < a["low"]


def ranking(items: Sequence[Mapping[str, Any]], key: str) -> str:
    """The summaries ordered by the mean of ``key``, ``<`` between neighbours whose intervals separate and
    ``≈`` where they overlap (no ranking claimed there): e.g. ``exact ≈ overreserve < default``."""
    ordered = sorted(
        items, key=lambda s: (s[key]["mean"] if s[key]["mean"] is not None else math.inf, s["name"])
    )
    if not ordered:
        return ""
    text = str(ordered[0]["name"])
    for previous, current in itertools.pairwise(ordered):
        text += (" < " if separated(previous[key], current[key]) else " ≈ ") + current["name"]
    return text
