"""The scheduling queue against kube-scheduler's own ``PriorityQueue``: seeded traces replayed through both
(:mod:`tests.oracle.queue_runner`), compared pop by pop and move by move, per release and with
``SchedulerPopFromBackoffQ`` on and off. ``python -m tests.oracle.queue_runner --count 100000`` runs more."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle import queue_runner
from tests.oracle.queue_traces import generate
from tests.oracle.scheduler.build import QUEUE_DIR

ROOT = Path(__file__).resolve().parents[2]
TRACES = 200  # per release and gate setting: about 900 pops and 1,800 moves each


@pytest.mark.parametrize("pop_from_backoff_q", [True, False], ids=["popFromBackoffQ", "noPopFromBackoffQ"])
@pytest.mark.parametrize("release", sorted(queue_runner.RELEASES))
def test_queue_agrees_with_upstream(release: str, pop_from_backoff_q: bool) -> None:
    gates = {queue_runner.POP_FROM_BACKOFF_Q: pop_from_backoff_q}
    traces = list(queue_runner.traces_for(release, range(TRACES)))
    upstream = queue_runner.replay_upstream(traces, queue_runner.RELEASES[release].release, gates)
    pops = sum(1 for answer in upstream for step in answer["steps"] if step.get("pop"))
    moves = sum(sum(step["moves"].values()) for answer in upstream for step in answer["steps"])
    assert pops > 3 * TRACES and moves > 6 * TRACES, (pops, moves)  # the traces exercise the queue
    differences = [
        difference
        for trace, theirs in zip(traces, upstream, strict=True)
        if (difference := queue_runner.compare_trace(release, trace, theirs, gates))
    ]
    assert not differences, f"{len(differences)} of {TRACES} traces differ; first:\n" + "\n".join(
        str(d)[:1500] for d in differences[:3]
    )


def test_what_1_37_changed_is_found() -> None:
    """kube-scheduler 1.37 is not emulated. On the full traces, 1.37.2 differs from the 1.36 queue only in
    what it changed for gated pods: the leftover flush's UnschedulableTimeout (a wildcard event) now
    re-evaluates a gated pod, which goes through PreEnqueue and back to unschedulablePods, counted."""
    gates = {queue_runner.POP_FROM_BACKOFF_Q: True}
    traces = [generate(seed, "1.37") for seed in range(300)]
    upstream = queue_runner.replay_upstream(traces, "1.37", gates)
    differences = [
        difference
        for trace, theirs in zip(traces, upstream, strict=True)
        if (difference := queue_runner.compare_trace("1.37", trace, theirs, gates)) is not None
    ]
    assert len(differences) >= 5
    for difference in differences:
        assert difference.trace["pre_enqueue"], difference
        assert difference.trace["steps"][difference.step]["op"] == "flush_unschedulable", difference
        assert difference.upstream.get("unschedulable/UnschedulableTimeout"), difference
        assert not difference.model.get("unschedulable/UnschedulableTimeout"), difference


def test_oracle_reports_a_refused_trace() -> None:
    """A trace naming an action the release does not have comes back refused, not as an agreement."""
    trace = generate(0, "1.34")
    trace["registrations"] = [{"plugin": "PluginA", "event": "Node/NoSuchAction", "hint": False}]
    (answer,) = queue_runner.replay_upstream([trace], "1.34", {})
    difference = queue_runner.first_difference(trace, answer, {"steps": []})
    assert difference is not None and difference.what == "upstream refused"
    assert "NoSuchAction" in str(difference.upstream)


@pytest.mark.parametrize(
    ("modfile", "pinned"),
    [
        ("go.mod", "tests/upstream/kubernetes/v1.37/go.mod"),
        ("go.1.34.mod", "tests/upstream/scheduler-plugins/v0.34/go.mod"),
    ],
)
def test_oracle_modules_pin_what_the_upstream_builds_pin(modfile: str, pinned: str) -> None:
    """The oracle's module files are the pinned modules' requirements and replacements, line for line (so
    the oracle imports the very packages the upstream binaries are built from, and reuses their build)."""

    def body(path: Path) -> list[str]:
        lines = path.read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("module "))
        return lines[start + 1 :]

    assert body(QUEUE_DIR / modfile) == body(ROOT / pinned)
    assert (QUEUE_DIR / modfile).with_suffix(".sum").read_bytes() == (ROOT / pinned).with_suffix(
        ".sum"
    ).read_bytes()
