"""Replays seeded cases through our models and the upstream kubelet packages; writes what differs.

``python -m tests.oracle.run --version 1.37 --cases 100000 --model tm|cpu|memory [--seed 0] [--out FILE]``
builds (or reuses) the harness of that release (tests/oracle/harness.py), replays ``--cases`` cases of the
model from ``--seed`` through both sides, prints one summary line (agreement, upstream panics, cases/s)
and writes every finding as one JSON line to ``--out`` (default ``oracle-<model>-<minor>.jsonl``): the
case, both answers and the fields that differ. Exit status 0 when every case agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from tests.oracle import generators
from tests.oracle.diff import replay
from tests.oracle.harness import Harness, HarnessError, ensure
from tests.upstream.build import MissingAssetsError
from tests.upstream.pins import NEWEST, pin_for


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.oracle.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", default=NEWEST, help=f"a pinned minor (default {NEWEST})")
    parser.add_argument("--model", required=True, choices=sorted(generators.GENERATORS))
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="the findings file (JSON lines)")
    args = parser.parse_args(argv)
    try:
        minor = pin_for(args.version).minor
        binary = ensure(minor)
    except (ValueError, MissingAssetsError, subprocess.CalledProcessError) as error:
        print(f"tests.oracle.run: {error}", file=sys.stderr)
        return 2
    out: Path = args.out or Path(f"oracle-{args.model}-{minor}.jsonl")
    with out.open("w", encoding="utf-8") as findings, Harness(binary) as harness:
        try:
            report = replay(
                harness,
                args.model,
                minor,
                args.seed,
                args.cases,
                on_finding=lambda f: findings.write(json.dumps(f.as_json()) + "\n"),
            )
        except HarnessError as error:
            print(f"tests.oracle.run: {error}", file=sys.stderr)
            return 2
    print(report.summary())
    print(f"findings: {out}")
    return 0 if not report.findings else 1


if __name__ == "__main__":
    sys.exit(main())
