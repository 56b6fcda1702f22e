"""Users and their API keys."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.records import ApiKeyRecord, UserRecord
from almanac.storage.tables import ApiKey, User, WebSession, utcnow


class EmailTaken(Exception):
    """A user with this e-mail already exists."""


def _record(user: User) -> UserRecord:
    return UserRecord(
        id=user.id,
        email=user.email,
        plan=user.plan,
        created_at=user.created_at,
        default_strategy=user.default_strategy,
        role=user.role,
        disabled_at=user.disabled_at,
    )


async def set_default_strategy(session: AsyncSession, *, user_id: str, strategy: str | None) -> UserRecord | None:
    """Set (or, with None, clear) the user's default answering strategy; the updated user."""
    await session.execute(update(User).where(User.id == user_id).values(default_strategy=strategy))
    user = await session.get(User, user_id, populate_existing=True)
    return _record(user) if user is not None else None


async def create_user(session: AsyncSession, *, email: str, plan: str, role: str = "user") -> UserRecord:
    """Insert a user; raises `EmailTaken` if the e-mail is in use."""
    user = User(id=str(uuid.uuid4()), email=email, plan=plan, role=role, created_at=utcnow())
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


async def owner_of_key(session: AsyncSession, *, key_hash: str) -> tuple[UserRecord, str, datetime | None] | None:
    """The owner of an active (not revoked) key, the key's ID and when it was last used; or None (also
    when the owner is disabled)."""
    row = (
        await session.execute(
            select(User, ApiKey.id, ApiKey.last_used_at)
            .join(ApiKey, ApiKey.user_id == User.id)
            .where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None), User.disabled_at.is_(None))
        )
    ).one_or_none()
    if row is None:
        return None
    user, key_id, last_used = row
    return _record(user), key_id, last_used


async def key_of_disabled_user(session: AsyncSession, *, key_hash: str) -> bool:
    """Whether an active (not revoked) key belongs to a disabled user."""
    found = await session.execute(
        select(ApiKey.id)
        .join(User, ApiKey.user_id == User.id)
        .where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None), User.disabled_at.is_not(None))
    )
    return found.first() is not None


async def session_of_disabled_user(session: AsyncSession, *, token_hash: str, now: datetime) -> bool:
    """Whether an unexpired session belongs to a disabled user (such sessions are kept, unusable,
    until the user is enabled again or they expire, so their owner can be told why)."""
    found = await session.execute(
        select(WebSession.token_hash)
        .join(User, WebSession.user_id == User.id)
        .where(WebSession.token_hash == token_hash, WebSession.expires_at > now, User.disabled_at.is_not(None))
    )
    return found.first() is not None


async def user_for_key_hash(session: AsyncSession, *, key_hash: str) -> UserRecord | None:
    """The owner of an active (not revoked) key, or None."""
    found = await owner_of_key(session, key_hash=key_hash)
    return found[0] if found else None


async def touch_key(session: AsyncSession, *, key_id: str, now: datetime) -> None:
    """Record that a key was used."""
    await session.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=now))


async def list_keys(session: AsyncSession, *, user_id: str) -> list[ApiKeyRecord]:
    """The user's keys, newest first (revoked ones included)."""
    rows = (
        await session.execute(
            select(ApiKey).where(ApiKey.user_id == user_id).order_by(ApiKey.created_at.desc(), ApiKey.id)
        )
    ).scalars()
    return [
        ApiKeyRecord(
            id=row.id,
            name=row.name,
            prefix=row.prefix,
            created_at=row.created_at,
            last_used_at=row.last_used_at,
            revoked_at=row.revoked_at,
        )
        for row in rows
    ]


async def revoke_key(session: AsyncSession, *, user_id: str, key_id: str, now: datetime) -> bool:
    """Revoke one of the user's active keys and end the browser sessions made from it; False if the
    user has no such active key."""
    result = await session.execute(
        update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.user_id == user_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        return False
    await session.execute(delete(WebSession).where(WebSession.api_key_id == key_id))
    return True


async def add_session(
    session: AsyncSession,
    *,
    user_id: str,
    token_hash: str,
    expires_at: datetime,
    api_key_id: str | None,
    now: datetime,
    keep: int,
) -> None:
    """Store a browser session (by the hash of its token); expired sessions are deleted, and the
    user keeps at most `keep` sessions (the oldest end first)."""
    await session.execute(delete(WebSession).where(WebSession.expires_at <= now))
    session.add(
        WebSession(token_hash=token_hash, user_id=user_id, api_key_id=api_key_id, created_at=now, expires_at=expires_at)
    )
    await session.flush()
    surplus = (
        select(WebSession.token_hash)
        .where(WebSession.user_id == user_id)
        .order_by(WebSession.created_at.desc(), WebSession.token_hash)
        .offset(keep)
    )
    doomed = list((await session.execute(surplus)).scalars())
    if doomed:
        await session.execute(delete(WebSession).where(WebSession.token_hash.in_(doomed)))


async def session_owner(
    session: AsyncSession, *, token_hash: str, now: datetime
) -> tuple[UserRecord, str | None] | None:
    """The owner (not disabled) of an unexpired session whose key (if it was made from one) is not
    revoked, and that key's ID; or None."""
    row = (
        await session.execute(
            select(User, WebSession.api_key_id)
            .join(WebSession, WebSession.user_id == User.id)
            .outerjoin(ApiKey, ApiKey.id == WebSession.api_key_id)
            .where(
                WebSession.token_hash == token_hash,
                WebSession.expires_at > now,
                or_(WebSession.api_key_id.is_(None), ApiKey.revoked_at.is_(None)),
                User.disabled_at.is_(None),
            )
        )
    ).one_or_none()
    if row is None:
        return None
    user, key_id = row
    return _record(user), key_id


async def delete_session(session: AsyncSession, *, token_hash: str) -> None:
    await session.execute(delete(WebSession).where(WebSession.token_hash == token_hash))


async def delete_expired_sessions(session: AsyncSession, *, now: datetime) -> int:
    """Remove every expired session; returns how many."""
    result = await session.execute(delete(WebSession).where(WebSession.expires_at <= now))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
