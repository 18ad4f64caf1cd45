"""The duration distributions of a Fleet file (``workload.lifetime``, ``workload.startupLatency``):
``{fixed: D}``, ``{exponential: MEAN}``, ``{uniform: [MIN, MAX]}``; absent (``forever``) for a lifetime means
the pod runs to the end of the run."""

from __future__ import annotations

import random
from dataclasses import dataclass

FOREVER = "forever"
FIXED = "fixed"
EXPONENTIAL = "exponential"
UNIFORM = "uniform"
KINDS = (FIXED, EXPONENTIAL, UNIFORM)


@dataclass(frozen=True)
class Distribution:
    """``kind`` fixed (a), exponential (mean a), uniform [a, b]; ``forever`` draws None."""

    kind: str = FOREVER
    a: float = 0.0
    b: float = 0.0

    def draw(self, rng: random.Random) -> float | None:
        """One value in seconds (None for ``forever``); consumes the RNG only for random kinds, so adding a
        fixed distribution to a file does not shift the other draws."""
        if self.kind == FIXED:
            return self.a
        if self.kind == EXPONENTIAL:
            return rng.expovariate(1.0 / self.a) if self.a > 0 else 0.0
        if self.kind == UNIFORM:
            return rng.uniform(self.a, self.b)
        return None

    def text(self) -> str:
        """As written in a Fleet file (``uniform 1s..3s``)."""
        if self.kind == FIXED:
            return f"fixed {self.a:g}s"
        if self.kind == EXPONENTIAL:
            return f"exponential mean {self.a:g}s"
        if self.kind == UNIFORM:
            return f"uniform {self.a:g}s..{self.b:g}s"
        return FOREVER


# The lifetime's name in the file format (kept: results and tests import it).
Lifetime = Distribution
