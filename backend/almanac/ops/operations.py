"""`Operations`: the limits, metrics and shutdown coordinator of one application, built from plain
values by the composition root (`almanac.main`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from almanac.config import redact_url
from almanac.ops.limit_stores import LimitStore, MemoryStore, RedisStore
from almanac.ops.limits import LimitConfig, Limiter
from almanac.ops.metrics import Metrics
from almanac.ops.shutdown import Shutdown


@dataclass(frozen=True)
class OpsConfig:
    limits: LimitConfig = field(default_factory=LimitConfig)
    redis_url: str = ""  # empty: limits counted in this process only
    redis_prefix: str = "almanac:"
    metrics_token: str | None = None  # None: /metrics is off
    shutdown_grace_s: float = 20.0


@dataclass
class Operations:
    limiter: Limiter
    metrics: Metrics
    shutdown: Shutdown
    metrics_token: str | None
    store: str  # where the limits are counted, for the startup table

    def describe(self) -> str:
        """One line for the startup table."""
        config = self.limiter.config
        rates = ", ".join(f"{plan} {n}/min" if n else f"{plan} unlimited" for plan, n in config.per_minute.items())
        streams = f"{config.max_streams} open streams per user" if config.max_streams else "no stream cap"
        metrics = "/metrics with METRICS_TOKEN" if self.metrics_token else "/metrics off (METRICS_TOKEN not set)"
        return f"{rates}; {streams}; counted {self.store}; {metrics}; shutdown grace {self.shutdown.grace_s:g} s"

    async def close(self) -> None:
        """End the grace timer and the limits' background work and connections."""
        await self.shutdown.close()
        await self.limiter.close()


def build_operations(config: OpsConfig) -> Operations:
    """Operations as configured (no I/O: a Redis connection is made when first used)."""
    metrics = Metrics()
    store: LimitStore
    if config.redis_url:
        store = RedisStore.from_url(config.redis_url, prefix=config.redis_prefix)
        where = f"in Redis ({redact_url(config.redis_url)})"
    else:
        store = MemoryStore()
        where = "in this process (set REDIS_URL to share them between processes)"
    return Operations(
        limiter=Limiter(config.limits, store, metrics=metrics),
        metrics=metrics,
        shutdown=Shutdown(grace_s=config.shutdown_grace_s),
        metrics_token=config.metrics_token,
        store=where,
    )
