"""Users and their API keys."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.records import UserRecord
from almanac.storage.tables import ApiKey, User, WebSession, utcnow


class EmailTaken(Exception):
    """A user with this e-mail already exists."""


def _record(user: User) -> UserRecord:
    return UserRecord(id=user.id, email=user.email, plan=user.plan, created_at=user.created_at)


async def create_user(session: AsyncSession, *, email: str, plan: str) -> UserRecord:
    """Insert a user; raises `EmailTaken` if the e-mail is in use."""
    user = User(id=str(uuid.uuid4()), email=email, plan=plan, created_at=utcnow())
    session.add(user)
    try:
        await session.flush()
    except IntegrityError as exc:
        raise EmailTaken(email) from exc
    return _record(user)


async def get_user(session: AsyncSession, *, user_id: str) -> UserRecord | None:
    user = await session.get(User, user_id)
    return _record(user) if user else None


async def get_user_by_email(session: AsyncSession, *, email: str) -> UserRecord | None:
    user = (await session.execute(select(User).where(User.email == email))).scalar_one_or_none()
    return _record(user) if user else None


async def has_users(session: AsyncSession) -> bool:
    """True once any user exists."""
    return (await session.execute(select(User.id).limit(1))).first() is not None


async def set_plan(session: AsyncSession, *, user_id: str, plan: str) -> None:
    await session.execute(update(User).where(User.id == user_id).values(plan=plan))


async def add_api_key(session: AsyncSession, *, user_id: str, key_hash: str, prefix: str, name: str = "") -> str:
    """Store a key's hash for a user; returns the key's row ID."""
    key_id = str(uuid.uuid4())
    session.add(ApiKey(id=key_id, user_id=user_id, key_hash=key_hash, prefix=prefix, name=name))
    await session.flush()
    return key_id


async def user_for_key_hash(session: AsyncSession, *, key_hash: str) -> UserRecord | None:
    """The owner of an active (not revoked) key, or None."""
    row = (
        await session.execute(
            select(User)
            .join(ApiKey, ApiKey.user_id == User.id)
            .where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None))
        )
    ).scalar_one_or_none()
    return _record(row) if row else None


async def add_session(session: AsyncSession, *, user_id: str, token_hash: str, expires_at: datetime) -> None:
    """Store a browser session (by the hash of its token)."""
    session.add(WebSession(token_hash=token_hash, user_id=user_id, created_at=utcnow(), expires_at=expires_at))
    await session.flush()


async def user_for_session(session: AsyncSession, *, token_hash: str, now: datetime) -> UserRecord | None:
    """The owner of an unexpired session, or None."""
    row = (
        await session.execute(
            select(User)
            .join(WebSession, WebSession.user_id == User.id)
            .where(WebSession.token_hash == token_hash, WebSession.expires_at > now)
        )
    ).scalar_one_or_none()
    return _record(row) if row else None


async def delete_session(session: AsyncSession, *, token_hash: str) -> None:
    await session.execute(delete(WebSession).where(WebSession.token_hash == token_hash))
