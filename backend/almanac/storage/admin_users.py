"""Users as an operator sees them: listing and search, roles, disabling."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.tables import CreditAccount, User, WebSession


@dataclass(frozen=True)
class UserRow:
    id: str
    email: str
    plan: str
    role: str
    disabled_at: datetime | None
    created_at: datetime
    daily_balance: int
    daily_period: str
    pack_balance: int


async def list_users(
    session: AsyncSession, *, search: str = "", limit: int = 50, offset: int = 0
) -> tuple[list[UserRow], int]:
    """Users whose e-mail contains `search` (case-insensitive; wildcards are literal), newest
    first, with their stored balances; and how many match."""
    condition = func.lower(User.email).contains(search.strip().lower(), autoescape=True) if search.strip() else None
    query = select(User, CreditAccount).outerjoin(CreditAccount, CreditAccount.user_id == User.id)
    count = select(func.count(User.id))
    if condition is not None:
        query, count = query.where(condition), count.where(condition)
    rows = await session.execute(query.order_by(User.created_at.desc(), User.id).limit(limit).offset(offset))
    total = int((await session.execute(count)).scalar_one())
    users = [
        UserRow(
            id=user.id,
            email=user.email,
            plan=user.plan,
            role=user.role,
            disabled_at=user.disabled_at,
            created_at=user.created_at,
            daily_balance=account.daily_balance if account is not None else 0,
            daily_period=account.daily_period if account is not None else "",
            pack_balance=account.pack_balance if account is not None else 0,
        )
        for user, account in rows.all()
    ]
    return users, total


async def set_role(session: AsyncSession, *, user_id: str, role: str) -> bool:
    """Give the user a role; False if there is no such user."""
    result = await session.execute(update(User).where(User.id == user_id).values(role=role))
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def set_disabled(session: AsyncSession, *, user_id: str, at: datetime | None) -> bool:
    """Disable the user from `at` (their keys and browser sessions stop working, see
    `users.owner_of_key` and `users.session_owner`; the sessions are kept only so that their owner
    can be told the account is disabled), or enable them again with None — which deletes every
    session they had, so none of them comes back. False if there is no such user."""
    result = await session.execute(update(User).where(User.id == user_id).values(disabled_at=at))
    if at is None:
        await session.execute(delete(WebSession).where(WebSession.user_id == user_id))
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def count_admins(session: AsyncSession) -> int:
    """How many enabled administrators there are."""
    found = await session.execute(select(func.count(User.id)).where(User.role == "admin", User.disabled_at.is_(None)))
    return int(found.scalar_one())
