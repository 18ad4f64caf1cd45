"""The simulated clock every part of a fleet run shares: ``now`` and ``after`` (an action at a later time),
on simpy. Parts take a :class:`Clock`, never simpy itself, so each can be driven by a test clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import simpy

Action = Callable[[], None]


class Clock(Protocol):
    def now(self) -> float: ...

    def after(self, delay: float, action: Action) -> None:
        """Run ``action`` ``delay`` seconds from now (0: after what is already due now)."""

    def every(self, first: float, period: float, action: Action) -> None:
        """``action`` at ``first`` seconds from now, then every ``period`` (a fixed ticker)."""


class SimClock:
    """:class:`Clock` on a simpy environment: a timer event per action (cheaper than a process); actions
    due at the same instant run in the order they were scheduled."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env

    def now(self) -> float:
        return float(self.env.now)

    def after(self, delay: float, action: Action) -> None:
        def fire(_event: simpy.Event) -> None:
            action()

        self.env.timeout(max(0.0, delay)).callbacks.append(fire)

    def every(self, first: float, period: float, action: Action) -> None:
        """``action`` at ``first`` seconds from now, then every ``period`` (a fixed ticker)."""

        def tick() -> None:
            action()
            self.after(period, tick)

        self.after(first, tick)
