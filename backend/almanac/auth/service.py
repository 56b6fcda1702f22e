"""Accounts: creating users (with their credit account and first API key) and authenticating keys."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from almanac.auth.keys import display_prefix, generate_api_key, hash_api_key, looks_like_api_key
from almanac.billing.plans import Plan
from almanac.storage import credits as credit_store
from almanac.storage import users as user_store
from almanac.storage.db import Database
from almanac.storage.records import UserRecord
from almanac.storage.users import EmailTaken

__all__ = ["AccountService", "EmailTaken", "NewUser", "UnknownUser"]


class UnknownUser(Exception):
    """No user has this e-mail."""


@dataclass(frozen=True)
class NewUser:
    user: UserRecord
    api_key: str  # shown once; only its hash is stored


class AccountService:
    def __init__(self, database: Database) -> None:
        self._db = database

    async def create_user(self, *, email: str, plan: str = Plan.FREE) -> NewUser:
        """A user with an empty credit account and one API key. Raises `EmailTaken`."""
        plan = Plan(plan).value
        email = email.strip().lower()
        if "@" not in email or len(email) > 320:
            raise ValueError(f"{email!r} is not an e-mail address")
        key = generate_api_key()
        async with self._db.session() as session:
            user = await user_store.create_user(session, email=email, plan=plan)
            await credit_store.create_account(session, user_id=user.id)
            await user_store.add_api_key(
                session, user_id=user.id, key_hash=hash_api_key(key), prefix=display_prefix(key), name="first key"
            )
        return NewUser(user=user, api_key=key)

    async def create_key(self, *, email: str, name: str = "") -> str:
        """Another API key for an existing user. Raises `UnknownUser`."""
        key = generate_api_key()
        async with self._db.session() as session:
            user = await user_store.get_user_by_email(session, email=email.strip().lower())
            if user is None:
                raise UnknownUser(email)
            await user_store.add_api_key(
                session, user_id=user.id, key_hash=hash_api_key(key), prefix=display_prefix(key), name=name
            )
        return key

    async def authenticate(self, api_key: str) -> UserRecord | None:
        """The owner of an active key, or None."""
        if not looks_like_api_key(api_key):
            return None
        async with self._db.session() as session:
            return await user_store.user_for_key_hash(session, key_hash=hash_api_key(api_key))

    async def by_email(self, email: str) -> UserRecord:
        """The user with this e-mail. Raises `UnknownUser`."""
        async with self._db.session() as session:
            user = await user_store.get_user_by_email(session, email=email.strip().lower())
        if user is None:
            raise UnknownUser(email)
        return user

    async def has_users(self) -> bool:
        async with self._db.session() as session:
            return await user_store.has_users(session)

    async def open_session(self, *, user_id: str, ttl_s: float) -> str:
        """A new browser session for the user; returns its token (for the cookie)."""
        token = secrets.token_urlsafe(32)
        expires = datetime.now(UTC) + timedelta(seconds=ttl_s)
        async with self._db.session() as session:
            await user_store.add_session(session, user_id=user_id, token_hash=hash_api_key(token), expires_at=expires)
        return token

    async def session_user(self, token: str) -> UserRecord | None:
        """The owner of an unexpired session token, or None."""
        if not 20 <= len(token) <= 200:
            return None
        async with self._db.session() as session:
            return await user_store.user_for_session(session, token_hash=hash_api_key(token), now=datetime.now(UTC))

    async def close_session(self, token: str) -> None:
        """End a browser session (unknown tokens are ignored)."""
        async with self._db.session() as session:
            await user_store.delete_session(session, token_hash=hash_api_key(token))
