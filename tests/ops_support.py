"""Helpers for the operations tests (limits, metrics, shutdown): the Redis that runs on these
machines, and reading Prometheus text."""

from __future__ import annotations

import os
import socket
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

REDIS_URL = os.environ.get("ALMANAC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_url() -> str:
    """The test Redis; skipped when it does not answer — except in CI (`CI` set), where it must."""
    host, port = "127.0.0.1", 6379
    address = REDIS_URL.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
    if ":" in address:
        host, port = address.rsplit(":", 1)[0], int(address.rsplit(":", 1)[1])
    try:
        with socket.create_connection((host, port), timeout=2):
            return REDIS_URL
    except OSError:
        if os.environ.get("CI") or os.environ.get("ALMANAC_REQUIRE_REDIS"):
            raise AssertionError(f"Redis is required here but {REDIS_URL} does not answer") from None
        pytest.skip(f"Redis at {REDIS_URL} does not answer")


def unique_prefix() -> str:
    """A key prefix no other test run uses (tests share one Redis)."""
    return f"almanac-test:{uuid.uuid4().hex[:12]}:"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition, keyed by (name, sorted labels)."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    """One sample's value (0 when absent)."""
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)
