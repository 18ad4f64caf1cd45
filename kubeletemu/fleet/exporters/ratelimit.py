"""RTE's rate-limited event source (resource-topology-exporter ef567ef3f9fb8059ea474ef91fbff37674c44a68,
``pkg/ratelimiter/ratelimiter.go``) over the leaky bucket it uses (``go.uber.org/ratelimit`` v0.2.0, the
version RTE's go.mod pins; ``limiter_atomic.go``).

* Events from the ticker and the notify file go into a buffer of 5 (``bufferSize``); an event that finds
  it full is dropped (the receiver's non-blocking send).
* The sender takes the oldest buffered event (freeing its slot), then ``Take()``s: it waits until the
  limiter allows one more, and only then hands the event on — the scan reads the node at that moment.
* ``Take()`` with ``rate`` per ``per`` (RTE: ``--max-events-per-second`` 1 per ``time.Second``): each
  request is budgeted ``per/rate``; ``sleepFor`` accumulates the budget minus the time since the last
  request, floored at ``-slack * per/rate`` (slack 10), and when positive is slept and reset to 0. A
  limiter idle for long starts with the full slack: up to 10 requests pass back to back before it paces.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable

from kubeletemu.fleet.clock import Clock

# pkg/ratelimiter: the buffered channel between the event source and the rate limiter.
BUFFER_SIZE = 5
# go.uber.org/ratelimit: the default slack.
DEFAULT_SLACK = 10
NS = 1_000_000_000


class LeakyBucket:
    """``atomicLimiter`` on a simulated clock, in Go's integer nanoseconds (``time.Duration``):
    :meth:`take` returns how long the caller sleeps, in seconds."""

    def __init__(
        self, rate: int, per_s: float = 1.0, slack: int = DEFAULT_SLACK, *, idle: bool = True
    ) -> None:
        """``idle``: the limiter has been idle for long (its slack is full) — an exporter that has run
        for a while; False is a new limiter (the library's zero state)."""
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.per_request = round(per_s * NS) // rate
        self.max_slack = -slack * self.per_request
        self.idle = idle
        self.last: int | None = None
        self.sleep_for = 0

    def take(self, now_s: float) -> float:
        """One request at ``now_s``: the sleep before it may proceed (0: at once)."""
        now = round(now_s * NS)
        if self.last is None:
            # The first request is let through; an idle limiter's gap since its last one is unbounded.
            self.last = now
            self.sleep_for = self.max_slack if self.idle else 0
            return 0.0
        sleep_for = max(self.sleep_for + self.per_request - (now - self.last), self.max_slack)
        if sleep_for > 0:
            self.last = now + sleep_for
            self.sleep_for = 0
            return sleep_for / NS
        self.last = now
        self.sleep_for = sleep_for
        return 0.0


class RateLimitedEvents:
    """``RateLimitedEventSource``: :meth:`push` an event (True: a timer tick); ``emit`` receives each one
    the limiter lets through, at the moment it does."""

    def __init__(self, clock: Clock, limiter: LeakyBucket, emit: Callable[[bool], None]) -> None:
        self.clock = clock
        self.limiter = limiter
        self.emit = emit
        self.buffer: deque[bool] = deque()
        self.sleeping = False
        self.dropped = 0

    def push(self, timer: bool) -> None:
        if len(self.buffer) >= BUFFER_SIZE:
            self.dropped += 1
            return
        self.buffer.append(timer)
        if not self.sleeping:
            self._send()

    def _send(self) -> None:
        while self.buffer:
            timer = self.buffer.popleft()
            wait = self.limiter.take(self.clock.now())
            if wait > 0:
                self.sleeping = True
                self.clock.after(wait, functools.partial(self._woke, timer))
                return
            self.emit(timer)

    def _woke(self, timer: bool) -> None:
        self.sleeping = False
        self.emit(timer)
        self._send()
