"""The summaries over seeds: Student's t quantiles against the published table, intervals, grouping by
configuration, and rankings stated only where intervals separate."""

from __future__ import annotations

import math

import pytest

from kubeletemu.fleet.paired import comparisons, paired_difference, paired_ranking, per_seed
from kubeletemu.fleet.report import render_table
from kubeletemu.fleet.stats import (
    base_name,
    interval,
    ranking,
    summaries,
    t_cdf_two_sided,
    t_quantile,
)

# Two-sided 95 % critical values of Student's t (any statistics table), degrees of freedom -> t.
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980}  # fmt: skip


@pytest.mark.parametrize(("dof", "expected"), sorted(T_975.items()))
def test_t_quantiles_match_the_table(dof: int, expected: float) -> None:
    assert round(t_quantile(dof), 3) == expected
    assert t_cdf_two_sided(t_quantile(dof), dof) == pytest.approx(0.95, abs=1e-12)


def test_the_cdf_closed_forms() -> None:
    # One degree of freedom is the Cauchy distribution: P(|T| <= 1) = 1/2; two: t/sqrt(t^2 + 2).
    assert t_cdf_two_sided(1.0, 1) == pytest.approx(0.5)
    assert t_cdf_two_sided(3.0, 2) == pytest.approx(3.0 / math.sqrt(11.0))
    assert t_cdf_two_sided(0.0, 5) == 0.0
    # Many degrees of freedom: the normal's 1.96.
    assert t_quantile(10_000) == pytest.approx(1.960, abs=1e-3)
    with pytest.raises(ValueError, match="at least 1"):
        t_cdf_two_sided(1.0, 0)


def test_interval() -> None:
    got = interval([10.0, 12.0, 14.0])
    half = t_quantile(2) * 2.0 / math.sqrt(3)
    assert got == {"mean": 12.0, "low": round(12 - half, 6), "high": round(12 + half, 6)}
    assert interval([5.0]) == {"mean": 5.0, "low": None, "high": None}
    assert interval([]) == {"mean": None, "low": None, "high": None}
    assert interval([3.0, 3.0]) == {"mean": 3.0, "low": 3.0, "high": 3.0}


def _result(name: str, seed: int, tae: int, p99: float) -> dict[str, object]:
    return {
        "name": f"{name}/seed={seed}", "scheduler": name.split("/")[0], "seed": seed,
        "topology_affinity_errors": tae, "pending_p50_s": 0.0, "pending_p99_s": p99,
        "time_to_running_p50_s": 1.0, "time_to_running_p99_s": p99 + 2, "templates": {},
        # The rest of a result, as the table reads it.
        "cache": None, "topology_affinity_error_rate": 0.0, "other_admission_errors": 0, "pending_max_s": p99,
        "scheduling_attempts": 1, "running_at_end": 1, "never_running": 0, "pods_total": 1, "nodes": 1,
        "resyncs": {"fingerprint_match": 0, "fingerprint_mismatch": 0}, "scheduler_version": "1.36",
        "kubelet_versions": ["1.36"], "largest_single_numa_free": {"cpu": 1000, "memory": 1 << 30},
    }  # fmt: skip


def test_summaries_group_seeds_and_rank_only_separated_intervals() -> None:
    results = [
        _result("a", 1, 10, 1.0), _result("a", 2, 12, 1.2), _result("a", 3, 11, 1.1),
        _result("b/cache", 1, 50, 1.0), _result("b/cache", 2, 52, 9.0), _result("b/cache", 3, 51, 3.0),
        _result("c", 1, 11, 1.05), _result("c", 2, 12, 1.15), _result("c", 3, 10, 1.0),
    ]  # fmt: skip
    assert base_name("b/cache/seed=2") == "b/cache" and base_name("seedless") == "seedless"
    summary = summaries(results)
    assert [(s["name"], s["seeds"]) for s in summary] == [
        ("a", [1, 2, 3]),
        ("b/cache", [1, 2, 3]),
        ("c", [1, 2, 3]),
    ]
    assert summary[0]["topology_affinity_errors"]["mean"] == 11.0
    # a and c overlap; both are below b.
    assert ranking(summary, "topology_affinity_errors") == "a ≈ c < b/cache"
    # b's pending p99 spreads over a and c: nothing separates.
    assert ranking(summary, "pending_p99_s") == "c ≈ a ≈ b/cache"
    table = render_table(results)  # type: ignore[arg-type]
    assert "summary over seeds: mean [95 % interval, Student's t]" in table
    assert "  TopologyAffinityError: a ≈ c < b/cache" in table


def test_one_seed_each_has_no_summary_table() -> None:
    table = render_table([_result("a", 1, 3, 1.0), _result("b", 1, 4, 2.0)])  # type: ignore[list-item]
    assert "summary over seeds" not in table and "ranking" not in table


def test_paired_differences_rank_what_unpaired_intervals_cannot() -> None:
    """The seeds' workloads make most of the spread: ``a`` is 1 below ``b`` in every seed, their unpaired
    intervals overlap widely, the paired interval of ``a − b`` is [−1, −1] and ranks them."""
    results = [_result(name, seed, tae + base, 1.0) for seed, base in ((1, 0), (2, 40), (3, 90))
               for name, tae in (("a", 10), ("b", 11))]  # fmt: skip
    summary = summaries(results)
    assert ranking(summary, "topology_affinity_errors") == "a ≈ b"
    values = per_seed(results, "topology_affinity_errors")
    difference = paired_difference(values["a"], values["b"])
    assert difference == {"seeds": 3, "mean_difference": -1.0, "low": -1.0, "high": -1.0, "a_better": 3,
                          "b_better": 0}  # fmt: skip
    text, pairs = paired_ranking(summary, "topology_affinity_errors", values)
    assert text == "a < b" and pairs == [("a", "b", difference)]
    # Censored seeds are left out of the pair; equal figures rank nothing.
    assert paired_difference({1: None, 2: 3.0, 3: 4.0}, {1: 5.0, 2: 3.0, 3: 4.0})["seeds"] == 2
    assert paired_ranking(summary, "pending_p99_s", per_seed(results, "pending_p99_s"))[0] == "a ≈ b"
    table = render_table(results)
    assert "  TopologyAffinityError: a < b" in table
    assert "    a − b: −1 [−1, −1], lower in 3 of 3" in table
    assert [c for c in comparisons(results) if c["figure"] == "topology_affinity_errors"] == [
        {"figure": "topology_affinity_errors", "a": "a", "b": "b", **difference}
    ]
