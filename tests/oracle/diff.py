"""Field-by-field comparison of our answer with the harness's, and a whole replay of seeded cases."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from tests.oracle import generators, ours
from tests.oracle.harness import Harness

# Where the two sides disagree: (path, ours, upstream); the path names the field ("containers[2].cpus").
Difference = tuple[str, Any, Any]


def differences(ours_answer: Any, upstream: Any, path: str = "") -> list[Difference]:
    if isinstance(ours_answer, dict) and isinstance(upstream, dict):
        out: list[Difference] = []
        for key in sorted(set(ours_answer) | set(upstream)):
            sub = f"{path}.{key}" if path else key
            if key not in ours_answer or key not in upstream:
                out.append((sub, ours_answer.get(key, "<absent>"), upstream.get(key, "<absent>")))
            else:
                out += differences(ours_answer[key], upstream[key], sub)
        return out
    if isinstance(ours_answer, list) and isinstance(upstream, list) and len(ours_answer) == len(upstream):
        return [
            d
            for i, (a, b) in enumerate(zip(ours_answer, upstream, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    return [] if ours_answer == upstream else [(path, ours_answer, upstream)]


@dataclass
class Finding:
    index: int
    case: dict[str, Any]
    ours: dict[str, Any]
    upstream: dict[str, Any]
    differences: list[Difference]

    @property
    def panic(self) -> bool:
        return "panic" in self.upstream

    def as_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": "upstream-panic" if self.panic else "difference",
            "differences": [{"field": p, "ours": a, "upstream": b} for p, a, b in self.differences],
            "case": self.case,
            "ours": self.ours,
            "upstream": self.upstream,
        }


@dataclass
class Report:
    model: str
    version: str
    seed: int
    cases: int = 0
    findings: list[Finding] = field(default_factory=list)
    # CPU seconds of each side (ours: this process's; upstream: the harness process's), and the wall time.
    ours_seconds: float = 0.0
    upstream_seconds: float = 0.0
    wall_seconds: float = 0.0

    @property
    def agreeing(self) -> int:
        return self.cases - len(self.findings)

    @property
    def panics(self) -> int:
        return sum(f.panic for f in self.findings)

    def summary(self) -> str:
        total = self.ours_seconds + self.upstream_seconds
        rate = self.cases / total if total else 0.0
        return (
            f"{self.model} at {self.version} (seed {self.seed}): {self.agreeing}/{self.cases} agree, "
            f"{len(self.findings) - self.panics} differ, {self.panics} upstream panics; "
            f"{rate:.0f} cases per CPU second (CPU: ours {self.ours_seconds:.1f} s, upstream "
            f"{self.upstream_seconds:.1f} s; wall {self.wall_seconds:.1f} s)"
        )


def _batches(items: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def replay(
    harness: Harness,
    model: str,
    version: str,
    seed: int,
    count: int,
    *,
    batch: int = 200,
    on_finding: Callable[[Finding], None] | None = None,
) -> Report:
    """``count`` seeded cases of ``model`` through both sides; a case whose answers differ anywhere (or on
    which upstream panicked) is a finding."""
    report = Report(model, version, seed)
    wall, upstream_before = time.perf_counter(), harness.cpu_seconds()
    for cases in _batches(generators.cases(model, seed, count), batch):
        upstream = harness.ask(cases)
        started = time.process_time()
        mine = [ours.answer(case, version) for case in cases]
        report.ours_seconds += time.process_time() - started
        for case, a, b in zip(cases, mine, upstream, strict=True):
            diffs = differences(a, b)
            if diffs:
                finding = Finding(report.cases, case, a, b, diffs)
                report.findings.append(finding)
                if on_finding is not None:
                    on_finding(finding)
            report.cases += 1
    report.upstream_seconds = harness.cpu_seconds() - upstream_before
    report.wall_seconds = time.perf_counter() - wall
    return report
