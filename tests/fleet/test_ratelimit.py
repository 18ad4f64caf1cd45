"""RTE's rate limiter: the leaky bucket against go.uber.org/ratelimit v0.2.0's own tests
(``ratelimit_test.go`` ``TestRateLimiter``, ``TestPer``, ``TestDelayedRateLimiter``, ``TestSlack``: goroutines
looping on ``Take()`` under a mock clock, counted at given times), and RTE's buffered event source
(``pkg/ratelimiter``: 5 buffered, the rest dropped)."""

from __future__ import annotations

import heapq

import pytest

from kubeletemu.fleet.exporters.ratelimit import NS, LeakyBucket, RateLimitedEvents
from tests.fleet.conftest import FakeClock


def _count_at(takers: list[tuple[float, list[LeakyBucket]]], at: list[float]) -> list[int]:
    """Goroutines (each: a start time and the limiters it takes in turn, then counts one and loops) on a
    mock clock kept in integer nanoseconds, as Go's; the count of loops completed strictly before each time
    in ``at`` (upstream's assertion fires before a taker waking at the same instant)."""
    events: list[tuple[int, int, int, int]] = []  # (time ns, sequence, taker, limiter index)
    for index, (start, _) in enumerate(takers):
        events.append((round(start * NS), index, index, 0))
    sequence = len(events)
    heapq.heapify(events)
    done: list[int] = []
    horizon = round(max(at) * NS)
    while events:
        now, _, taker, step = heapq.heappop(events)
        if now >= horizon:
            break
        limiters = takers[taker][1]
        if step == len(limiters):
            done.append(now)
            step = 0
        wait = round(limiters[step].take(now / NS) * NS)
        sequence += 1
        heapq.heappush(events, (now + wait, sequence, taker, step + 1))
    return [sum(1 for t in done if t < round(moment * NS)) for moment in at]


def test_rate_limiter() -> None:
    """``TestRateLimiter``: 100/s without slack, four goroutines: 100, 200, 300 at 1, 2, 3 s."""
    limiter = LeakyBucket(100, slack=0, idle=False)
    assert _count_at([(0.0, [limiter])] * 4, [1.0, 2.0, 3.0]) == [100, 200, 300]


def test_per() -> None:
    """``TestPer``: 7 per minute without slack, two goroutines: 1, 8, 15 at 1 s, 1 min, 2 min."""
    limiter = LeakyBucket(7, per_s=60.0, slack=0, idle=False)
    assert _count_at([(0.0, [limiter])] * 2, [1.0, 60.0, 120.0]) == [1, 8, 15]


def test_delayed_rate_limiter() -> None:
    """``TestDelayedRateLimiter``: slow 10/s and fast 100/s in one goroutine, four more on the fast one
    from 20 s: 1,200 at 30 s."""
    slow = LeakyBucket(10, slack=0, idle=False)
    fast = LeakyBucket(100, slack=0, idle=False)
    takers = [(0.0, [slow, fast])] + [(20.0, [fast])] * 4
    assert _count_at(takers, [30.0]) == [1200]


@pytest.mark.parametrize(
    ("slack", "per", "want"),
    [
        (10, 1.0, 130),  # "no option, defaults to 10" and "slack of 10, like default"
        (20, 1.0, 140),
        (150, 1.0, 270),
        (10, 0.5, 230),  # "... with per"
        (20, 0.5, 240),
        (150, 0.5, 370),
    ],
)
def test_slack(slack: int, per: float, want: int) -> None:
    """``TestSlack``: slow (10/s, no slack) and fast (100 per ``per``, with the slack) in one goroutine,
    two more on the fast one from 2 s: 10 at 1 s (the slow one dominates), ``want`` at 3 s."""
    slow = LeakyBucket(10, slack=0, idle=False)
    fast = LeakyBucket(100, per_s=per, slack=slack, idle=False)
    assert _count_at([(0.0, [slow, fast]), (2.0, [fast]), (2.0, [fast])], [1.0, 3.0]) == [10, want]


def test_a_burst_spends_the_slack_then_is_paced_and_the_buffer_drops_the_rest() -> None:
    """An idle exporter's limiter (1/s, slack 10) lets 11 events through at once (the first, then ten of
    slack); the 12th waits with the sleeping sender, 5 wait in the buffer, the last 3 of 20 are dropped;
    the waiting ones pass one a second, each scan reading the node then."""
    clock = FakeClock()
    emitted: list[tuple[float, bool]] = []
    events = RateLimitedEvents(clock, LeakyBucket(1), lambda timer: emitted.append((clock.now(), timer)))
    for index in range(20):
        events.push(index % 2 == 0)
    assert [t for t, _ in emitted] == [0.0] * 11
    assert events.dropped == 3
    clock.run_until(30.0)
    assert [t for t, _ in emitted] == [0.0] * 11 + [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # Events keep their kind (periodic or reactive) through the buffer, in order.
    assert [timer for _, timer in emitted] == [i % 2 == 0 for i in range(17)]
    # Idle again for long: the slack is back.
    clock.run_until(100.0)
    for _ in range(3):
        events.push(True)
    assert [t for t, _ in emitted][-3:] == [100.0] * 3


def test_a_new_limiter_has_no_slack_yet() -> None:
    """The library's zero state (``idle=False``): the first request passes, the second waits a period."""
    limiter = LeakyBucket(1, idle=False)
    assert limiter.take(5.0) == 0.0
    assert limiter.take(5.0) == 1.0
    assert LeakyBucket(1).take(5.0) == 0.0 and LeakyBucket(2, per_s=1.0).per_request == NS // 2
