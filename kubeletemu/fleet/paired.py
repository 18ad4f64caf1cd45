"""Setups compared on common seeds: paired differences (common random numbers).

Every setup of a matrix meets the same workload per seed (arrivals, templates, lifetimes, start-up and
binding draws all come from the seed), so two setups' figures on one seed are a pair. Their difference
per seed, ``A − B``, has a Student's t interval of its own (:func:`kubeletemu.fleet.stats.interval` on the
differences: the paired t), far narrower than the unpaired intervals when the seeds' workloads, not the
setups, make most of the spread. A ranking is stated only where that interval excludes 0; beside it, the
count of seeds in which each setup did better (lower: every ranked figure is better lower).

A seed where either figure is censored (None: a wait that never ended, :mod:`.censored`) is left out of
the pair; ``seeds`` counts the pairs used.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from kubeletemu.fleet.stats import base_name, interval

# The figures compared, as result keys (each better lower).
COMPARED = ("topology_affinity_errors", "pending_p99_s", "time_to_running_p99_s")


def per_seed(results: Sequence[Mapping[str, Any]], key: str) -> dict[str, dict[int, float | None]]:
    """Per setup (:func:`base_name`, in first-seen order): its figure per seed."""
    out: dict[str, dict[int, float | None]] = {}
    for result in results:
        value = result.get(key)
        out.setdefault(base_name(str(result["name"])), {})[int(result["seed"])] = (
            None if value is None else float(value)
        )
    return out


def paired_difference(a: Mapping[int, float | None], b: Mapping[int, float | None]) -> dict[str, Any]:
    """``A − B`` over the seeds both have a figure for: the mean difference with its paired 95 % t
    interval (None under two pairs), and in how many of them each was lower."""
    pairs = [(a[s], b[s]) for s in sorted(set(a) & set(b))]
    known = [(x, y) for x, y in pairs if x is not None and y is not None]
    figure = interval([x - y for x, y in known])
    return {
        "seeds": len(known),
        "mean_difference": figure["mean"],
        "low": figure["low"],
        "high": figure["high"],
        "a_better": sum(x < y for x, y in known),
        "b_better": sum(x > y for x, y in known),
    }


def excludes_zero(difference: Mapping[str, Any]) -> bool:
    """Whether the paired interval lies wholly on one side of 0."""
    low, high = difference["low"], difference["high"]
    return low is not None and high is not None and (high < 0 or low > 0)


def comparisons(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every pair of setups (in first-seen order) on every :data:`COMPARED` figure."""
    out = []
    for key in COMPARED:
        values = per_seed(results, key)
        for a, b in itertools.combinations(values, 2):
            out.append({"figure": key, "a": a, "b": b, **paired_difference(values[a], values[b])})
    return out


def paired_ranking(
    items: Sequence[Mapping[str, Any]], key: str, values: Mapping[str, Mapping[int, float | None]]
) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    """The summaries ordered by the mean of ``key``, ``<`` between neighbours whose paired difference's
    interval lies below 0 and ``≈`` otherwise (no ranking claimed); and each neighbouring pair's
    difference. ``values``: :func:`per_seed` of ``key``, by the items' names."""
    ordered = sorted(
        items, key=lambda s: (s[key]["mean"] if s[key]["mean"] is not None else math.inf, s["name"])
    )
    if not ordered:
        return "", []
    text = str(ordered[0]["name"])
    pairs = []
    for previous, current in itertools.pairwise(ordered):
        difference = paired_difference(values[previous["name"]], values[current["name"]])
        ranked = excludes_zero(difference) and difference["high"] < 0
        text += (" < " if ranked else " ≈ ") + str(current["name"])
        pairs.append((str(previous["name"]), str(current["name"]), difference))
    return text, pairs
