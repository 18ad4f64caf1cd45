"""The node oracle tier: seeded cases through kubeletemu's models and the kubelet's own packages at the newest
pinned release (tests/oracle/harness.py builds the harness, or reuses it), diffed field by field.

Every case must agree. A difference fails with the case and both answers (``python -m tests.oracle.run``
replays more of them and writes each to a file).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oracle import generators, ours, run
from tests.oracle.diff import Finding, differences, replay
from tests.oracle.harness import Harness, ensure
from tests.upstream.pins import NEWEST

# A few thousand per model: the tier takes about a minute on one core (docs/conformance.md).
SAMPLE = {"tm": 3000, "cpu": 2000, "memory": 2000}
SEED = 20261202

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    with Harness(ensure(NEWEST)) as process:
        yield process


def _shown(findings: list[Finding]) -> str:
    return "\n".join(json.dumps(f.as_json(), sort_keys=True)[:3000] for f in findings[:3])


@pytest.mark.parametrize("model", sorted(SAMPLE))
def test_model_agrees_with_upstream(harness: Harness, model: str) -> None:
    report = replay(harness, model, NEWEST, SEED, SAMPLE[model])
    assert report.cases == SAMPLE[model]
    assert not report.findings, f"{report.summary()}\n{_shown(report.findings)}"


def test_harness_reports_an_upstream_panic_as_an_answer(harness: Harness) -> None:
    """recover() in the harness: a panic inside upstream code is an answer, and the next case still runs.
    A topology that counts no core under its CPUs (NumCores 0: CPUsPerCore is 0) with full-pcpus-only makes
    the static policy's enforceSMTAlignment divide by zero (``numCPUs % p.cpuGroupSize``) when a container
    asks for exclusive CPUs. The kubelet's own topology discovery never counts 0 cores under CPUs; our
    model refuses the container with an SMTAlignmentError instead (a deliberate extension)."""
    topology = {
        "num_cpus": 2,
        "num_cores": 0,
        "num_sockets": 1,
        "num_numa_nodes": 1,
        "num_uncore_cache": 1,
        "cpus": [[0, 0, 0, 0, 0], [1, 1, 0, 0, 0]],
    }
    resources = {"cpu": "1", "memory": "1Gi"}
    panicking = {
        "model": "cpu",
        "topology": topology,
        "num_reserved": 0,
        "reserved": "",
        "options": {"full-pcpus-only": "true"},
        "tm_policy": "none",
        "pods": [{"uid": "p", "containers": [{"name": "c", "requests": resources, "limits": resources}]}],
    }
    good = next(generators.cases("tm", 0, 1))
    answers = harness.ask([panicking, good])
    assert "integer divide by zero" in answers[0]["panic"]
    assert "panic" not in answers[1]
    mine = ours.answer(panicking, NEWEST)
    assert mine["containers"][0]["error"].startswith("SMT Alignment Error")


def test_differences_name_each_field() -> None:
    ours = {"containers": [{"cpus": "0-1", "error": None}], "default": "2-7"}
    upstream = {"containers": [{"cpus": "0,4", "error": None}], "default": "2-7"}
    assert differences(ours, upstream) == [("containers[0].cpus", "0-1", "0,4")]
    assert differences({"a": [1]}, {"a": [1, 2]}) == [("a", [1], [1, 2])]
    assert differences({"error": "x"}, {"admit": True}) == [
        ("admit", "<absent>", True),
        ("error", "x", "<absent>"),
    ]


def test_cases_are_reproducible_from_their_seed() -> None:
    for model in generators.GENERATORS:
        assert list(generators.cases(model, 7, 20)) == list(generators.cases(model, 7, 20))
        assert list(generators.cases(model, 7, 20)) != list(generators.cases(model, 8, 20))


def test_run_command_writes_the_findings_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "findings.jsonl"
    assert run.main(["--version", NEWEST, "--model", "tm", "--cases", "50", "--out", str(out)]) == 0
    assert out.read_text() == ""
    assert "50/50 agree" in capsys.readouterr().out


def test_run_command_refuses_a_release_without_a_harness(capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["--version", "1.29", "--model", "tm", "--cases", "1"]) == 2
    assert capsys.readouterr().err.startswith("tests.oracle.run: ")
