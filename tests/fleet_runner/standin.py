"""A stand-in for ``fleet.engine.run_configuration`` and its configurations, importable by worker
processes and Ray workers (the runner pickles functions by reference, as it will the engine's).

It does real work the test can check: it sums the first ``pods`` squares, reporting progress every 10 pods
as the engine does, and tells which process ran it; ``delay_s`` makes early configurations finish last.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StandInConfig:
    name: str
    pods: int = 50
    delay_s: float = 0.0
    fail: str | None = None  # raise ValueError(fail) half way through


def run_standin(config: StandInConfig, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    time.sleep(config.delay_s)
    total = 0
    for pod in range(1, config.pods + 1):
        if config.fail is not None and pod > config.pods // 2:
            raise ValueError(config.fail)
        total += pod * pod
        if progress is not None and pod % 10 == 0:
            progress(pod, config.pods)
    return {"name": config.name, "sum_of_squares": total, "pid": os.getpid()}


def expected_sum(pods: int) -> int:
    return pods * (pods + 1) * (2 * pods + 1) // 6
