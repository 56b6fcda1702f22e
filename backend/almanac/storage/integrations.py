"""Users' integration tokens: one encrypted row per (user, integration). This module stores and
returns ciphertext only; encryption happens in `almanac.integrations`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.tables import IntegrationToken


@dataclass(frozen=True)
class StoredToken:
    """One stored token, still encrypted."""

    user_id: str
    integration: str
    ciphertext: bytes
    key_id: str
    masked: str
    created_at: datetime
    updated_at: datetime


def _record(row: IntegrationToken) -> StoredToken:
    return StoredToken(
        user_id=row.user_id,
        integration=row.integration,
        ciphertext=bytes(row.ciphertext),
        key_id=row.key_id,
        masked=row.masked,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def get_token(session: AsyncSession, *, user_id: str, integration: str) -> StoredToken | None:
    """The user's stored token for `integration`, or None."""
    row = await session.scalar(
        select(IntegrationToken)
        .where(IntegrationToken.user_id == user_id, IntegrationToken.integration == integration)
        .execution_options(populate_existing=True)
    )
    return _record(row) if row is not None else None


async def put_token(
    session: AsyncSession,
    *,
    user_id: str,
    integration: str,
    ciphertext: bytes,
    key_id: str,
    masked: str,
    now: datetime,
) -> StoredToken:
    """Store the user's token for `integration`, replacing any earlier one."""
    values = {"ciphertext": ciphertext, "key_id": key_id, "masked": masked, "updated_at": now}
    match = (IntegrationToken.user_id == user_id, IntegrationToken.integration == integration)
    replaced = await session.execute(update(IntegrationToken).where(*match).values(**values))
    if not replaced.rowcount:  # type: ignore[attr-defined]
        try:
            async with session.begin_nested():
                session.add(IntegrationToken(user_id=user_id, integration=integration, created_at=now, **values))
        except IntegrityError:  # another request stored one first: this one replaces it
            await session.execute(update(IntegrationToken).where(*match).values(**values))
    stored = await get_token(session, user_id=user_id, integration=integration)
    if stored is None:
        raise LookupError(f"no user {user_id}")
    return stored


async def delete_token(session: AsyncSession, *, user_id: str, integration: str) -> bool:
    """Remove the user's token for `integration`; False if there was none."""
    result = await session.execute(
        delete(IntegrationToken).where(IntegrationToken.user_id == user_id, IntegrationToken.integration == integration)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]
