"""The out-of-the-box local user, and how a person proves they may act as it.

On the first start with an empty database (and `LOCAL_USER` on), Almanac creates
`LOCAL_USER_EMAIL` and writes its API key to `<DATA_DIR>/local-api-key` with mode 0600. The key
itself is never logged: the log says where the file is.

Key-less sign-in trusts one thing only: that the person can read the data folder (or the terminal
of `almanac serve`). `LocalSignIn` holds a one-time token; its link is printed by `almanac serve`
and written to `<DATA_DIR>/local-sign-in-url` (mode 0600). Redeeming the token opens a browser
session and replaces it with a new one (written to the same file), so a link works once. The
client's IP address is not trusted: behind a same-host proxy or tunnel every client is loopback.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import secrets
import stat
from pathlib import Path

from almanac.auth.keys import hash_api_key
from almanac.auth.service import AccountService

log = logging.getLogger(__name__)
KEY_FILE = "local-api-key"
LINK_FILE = "local-sign-in-url"


async def ensure_local_user(accounts: AccountService, *, email: str, data_dir: Path) -> Path | None:
    """Create the local user if no user exists yet; returns the key file's path if one was written.
    The data folder is created readable by its owner only."""
    await asyncio.to_thread(ensure_private_folder, data_dir)
    if await accounts.has_users():
        return None
    created = await accounts.create_user(email=email)
    path = data_dir / KEY_FILE
    await asyncio.to_thread(write_secret, path, created.api_key)
    log.info("created the local user %s; its API key is in %s (readable by you only)", email, path.resolve())
    return path


_warned: set[Path] = set()


def ensure_private_folder(folder: Path) -> None:
    """Create `folder` readable by its owner only (0700); warn if an existing one is open to others."""
    if not folder.exists():
        folder.mkdir(parents=True, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask; be exact
        return
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode & 0o077 and folder.resolve() not in _warned:
        _warned.add(folder.resolve())  # said once per process, not at every file written there
        log.warning("the data folder %s is readable by other users (mode %o); run `chmod 700 %s`", folder, mode, folder)


def write_secret(path: Path, secret: str) -> None:
    """Write `secret` to `path`, readable and writable by the owner only."""
    ensure_private_folder(path.parent)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secret + "\n")


class LocalSignIn:
    """One-time sign-in links for the local user. Only the token's hash is kept in memory."""

    def __init__(self, *, data_dir: Path, base_url: str) -> None:
        self.link_file = data_dir / LINK_FILE
        self._base_url = base_url.rstrip("/")
        self._token_hash: str | None = None
        self._lock = asyncio.Lock()

    def issue(self) -> str:
        """A new sign-in link (the previous one stops working); written to the link file."""
        token = secrets.token_urlsafe(32)
        self._token_hash = hash_api_key(token)
        link = f"{self._base_url}/#sign-in={token}"
        write_secret(self.link_file, link)
        return link

    async def redeem(self, token: str) -> bool:
        """Whether `token` is the current one; if so it is used up and a new link is written."""
        if not 20 <= len(token) <= 200 or self._token_hash is None:
            return False
        async with self._lock:
            current = self._token_hash
            if current is None or not hmac.compare_digest(hash_api_key(token), current):
                return False
            await asyncio.to_thread(self.issue)
        log.info("the local sign-in link was used; a new one is in %s", self.link_file)
        return True


def announce_sign_in_link(sign_in: LocalSignIn, *, email: str) -> str:
    """Issue a fresh sign-in link and print it on the server's terminal (stdout, not the log)."""
    link = sign_in.issue()
    print(
        f"\n  Sign in to the web UI as {email}: {link}\n"
        f"  (a one-time link; after each use a new one is written to {sign_in.link_file})\n",
        flush=True,
    )
    return link


def link_base_url(host: str, port: int) -> str:
    """The URL a browser on this machine uses to reach a server bound to `host`."""
    if host in ("0.0.0.0", "", "*"):
        host = "127.0.0.1"
    elif host == "::":
        host = "[::1]"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"
