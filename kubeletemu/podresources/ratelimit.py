"""The podresources server's rate limit (``pkg/kubelet/apis/grpc/ratelimit.go``, k8s >= 1.27).

The kubelet installs one unary interceptor on the podresources gRPC server with a single token bucket,
``golang.org/x/time/rate.NewLimiter(DefaultQPS, DefaultBurstTokens)``; every unary call of every service
(v1 and v1alpha1 alike) asks it ``Allow()`` first and is refused at once with ``RESOURCE_EXHAUSTED``
"rejected by rate limit" when no token is left. Neither number is configurable.

:class:`TokenBucket` is that limiter; the interceptor lives with the server (``server.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# podresources.DefaultQPS / DefaultBurstTokens.
DEFAULT_QPS = 100
DEFAULT_BURST_TOKENS = 10
# status.Error(codes.ResourceExhausted, ...) of ErrorLimitExceeded.
REJECTED_BY_RATE_LIMIT = "rejected by rate limit"


class TokenBucket:
    """``rate.Limiter`` as ``Allow()`` uses it: ``burst`` tokens, refilled at ``qps`` per second.

    The bucket starts full (x/time/rate's first call sees an infinitely old ``last``). A call that finds
    fewer than one token is refused and changes nothing; one that finds a token takes it. ``clock`` is a
    monotonic clock in seconds (injectable for tests).
    """

    def __init__(
        self,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if qps <= 0 or burst <= 0:
            raise ValueError(f"a token bucket needs a positive rate and burst, got qps={qps} burst={burst}")
        self.qps = float(qps)
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last: float | None = None
        self._lock = threading.Lock()

    def allow(self) -> bool:
        """``Limiter.Allow()``: take one token now if there is one."""
        with self._lock:
            now = self._clock()
            tokens = self._tokens
            if self._last is None:
                tokens = float(self.burst)
            elif now > self._last:  # a clock that steps back adds nothing (advance() clamps it)
                tokens = min(float(self.burst), tokens + (now - self._last) * self.qps)
            if tokens < 1.0:
                return False
            self._tokens = tokens - 1.0
            self._last = now
            return True

    def tokens(self) -> float:
        """Tokens available now (``Limiter.Tokens()``), for inspection."""
        with self._lock:
            if self._last is None:
                return float(self.burst)
            elapsed = max(0.0, self._clock() - self._last)
            return min(float(self.burst), self._tokens + elapsed * self.qps)
