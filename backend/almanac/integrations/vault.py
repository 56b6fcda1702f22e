"""`TokenVault`: users' own integration tokens — connect (checked, encrypted), status (masked),
disconnect, and the decrypted token for the MCP client's calls on that user's behalf.

Only the owner ever gets anything back, and only masked (`status`); the clear token leaves this
module only through `token()`, for the outgoing call. Nothing here logs a token.

Errors: `MalformedToken` (formats.py) for a token that cannot be right; `TokensDisabled` when the
server has no key to encrypt with (production without `SECRET_KEY`); `KeyError` for an unknown
integration name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from almanac.integrations.crypto import TokenCipher, UnreadableToken
from almanac.integrations.formats import FORMATS, GitHubTokenFormat
from almanac.integrations.secret_key import SecretKey
from almanac.storage import integrations as store
from almanac.storage.db import Database

log = logging.getLogger(__name__)


class TokensDisabled(Exception):
    """Per-user tokens are off on this server (no key to encrypt them with)."""


@dataclass(frozen=True)
class TokenStatus:
    """What the owner sees: whether a usable token is connected, masked, and when it was set."""

    connected: bool
    masked: str | None = None
    updated_at: datetime | None = None


class TokenVault:
    """Users' integration tokens on `database`, encrypted with the key `load_key` returns."""

    def __init__(
        self,
        database: Database,
        *,
        load_key: Callable[[], SecretKey],
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._db = database
        self._load_key = load_key
        self._clock = clock or (lambda: datetime.now(UTC))
        self._cipher: TokenCipher | None = None
        self._key: SecretKey | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> SecretKey:
        """Resolve the key (once; it may write the local key file). Later calls return the same."""
        async with self._lock:
            if self._key is None:
                key = await asyncio.to_thread(self._load_key)
                self._cipher = TokenCipher(key.value) if key.value else None
                self._key = key
        return self._key

    @property
    def enabled(self) -> bool:
        """Whether users can connect tokens (known after `start()`)."""
        return self._cipher is not None

    @property
    def key_source(self) -> str:
        """Where the key came from (`SECRET_KEY` or the key file), for the startup table."""
        return self._key.source if self._key is not None else ""

    @property
    def problem(self) -> str:
        """Why per-user tokens are off ('' when they are on, or before `start()`)."""
        return self._key.problem if self._key is not None else ""

    async def status(self, *, user_id: str, integration: str) -> TokenStatus:
        """The user's token for `integration`, masked; not connected if none is stored or it was
        encrypted under another key (then the user must connect it again)."""
        _known(integration)
        cipher = await self._cipher_or_none()
        async with self._db.session() as session:
            stored = await store.get_token(session, user_id=user_id, integration=integration)
        if stored is None or cipher is None or stored.key_id != cipher.key_id:
            return TokenStatus(connected=False)
        return TokenStatus(connected=True, masked=stored.masked, updated_at=stored.updated_at)

    async def connect(self, *, user_id: str, integration: str, token: str) -> TokenStatus:
        """Check, encrypt and store the user's token (replacing any earlier one)."""
        token_format = _known(integration)
        token = token_format.normalise(token)
        cipher = await self._cipher_or_none()
        if cipher is None:
            raise TokensDisabled(self.problem or "per-user tokens are off on this server")
        ciphertext = cipher.encrypt(token, context=_context(user_id, integration))
        async with self._db.session() as session:
            stored = await store.put_token(
                session,
                user_id=user_id,
                integration=integration,
                ciphertext=ciphertext,
                key_id=cipher.key_id,
                masked=token_format.mask(token),
                now=self._clock(),
            )
        return TokenStatus(connected=True, masked=stored.masked, updated_at=stored.updated_at)

    async def disconnect(self, *, user_id: str, integration: str) -> bool:
        """Forget the user's token for `integration`; False if there was none."""
        _known(integration)
        async with self._db.session() as session:
            return await store.delete_token(session, user_id=user_id, integration=integration)

    async def token(self, *, user_id: str, integration: str) -> str | None:
        """The user's own token in clear, for a call made on their behalf; None if they have none
        (or it cannot be decrypted with the current key, which is logged without the token)."""
        cipher = await self._cipher_or_none()
        if cipher is None:
            return None
        async with self._db.session() as session:
            stored = await store.get_token(session, user_id=user_id, integration=integration)
        if stored is None:
            return None
        try:
            return cipher.decrypt(stored.ciphertext, context=_context(user_id, integration))
        except UnreadableToken as exc:
            log.warning("a stored %s token cannot be used (%s); its owner must connect it again", integration, exc)
            return None

    async def _cipher_or_none(self) -> TokenCipher | None:
        if self._key is None:
            await self.start()
        return self._cipher


def _known(integration: str) -> GitHubTokenFormat:
    return FORMATS[integration]  # KeyError: not an integration this server knows


def _context(user_id: str, integration: str) -> str:
    return f"{integration}:{user_id}"
