"""Balance changes that are not a query's: an operator's removal from one bucket, and the facts a
plan change needs (how much allowance today already granted, whether a keyed row exists).

Like every balance change, each one is paired by its caller with ledger rows in the same
transaction (`storage.credits.add_ledger_entries`).
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.tables import CreditAccount, LedgerEntry

_BALANCE = {"daily": CreditAccount.daily_balance, "pack": CreditAccount.pack_balance}


async def take_from_bucket(session: AsyncSession, *, user_id: str, bucket: str, amount: int) -> bool:
    """Take `amount` from one bucket if it holds that much (one conditional UPDATE); False otherwise.
    Unlike a query's debit this is not spending: the month's used allowance does not change."""
    column = _BALANCE[bucket]
    result = await session.execute(
        update(CreditAccount)
        .where(CreditAccount.user_id == user_id, column >= amount)
        .values({column.key: column - amount})
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def allowance_granted(session: AsyncSession, *, user_id: str, period: str) -> int:
    """The daily allowance granted for the UTC day `period` so far (renewal plus any upgrade top-up)."""
    total = await session.execute(
        select(func.coalesce(func.sum(LedgerEntry.delta), 0)).where(
            LedgerEntry.user_id == user_id,
            LedgerEntry.bucket == "daily",
            LedgerEntry.kind == "allowance",
            LedgerEntry.period == period,
        )
    )
    return int(total.scalar_one())


async def has_idem_key(session: AsyncSession, *, key: str) -> bool:
    """Whether a ledger row already carries this idempotency key."""
    found = await session.execute(select(LedgerEntry.id).where(LedgerEntry.idem_key == key).limit(1))
    return found.first() is not None
