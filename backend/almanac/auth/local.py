"""The out-of-the-box local user.

On the first start with an empty database (and `LOCAL_USER` on), Almanac creates
`LOCAL_USER_EMAIL` and writes its API key to `<DATA_DIR>/local-api-key` with mode 0600. The key
itself is never logged: the log says where the file is.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from almanac.auth.service import AccountService

log = logging.getLogger(__name__)
KEY_FILE = "local-api-key"


async def ensure_local_user(accounts: AccountService, *, email: str, data_dir: Path) -> Path | None:
    """Create the local user if no user exists yet; returns the key file's path if one was written."""
    if await accounts.has_users():
        return None
    created = await accounts.create_user(email=email)
    path = data_dir / KEY_FILE
    await asyncio.to_thread(_write_secret, path, created.api_key)
    log.info("created the local user %s; its API key is in %s (readable by you only)", email, path.resolve())
    return path


def _write_secret(path: Path, secret: str) -> None:
    """Write `secret` to `path`, readable and writable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secret + "\n")
