"""Restarts back off exponentially; a server that keeps failing trips the circuit breaker."""

from almanac.mcp_client.breaker import Breaker, RestartPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


POLICY = RestartPolicy(
    initial_backoff_s=1, max_backoff_s=8, failures_to_open=5, open_for_s=300, stable_after_s=60, jitter=0
)


def test_waits_double_up_to_the_cap() -> None:
    breaker = Breaker(RestartPolicy(initial_backoff_s=1, max_backoff_s=8, failures_to_open=99, jitter=0))
    assert [breaker.record_failure("x") for _ in range(6)] == [1, 2, 4, 8, 8, 8]


def test_the_breaker_opens_after_repeated_failures_and_reopens_after_a_failed_trial() -> None:
    clock = Clock()
    breaker = Breaker(POLICY, clock=clock)
    delays = [breaker.record_failure("crash") for _ in range(5)]
    assert delays == [1, 2, 4, 8, 300] and breaker.is_open
    assert breaker.wait_s() == 300
    clock.now += 300
    assert breaker.wait_s() == 0  # half-open: one trial start
    assert breaker.record_failure("crash again", uptime_s=1) == 300 and breaker.is_open
    assert breaker.last_error == "crash again"


def test_a_session_that_stayed_up_clears_the_count() -> None:
    breaker = Breaker(POLICY, clock=Clock())
    for _ in range(4):
        breaker.record_failure("crash", uptime_s=1)
    assert breaker.record_failure("crash a day later", uptime_s=86_400) == 1
    assert breaker.failures == 1 and not breaker.is_open


def test_jitter_only_stretches_the_wait() -> None:
    policy = RestartPolicy(initial_backoff_s=2, jitter=0.5)
    assert Breaker(policy, rand=lambda: 0.0).record_failure("x") == 2
    assert Breaker(policy, rand=lambda: 0.999).record_failure("x") < 3
