"""When to restart a failing MCP server (pure): exponential backoff behind a circuit breaker.

Each failure (a start that fails, or a session that dies) doubles the wait before the next start,
from `initial_backoff_s` up to `max_backoff_s`. After `failures_to_open` failures in a row the
breaker opens: no start is tried for `open_for_s`, then one trial start is allowed (half-open);
if that session dies quickly too, the breaker opens again at once. A session that stayed up for
`stable_after_s` clears the count, so a server that crashes once a day always restarts quickly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RestartPolicy:
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    failures_to_open: int = 5
    open_for_s: float = 300.0
    stable_after_s: float = 60.0
    jitter: float = 0.1  # each wait is stretched by up to this fraction, so replicas do not restart in step
    start_timeout_s: float = 60.0  # spawn + initialize + list_tools (a first `docker run` may pull an image)
    ping_interval_s: float = 30.0  # idle health check
    ping_timeout_s: float = 5.0
    stop_timeout_s: float = 10.0


class Breaker:
    """Failure bookkeeping for one server. `clock` is monotonic seconds; `rand` returns [0, 1)."""

    def __init__(
        self,
        policy: RestartPolicy,
        *,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._rand = rand
        self.failures = 0
        self.last_error = ""
        self._next_attempt = 0.0

    def record_failure(self, error: str, *, uptime_s: float | None = None) -> float:
        """Count a failure (`uptime_s`: how long the session had been up, None if it never came
        up) and return how long to wait before the next start."""
        policy = self.policy
        if uptime_s is not None and uptime_s >= policy.stable_after_s:
            self.failures = 0
        self.failures += 1
        self.last_error = error
        if self.is_open:
            delay = policy.open_for_s
        else:
            delay = min(policy.initial_backoff_s * 2 ** (self.failures - 1), policy.max_backoff_s)
            delay *= 1 + policy.jitter * self._rand()
        self._next_attempt = self._clock() + delay
        return delay

    @property
    def is_open(self) -> bool:
        """Whether the server failed too often in a row and is paused."""
        return self.failures >= self.policy.failures_to_open

    def wait_s(self) -> float:
        """Seconds until the next start may be tried (0 if now)."""
        return max(0.0, self._next_attempt - self._clock())
