"""Where the server key that encrypts integration tokens comes from.

`SECRET_KEY` when it is set. On a local run (`LOCAL_USER=true`) without it, a random key is
generated once into `<DATA_DIR>/secret-key` (mode 0600, like the local API key) and read from
there afterwards. In production (`LOCAL_USER=false`) without `SECRET_KEY` there is no key: per-user
tokens are off, and `SecretKey.problem` says so for the startup table.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from pathlib import Path

from almanac.auth.local import write_secret

log = logging.getLogger(__name__)
KEY_FILE = "secret-key"
MIN_LENGTH = 32


@dataclass(frozen=True)
class SecretKey:
    """The key (None: per-user tokens are off), where it came from, and why it is missing."""

    value: str | None
    source: str = ""
    problem: str = ""


def resolve_secret_key(configured: str | None, *, data_dir: Path, local: bool) -> SecretKey:
    """The key to encrypt integration tokens with (see the module docstring). Blocking file I/O."""
    if configured:
        return SecretKey(configured, "SECRET_KEY")
    if not local:
        return SecretKey(
            None, problem="SECRET_KEY is not set (LOCAL_USER=false): users cannot connect tokens of their own"
        )
    path = data_dir / KEY_FILE
    if path.is_file():
        existing = path.read_text(encoding="utf-8").strip()
        if len(existing) >= MIN_LENGTH:
            return SecretKey(existing, str(path))
        log.warning("%s holds no usable key (shorter than %d characters); generating a new one", path, MIN_LENGTH)
    write_secret(path, secrets.token_urlsafe(48))
    log.info("generated the key that encrypts integration tokens in %s (readable by you only)", path.resolve())
    return SecretKey(path.read_text(encoding="utf-8").strip(), f"{path} (generated)")
