"""The podresources token bucket: ``rate.NewLimiter(100, 10).Allow()``, as the kubelet asks it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeletemu.podresources.ratelimit import (
    DEFAULT_BURST_TOKENS,
    DEFAULT_QPS,
    REJECTED_BY_RATE_LIMIT,
    TokenBucket,
)


class Clock:
    def __init__(self, now: float = 50.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_kubelets_constants() -> None:
    assert (DEFAULT_QPS, DEFAULT_BURST_TOKENS, REJECTED_BY_RATE_LIMIT) == (100, 10, "rejected by rate limit")


def test_starts_full_then_refills_at_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(clock=clock)
    assert bucket.tokens() == 10
    assert [bucket.allow() for _ in range(11)] == [True] * 10 + [False]
    clock.now += 0.005  # half a token
    assert not bucket.allow()
    clock.now += 0.005
    assert bucket.allow() and not bucket.allow()
    clock.now += 0.035  # three and a half tokens
    assert [bucket.allow() for _ in range(4)] == [True, True, True, False]
    assert bucket.tokens() == pytest.approx(0.5)


def test_never_holds_more_than_the_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(clock=clock)
    clock.now += 3600
    assert bucket.tokens() == 10
    assert sum(bucket.allow() for _ in range(50)) == 10


def test_refusals_take_nothing() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=1, burst=1, clock=clock)
    assert bucket.allow()
    for _ in range(5):
        clock.now += 0.1
        assert not bucket.allow()
    clock.now += 0.5  # a second since the last granted call, refusals in between
    assert bucket.allow()


def test_a_clock_stepping_back_adds_nothing() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock)
    assert bucket.allow() and bucket.allow()
    clock.now -= 5
    assert not bucket.allow()
    clock.now += 0.1  # still before the last grant: x/time/rate counts no elapsed time
    assert not bucket.allow()
    clock.now = 50.1
    assert bucket.allow()


@pytest.mark.parametrize(("qps", "burst"), [(0, 10), (100, 0), (-1, 1)])
def test_rejects_a_useless_bucket(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="positive rate and burst"):
        TokenBucket(qps, burst)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=0.05, allow_nan=False), min_size=1, max_size=200))
def test_grants_exactly_what_the_bucket_holds(gaps: list[float]) -> None:
    """Greedy and bounded: a call is granted iff a token is there, so over any window at most
    burst + qps * duration calls pass, and none is refused while a whole token is available."""
    clock = Clock(0.0)
    bucket = TokenBucket(clock=clock)
    granted: list[float] = []
    for gap in gaps:
        clock.now += gap
        available = bucket.tokens()
        allowed = bucket.allow()
        assert allowed == (available >= 1.0)
        if allowed:
            granted.append(clock.now)
    for i, start in enumerate(granted):
        for j in range(i, len(granted)):
            assert j - i + 1 <= DEFAULT_BURST_TOKENS + DEFAULT_QPS * (granted[j] - start) + 1e-6
