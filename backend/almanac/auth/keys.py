"""API keys: generated once, shown once, stored only as a SHA-256 hash.

Keys carry 256 bits of randomness, so a fast hash is enough: there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "alm_"


def generate_api_key() -> str:
    """A new random API key, `alm_` followed by 43 URL-safe characters."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    """The stored form of a key: hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def display_prefix(key: str) -> str:
    """The first characters of a key, safe to show in listings."""
    return key[: len(KEY_PREFIX) + 4]


def looks_like_api_key(value: str) -> bool:
    """Cheap shape check before touching the database."""
    return value.startswith(KEY_PREFIX) and 20 <= len(value) <= 200
