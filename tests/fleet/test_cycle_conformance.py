"""kube-scheduler's own ``schedule_one_test.go`` rows (``tests/conformance/kube_scheduler_cycle.json``), run
against the fleet's cycle under every kube-scheduler version each row holds for; none is skipped.

The fake plugins are upstream's test plugins (``testing/framework/fake_plugins.go`` and the test file's
own), written as models: they are the tests' inputs, not stand-ins for anything of ours."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from kubeletemu.fleet.cycle import NodeScore, PluginError, Scheduler, num_feasible_nodes_to_find
from kubeletemu.fleet.cycle import versions as cycle_versions
from kubeletemu.fleet.cycle.select import SelectHostError, select_host, sorted_node_scores
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo, Status
from kubeletemu.scheduler.objects import Node
from kubeletemu.scheduler.profile import Profile
from tests.conformance.loader import load

TABLE = "kube_scheduler_cycle"
FAKE = "Nodes failed the fake plugin"


def rows(section: str) -> list[Any]:
    out = []
    for index, row in enumerate(load(TABLE)[section]):
        for version in row["versions"]:
            out.append(pytest.param(row, version, id=f"{version}-{index:02d}-{row['name']}"[:120]))
    return out


def test_every_row_names_supported_versions_in_order() -> None:
    data = load(TABLE)
    covered = {v for entry in data["version_sources"] for v in entry["versions"]}
    assert covered == set(cycle_versions.SUPPORTED)
    for section in ("select_host", "sorted_node_scores", "num_feasible_nodes_to_find", "fair_evaluation"):
        for row in data[section]:
            assert row["versions"] == [v for v in cycle_versions.SUPPORTED if v in row["versions"]]
    for section in ("schedule_pod", "find_fit"):
        for row in data[section]:
            assert row["versions"] == list(cycle_versions.SUPPORTED)


# ---- upstream's fake plugins ------------------------------------------------------------------------


class _Plugin:
    name = ""

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        return Status()

    def score(self, pod: Pod, node: NodeInfo) -> int:
        return 0

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        return ""


class TrueFilter(_Plugin):
    name = "TrueFilter"


class FalseFilter(_Plugin):
    name = "FalseFilter"

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        return Status.unschedulable(FAKE)


class MatchFilter(_Plugin):
    name = "MatchFilter"

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        return Status() if pod.name == node.name else Status.unschedulable(FAKE)


class NoPodsFilter(_Plugin):
    name = "NoPodsFilter"

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        return Status() if not node.pods else Status.unschedulable(FAKE)


class FakeFilter(_Plugin):
    name = "FakeFilter"

    def __init__(self, codes: dict[str, str]) -> None:
        self.codes = codes
        self.calls = 0

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        self.calls += 1
        code = self.codes.get(node.name)
        return Status() if code is None else Status(code, (f"injecting failure for pod {pod.name}",))


class EqualPrioritizer(_Plugin):
    name = "EqualPrioritizerPlugin"

    def score(self, pod: Pod, node: NodeInfo) -> int:
        return 1


class NumericMap(_Plugin):
    name = "NumericMap"

    def score(self, pod: Pod, node: NodeInfo) -> int:
        return int(node.name)


class ReverseNumericMap(NumericMap):
    name = "ReverseNumericMap"

    def normalize_scores(self, pod: Pod, names: Sequence[str], scores: Sequence[int]) -> list[int]:
        high, low = float(max(scores)), float(min(scores))
        return [int(high + low - float(s)) for s in scores]


class TrueMap(_Plugin):
    name = "TrueMap"

    def score(self, pod: Pod, node: NodeInfo) -> int:
        return 1

    def normalize_scores(self, pod: Pod, names: Sequence[str], scores: Sequence[int]) -> list[int]:
        if any(not name for name in names):
            raise PluginError("unexpected empty host name")
        return list(scores)


class FalseMap(_Plugin):
    name = "FalseMap"

    def score(self, pod: Pod, node: NodeInfo) -> int:
        raise PluginError("priority map encounters an error")


PLUGINS: dict[str, type[_Plugin]] = {
    p.name: p for p in (TrueFilter, FalseFilter, MatchFilter, NoPodsFilter, EqualPrioritizer, NumericMap)
} | {p.name: p for p in (ReverseNumericMap, TrueMap, FalseMap)}


def plugin(spec: str | dict[str, Any]) -> _Plugin:
    if isinstance(spec, dict):
        assert spec["name"] == "FakeFilter"
        return FakeFilter(spec["codes"])
    return PLUGINS[spec]()


def profile(filters: list[Any], scores: list[list[Any]]) -> Profile:
    return Profile(
        "test-scheduler", tuple(plugin(f) for f in filters), tuple((plugin(n), w) for n, w in scores)
    )


def make_pod(name: str, node: str | None = None) -> Pod:
    return Pod(name=name, namespace="default", uid=name or "empty", containers=(), node_name=node)


def make_nodes(names: list[str], bound: dict[str, str] | None = None) -> list[NodeInfo]:
    bound = bound or {}
    return [
        NodeInfo(n, Node(n), pods=tuple(make_pod(p, n) for p, on in bound.items() if on == n)) for n in names
    ]


def statuses(outcome: Any) -> dict[str, list[Any]]:
    return {n: [s.code, list(s.reasons), s.plugin] for n, s in outcome.node_statuses.items()}


# ---- selectHost (1.32 – 1.34) and sortedNodeScores (1.35 – 1.36) ------------------------------------


@pytest.mark.parametrize(("row", "version"), rows("select_host"))
def test_select_host(row: dict[str, Any], version: str) -> None:
    assert cycle_versions.reservoir_sampling(version)
    scores = [NodeScore(name, total, order=i) for i, (name, total) in enumerate(row["list"])]
    if "error" in row:
        with pytest.raises(SelectHostError, match=row["error"]):
            select_host(scores, row["count"], random.Random(0))
        return
    possible_lists = [[tuple(e) for e in lst] for lst in row["possible_lists"]]
    hosts = set()
    # Upstream draws 10 times "to increase the randomness"; seeded draws make the check repeatable.
    for seed in range(40):
        host, best = select_host(scores, row["count"], random.Random(seed))
        assert host in row["possible_hosts"]
        assert best[0].name == host
        assert [(s.name, s.total) for s in best] in possible_lists
        hosts.add(host)
    # The pick is random among the top scores: every tied host comes up.
    assert hosts == set(row["possible_hosts"])
    # No random source: the top node first in evaluation order, reproducibly.
    top = max(total for _, total in row["list"])
    first = next(name for name, total in row["list"] if total == top)
    assert select_host(scores, row["count"], None)[0] == first


@pytest.mark.parametrize(("row", "version"), rows("sorted_node_scores"))
def test_sorted_node_scores(row: dict[str, Any], version: str) -> None:
    assert not cycle_versions.reservoir_sampling(version)
    scores = [NodeScore(name, total, randomizer=r) for name, total, r in row["list"]]
    assert [[s.name, s.total, s.randomizer] for s in sorted_node_scores(scores)] == row["want_order"]


@pytest.mark.parametrize(("row", "version"), rows("num_feasible_nodes_to_find"))
def test_num_feasible_nodes_to_find(row: dict[str, Any], version: str) -> None:
    got = num_feasible_nodes_to_find(
        row["global_percentage"], row["num_all_nodes"], row["profile_percentage"]
    )
    assert got == row["want"]


@pytest.mark.parametrize(("row", "version"), rows("fair_evaluation"))
def test_fair_evaluation_for_nodes(row: dict[str, Any], version: str) -> None:
    count, to_find = row["num_all_nodes"], row["nodes_to_find"]
    nodes = make_nodes([str(i) for i in range(count)])
    scheduler = Scheduler(
        profile(["TrueFilter"], [["EqualPrioritizerPlugin", 1]]), row["global_percentage"], version=version
    )
    assert num_feasible_nodes_to_find(row["global_percentage"], count) == to_find
    assert row["iterations"] == 2 * (count // to_find + 1)
    for i in range(row["iterations"]):
        outcome = scheduler.schedule(make_pod(""), nodes)
        assert outcome.feasible_nodes == to_find
        assert scheduler.next_start_node_index == (i + 1) * to_find % count


# ---- schedulePod ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("row", "version"), rows("schedule_pod"))
def test_schedule_pod(row: dict[str, Any], version: str) -> None:
    nodes = make_nodes(row["nodes"], row["pods"])
    scheduler = Scheduler(profile(row["filters"], row["scores"]), version=version, rng=random.Random(7))
    outcome = scheduler.schedule(make_pod(row["pod"]), nodes)
    if "want_error" in row:
        assert outcome.chosen is None and outcome.error == row["want_error"]
        assert not outcome.unschedulable_plugins
        return
    assert outcome.error is None
    fit = row.get("want_fit_error")
    if fit is not None:
        assert outcome.chosen is None
        assert sorted(outcome.unschedulable_plugins) == fit["unschedulable_plugins"]
        assert outcome.pending_plugins == frozenset()
        assert statuses(outcome) == fit["node_to_status"]
        assert outcome.reason.startswith(f"0/{fit['num_all_nodes']} nodes are available:")
        return
    assert outcome.chosen is not None
    if row["want_hosts"] is not None:
        assert outcome.chosen.name in row["want_hosts"]
    want_evaluated = row["want_evaluated"] if row["want_evaluated"] is not None else len(row["nodes"])
    assert outcome.evaluated_nodes == want_evaluated


@pytest.mark.parametrize(("row", "version"), rows("find_fit"))
def test_find_fit(row: dict[str, Any], version: str) -> None:
    nodes = make_nodes(row["nodes"])
    outcome = Scheduler(profile(row["filters"], []), version=version).schedule(make_pod(row["pod"]), nodes)
    assert sorted(outcome.unschedulable_plugins) == row["want_unschedulable_plugins"]
    if "want_statuses" in row:
        assert outcome.chosen is None and statuses(outcome) == row["want_statuses"]
    else:
        assert len(outcome.node_statuses) == row["want_status_count"]
        for name, status in outcome.node_statuses.items():
            assert name != row["pod"] and list(status.reasons) == row["want_reasons"]
        assert outcome.chosen is not None and outcome.chosen.name == row["pod"]


def test_fit_error_text_is_upstreams() -> None:
    """``FitError.Error``: the sorted histogram of reasons."""
    nodes = make_nodes(["1", "2", "3"])
    prof = profile(
        [{"name": "FakeFilter", "codes": {"1": "Unschedulable", "2": "Unschedulable"}}, "MatchFilter"], []
    )
    outcome = Scheduler(prof).schedule(make_pod("x"), nodes)
    assert outcome.reason == (f"0/3 nodes are available: 1 {FAKE}, 2 injecting failure for pod x.")
