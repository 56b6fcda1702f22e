"""Credit accounts and the append-only ledger.

Debits are one conditional `UPDATE … WHERE daily_balance + pack_balance >= :amount RETURNING`,
so concurrent requests can never overspend, on SQLite and PostgreSQL alike. The same statement
records how much came from the daily allowance (`last_debit_daily`), which the caller reads back
through RETURNING to write the ledger rows in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import case, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.records import AccountRecord, LedgerRecord
from almanac.storage.tables import CreditAccount, LedgerEntry, User, utcnow


@dataclass(frozen=True)
class DebitRow:
    """The account after a successful debit, and the debit's split between buckets."""

    from_daily: int
    from_pack: int
    daily_balance: int
    pack_balance: int


@dataclass(frozen=True)
class NewLedgerEntry:
    delta: int
    bucket: str
    kind: str
    reason: str
    period: str
    conversation_id: str | None = None
    query_id: str | None = None
    item_id: str | None = None
    idem_key: str | None = None  # unique: a second row with the same key fails the transaction


@dataclass(frozen=True)
class HeldCharge:
    """What a query's debits of one item still hold after its refunds, and from which day."""

    from_daily: int
    from_pack: int
    period: str


async def create_account(session: AsyncSession, *, user_id: str) -> None:
    """An empty account; the first use of a day grants the allowance."""
    session.add(CreditAccount(user_id=user_id))
    await session.flush()


async def get_account(session: AsyncSession, *, user_id: str) -> AccountRecord | None:
    """The user's account with their plan, or None."""
    row = (
        await session.execute(
            select(CreditAccount, User.plan)
            .join(User, User.id == CreditAccount.user_id)
            .where(CreditAccount.user_id == user_id)
        )
    ).one_or_none()
    if row is None:
        return None
    account, plan = row
    return AccountRecord(
        user_id=account.user_id,
        plan=plan,
        daily_balance=account.daily_balance,
        pack_balance=account.pack_balance,
        daily_period=account.daily_period,
        month_period=account.month_period,
        month_used=account.month_used,
    )


async def renew(
    session: AsyncSession,
    *,
    old: AccountRecord,
    daily_balance: int,
    daily_period: str,
    month_period: str,
    month_used: int,
) -> bool:
    """Move the account to a new day if it is still exactly as `old` (compare-and-set)."""
    result = await session.execute(
        update(CreditAccount)
        .where(
            CreditAccount.user_id == old.user_id,
            CreditAccount.daily_period == old.daily_period,
            CreditAccount.daily_balance == old.daily_balance,
            CreditAccount.month_period == old.month_period,
            CreditAccount.month_used == old.month_used,
        )
        .values(
            daily_balance=daily_balance,
            daily_period=daily_period,
            month_period=month_period,
            month_used=month_used,
        )
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def debit(session: AsyncSession, *, user_id: str, amount: int, period: str) -> DebitRow | None:
    """Take `amount` (daily allowance first, then packs) if the balance covers it and the account
    is on `period`; None otherwise. Atomic under concurrency."""
    from_daily = case((CreditAccount.daily_balance >= amount, amount), else_=CreditAccount.daily_balance)
    result = await session.execute(
        update(CreditAccount)
        .where(
            CreditAccount.user_id == user_id,
            CreditAccount.daily_period == period,
            CreditAccount.daily_balance + CreditAccount.pack_balance >= amount,
        )
        .values(
            daily_balance=CreditAccount.daily_balance - from_daily,
            pack_balance=CreditAccount.pack_balance - (amount - from_daily),
            month_used=CreditAccount.month_used + from_daily,
            last_debit_daily=from_daily,
        )
        .returning(CreditAccount.last_debit_daily, CreditAccount.daily_balance, CreditAccount.pack_balance)
    )
    row = result.one_or_none()
    if row is None:
        return None
    taken_daily, daily_balance, pack_balance = row
    return DebitRow(
        from_daily=taken_daily,
        from_pack=amount - taken_daily,
        daily_balance=daily_balance,
        pack_balance=pack_balance,
    )


async def credit(
    session: AsyncSession, *, user_id: str, to_daily: int, to_pack: int, month_given_back: int | None = None
) -> None:
    """Add credits back (refunds, grants). `month_given_back` (default: `to_daily`) is taken off the
    month's spent allowance, never below zero."""
    given_back = to_daily if month_given_back is None else month_given_back
    await session.execute(
        update(CreditAccount)
        .where(CreditAccount.user_id == user_id)
        .values(
            daily_balance=CreditAccount.daily_balance + to_daily,
            pack_balance=CreditAccount.pack_balance + to_pack,
            month_used=case((CreditAccount.month_used >= given_back, CreditAccount.month_used - given_back), else_=0),
        )
    )


async def add_ledger_entries(
    session: AsyncSession, *, user_id: str, entries: Sequence[NewLedgerEntry], keep_zero: bool = False
) -> None:
    """Append ledger rows (zero-delta entries are skipped unless `keep_zero`: a keyed refund of
    nothing still records its key)."""
    now = utcnow()
    rows = [
        {
            "user_id": user_id,
            "delta": entry.delta,
            "bucket": entry.bucket,
            "kind": entry.kind,
            "reason": entry.reason[:200],
            "period": entry.period,
            "conversation_id": entry.conversation_id,
            "query_id": entry.query_id,
            "item_id": entry.item_id,
            "idem_key": entry.idem_key,
            "created_at": now,
        }
        for entry in entries
        if entry.delta != 0 or (keep_zero and entry.idem_key)
    ]
    if rows:
        await session.execute(insert(LedgerEntry), rows)


async def held_by_query(
    session: AsyncSession, *, user_id: str, conversation_id: str, query_id: str
) -> dict[str | None, HeldCharge]:
    """Per charged item of a query (None: its base charge), what its debits still hold net of
    refunds and expiries, by bucket — only items still holding something."""
    rows = await session.execute(
        select(LedgerEntry.item_id, LedgerEntry.bucket, LedgerEntry.period, LedgerEntry.kind, LedgerEntry.delta).where(
            LedgerEntry.user_id == user_id,
            LedgerEntry.conversation_id == conversation_id,
            LedgerEntry.query_id == query_id,
            LedgerEntry.kind.in_(("debit", "refund")),
        )
    )
    held: dict[str | None, dict[str, int]] = {}
    periods: dict[str | None, str] = {}
    for item_id, bucket, period, kind, delta in rows.all():
        sums = held.setdefault(item_id, {"daily": 0, "pack": 0})
        sums[bucket] = sums.get(bucket, 0) - delta
        if kind == "debit":
            periods[item_id] = period
    return {
        item_id: HeldCharge(max(0, sums["daily"]), max(0, sums["pack"]), periods.get(item_id, ""))
        for item_id, sums in held.items()
        if sums["daily"] > 0 or sums["pack"] > 0
    }


async def ledger_sums(session: AsyncSession, *, user_id: str) -> dict[str, int]:
    """The sum of the user's ledger per bucket."""
    rows = await session.execute(
        select(LedgerEntry.bucket, func.coalesce(func.sum(LedgerEntry.delta), 0))
        .where(LedgerEntry.user_id == user_id)
        .group_by(LedgerEntry.bucket)
    )
    return {bucket: int(total) for bucket, total in rows.all()}


async def recent_ledger(session: AsyncSession, *, user_id: str, limit: int) -> list[LedgerRecord]:
    """The user's latest ledger rows, newest first."""
    rows = (
        await session.execute(
            select(LedgerEntry).where(LedgerEntry.user_id == user_id).order_by(LedgerEntry.id.desc()).limit(limit)
        )
    ).scalars()
    return [
        LedgerRecord(
            id=row.id,
            delta=row.delta,
            bucket=row.bucket,
            kind=row.kind,
            reason=row.reason,
            period=row.period,
            conversation_id=row.conversation_id,
            query_id=row.query_id,
            item_id=row.item_id,
            created_at=row.created_at,
        )
        for row in rows
    ]
