"""Median time of a pfp0v001 fingerprint over 300 pods (target: under 0.5 ms).

Run: .venv/bin/python benchmarks/bench_fingerprint.py [--pods N] [--rounds R]
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubeletemu.podresources import fingerprint as pfp

TARGET_MS = 0.5


def _pods(count: int, namespaces: int, rnd: random.Random) -> list[tuple[str, str]]:
    """Deployment-style names (``<app>-<hash>-<suffix>``) spread over ``namespaces`` namespaces."""
    alphabet = string.ascii_lowercase + string.digits
    out = []
    for i in range(count):
        suffix = "".join(rnd.choices(alphabet, k=5))
        out.append((f"namespace-{i % namespaces}", f"app-{i}-7c9f8d6b5-{suffix}"))
    return out


def _median_ms(fn: Callable[[], object], rounds: int) -> float:
    for _ in range(min(50, rounds)):  # warm-up
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    rnd = random.Random(7)

    cases: list[tuple[str, Callable[[], object]]] = []
    for namespaces in (10, args.pods):
        pods = _pods(args.pods, namespaces, rnd)
        sign = pfp.compute(pods)
        listed = [
            pfp.PodInfo(ns, name, phase="Running", exclusive=i % 3 == 0) for i, (ns, name) in enumerate(pods)
        ]
        cases += [
            (f"compute  {args.pods} pods / {namespaces:>3} namespaces", lambda p=pods: pfp.compute(p)),
            (
                f"check    {args.pods} pods / {namespaces:>3} namespaces",
                lambda p=pods, s=sign: pfp.check(s, p),
            ),
            (
                f"traced   {args.pods} pods / {namespaces:>3} namespaces (method all)",
                lambda lp=listed: pfp.fingerprint_pods(lp, pfp.METHOD_ALL, node_name="node"),
            ),
        ]

    worst = 0.0
    for label, fn in cases:
        median = _median_ms(fn, args.rounds)
        worst = max(worst, median) if label.startswith("compute") else worst
        print(f"{label:<55} median {median:7.4f} ms")
    verdict = "OK" if worst < TARGET_MS else "OVER TARGET"
    print(f"compute target < {TARGET_MS} ms: worst median {worst:.4f} ms -> {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
