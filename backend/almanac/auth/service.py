"""Accounts: creating users (with their credit account and first API key) and authenticating keys."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from almanac.auth.keys import display_prefix, generate_api_key, hash_api_key, looks_like_api_key
from almanac.billing.plans import Plan
from almanac.storage import credits as credit_store
from almanac.storage import users as user_store
from almanac.storage.db import Database
from almanac.storage.records import ApiKeyRecord, UserRecord
from almanac.storage.users import EmailTaken

__all__ = ["AccountService", "EmailTaken", "Identity", "NewUser", "UnknownUser"]
KEY_TOUCH_INTERVAL = timedelta(minutes=1)  # how stale `last_used_at` may get (saves a write per request)


class UnknownUser(Exception):
    """No user has this e-mail."""


@dataclass(frozen=True)
class NewUser:
    user: UserRecord
    api_key: str  # shown once; only its hash is stored


@dataclass(frozen=True)
class Identity:
    """Who a request authenticated as, and with which API key (None: the local sign-in link)."""

    user: UserRecord
    api_key_id: str | None


class AccountService:
    def __init__(
        self, database: Database, *, sessions_per_user: int = 20, clock: Callable[[], datetime] | None = None
    ) -> None:
        self._db = database
        self._sessions_per_user = sessions_per_user
        self._clock = clock or (lambda: datetime.now(UTC))

    async def create_user(self, *, email: str, plan: str = Plan.FREE, role: str = "user") -> NewUser:
        """A user (`role` "user" or "admin") with an empty credit account and one API key. Raises
        `EmailTaken`."""
        plan = Plan(plan).value
        if role not in ("user", "admin"):
            raise ValueError(f"{role!r} is not a role (user or admin)")
        email = email.strip().lower()
        if "@" not in email or len(email) > 320:
            raise ValueError(f"{email!r} is not an e-mail address")
        key = generate_api_key()
        async with self._db.session() as session:
            user = await user_store.create_user(session, email=email, plan=plan, role=role)
            await credit_store.create_account(session, user_id=user.id)
            await user_store.add_api_key(
                session, user_id=user.id, key_hash=hash_api_key(key), prefix=display_prefix(key), name="first key"
            )
        return NewUser(user=user, api_key=key)

    async def create_key(self, *, email: str, name: str = "") -> str:
        """Another API key for an existing user. Raises `UnknownUser`."""
        user = await self.by_email(email)
        _, key = await self.add_key(user_id=user.id, name=name)
        return key

    async def add_key(self, *, user_id: str, name: str = "") -> tuple[ApiKeyRecord, str]:
        """A new API key for the user: its record and the key itself (shown once)."""
        key = generate_api_key()
        async with self._db.session() as session:
            key_id = await user_store.add_api_key(
                session, user_id=user_id, key_hash=hash_api_key(key), prefix=display_prefix(key), name=name[:100]
            )
            records = await user_store.list_keys(session, user_id=user_id)
        return next(record for record in records if record.id == key_id), key

    async def keys(self, *, user_id: str) -> list[ApiKeyRecord]:
        """The user's API keys, newest first, revoked ones included (never the keys themselves)."""
        async with self._db.session() as session:
            return await user_store.list_keys(session, user_id=user_id)

    async def revoke_key(self, *, user_id: str, key_id: str) -> bool:
        """Revoke one of the user's keys; the browser sessions made from it end at once. False if
        the user has no such active key."""
        async with self._db.session() as session:
            return await user_store.revoke_key(session, user_id=user_id, key_id=key_id, now=self._clock())

    async def identify(self, api_key: str) -> Identity | None:
        """The owner of an active key and the key's ID, or None (also when the owner is disabled)."""
        if not looks_like_api_key(api_key):
            return None
        async with self._db.session() as session:
            found = await user_store.owner_of_key(session, key_hash=hash_api_key(api_key))
            if found is None:
                return None
            user, key_id, last_used = found
            now = self._clock()
            if last_used is None or now - last_used > KEY_TOUCH_INTERVAL:
                await user_store.touch_key(session, key_id=key_id, now=now)
        return Identity(user, key_id)

    async def is_disabled(self, *, api_key: str | None = None, session_token: str | None = None) -> bool:
        """Whether a key (or an unexpired session) that identifies nobody belongs to a disabled user,
        so the refusal can say why."""
        async with self._db.session() as session:
            if api_key is not None and looks_like_api_key(api_key):
                return await user_store.key_of_disabled_user(session, key_hash=hash_api_key(api_key))
            if session_token is not None and 20 <= len(session_token) <= 200:
                return await user_store.session_of_disabled_user(
                    session, token_hash=hash_api_key(session_token), now=self._clock()
                )
        return False

    async def authenticate(self, api_key: str) -> UserRecord | None:
        """The owner of an active key, or None."""
        identity = await self.identify(api_key)
        return identity.user if identity else None

    async def by_email(self, email: str) -> UserRecord:
        """The user with this e-mail. Raises `UnknownUser`."""
        async with self._db.session() as session:
            user = await user_store.get_user_by_email(session, email=email.strip().lower())
        if user is None:
            raise UnknownUser(email)
        return user

    async def set_default_strategy(self, *, user_id: str, strategy: str | None) -> UserRecord:
        """Choose how the user's questions are answered unless a request says otherwise (None: the
        server's default). Raises `UnknownUser`."""
        async with self._db.session() as session:
            user = await user_store.set_default_strategy(session, user_id=user_id, strategy=strategy)
        if user is None:
            raise UnknownUser(user_id)
        return user

    async def has_users(self) -> bool:
        async with self._db.session() as session:
            return await user_store.has_users(session)

    async def open_session(self, *, user_id: str, ttl_s: float, api_key_id: str | None = None) -> str:
        """A new browser session for the user (made from `api_key_id`, if any); returns its token
        (for the cookie). Expired sessions are deleted; the user's oldest beyond the limit end."""
        token = secrets.token_urlsafe(32)
        now = self._clock()
        async with self._db.session() as session:
            await user_store.add_session(
                session,
                user_id=user_id,
                token_hash=hash_api_key(token),
                expires_at=now + timedelta(seconds=ttl_s),
                api_key_id=api_key_id,
                now=now,
                keep=self._sessions_per_user,
            )
        return token

    async def session_identity(self, token: str) -> Identity | None:
        """The owner of an unexpired session token (whose key, if any, is not revoked), or None (also
        when the owner is disabled)."""
        if not 20 <= len(token) <= 200:
            return None
        async with self._db.session() as session:
            found = await user_store.session_owner(session, token_hash=hash_api_key(token), now=self._clock())
        return Identity(*found) if found else None

    async def session_user(self, token: str) -> UserRecord | None:
        """The owner of an unexpired session token, or None."""
        identity = await self.session_identity(token)
        return identity.user if identity else None

    async def close_session(self, token: str) -> None:
        """End a browser session (unknown tokens are ignored)."""
        async with self._db.session() as session:
            await user_store.delete_session(session, token_hash=hash_api_key(token))

    async def purge_expired_sessions(self) -> int:
        """Delete every expired browser session; returns how many."""
        async with self._db.session() as session:
            return await user_store.delete_expired_sessions(session, now=self._clock())
