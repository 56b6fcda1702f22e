"""Credits: lazy daily renewal, atomic debits, refunds and grants, each with its ledger rows.

Every change of a balance and its ledger rows commit in one transaction, so the sum of a user's
ledger per bucket (`daily`, `pack`) always equals the account's balances.

Refunds go back to the bucket and the day they were taken from. Credits taken from a day's
allowance that has since ended go back to that day (a `refund` row) and expire with it at once (an
`expire` row): today's allowance never grows above its size, and the month's use is only given back
within the same month. A refund may carry a key: the same key refunds once, however many processes
try (a dying run and the sweep that settles it after its death, say).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError

from almanac.billing.plans import day_period, renewal, terms_for
from almanac.storage import credits as store
from almanac.storage.db import Database, Session
from almanac.storage.records import AccountRecord, LedgerRecord

DAILY = "daily"
PACK = "pack"


class AccountMissing(Exception):
    """The user has no credit account."""


@dataclass(frozen=True)
class Charge:
    """A successful debit: how much, and from which buckets (needed to refund it exactly)."""

    amount: int
    from_daily: int
    from_pack: int
    balance_after: int
    period: str = ""  # the UTC day (YYYY-MM-DD) the credits were taken on


@dataclass(frozen=True)
class ChargeContext:
    """What a ledger row refers to."""

    reason: str
    conversation_id: str | None = None
    query_id: str | None = None
    item_id: str | None = None


@dataclass(frozen=True)
class CreditSnapshot:
    account: AccountRecord
    left_this_month: int | None
    recent: list[LedgerRecord] = field(default_factory=list)


class CreditService:
    """The only way balances change."""

    def __init__(self, database: Database, *, clock: Callable[[], datetime] | None = None) -> None:
        self._db = database
        self._clock = clock or (lambda: datetime.now(UTC))

    async def debit(self, *, user_id: str, amount: int, context: ChargeContext) -> Charge | None:
        """Take `amount` credits, or return None (and change nothing) if the balance is short."""
        return (await self.debit_many(user_id=user_id, items=[(amount, context)]))[0]

    async def debit_many(self, *, user_id: str, items: Sequence[tuple[int, ChargeContext]]) -> list[Charge | None]:
        """Debit several amounts in order, in one transaction; each is taken only if the balance
        still covers it (a refused one does not stop later, cheaper ones). When the balance covers
        them all — the usual case — one conditional UPDATE takes the total."""
        async with self._db.session() as session:
            return await self.debit_in(session, user_id=user_id, items=items)

    async def debit_in(
        self, session: Session, *, user_id: str, items: Sequence[tuple[int, ChargeContext]]
    ) -> list[Charge | None]:
        """`debit_many` inside the caller's transaction (its rollback undoes the debits)."""
        if any(amount <= 0 for amount, _ in items):
            raise ValueError("a debit must be positive")
        if not items:
            return []
        today = day_period(self._clock())
        total = await self._take(session, user_id=user_id, amount=sum(a for a, _ in items), today=today)
        if total is not None:
            charges: list[Charge | None] = list(_split(total, [amount for amount, _ in items], period=today))
        else:
            charges = [await self._take(session, user_id=user_id, amount=a, today=today) for a, _ in items]
        entries: list[store.NewLedgerEntry] = []
        for charge, (_, context) in zip(charges, items, strict=True):
            if charge is not None:
                entries += [
                    _entry(-charge.from_daily, DAILY, "debit", context, today),
                    _entry(-charge.from_pack, PACK, "debit", context, today),
                ]
        await store.add_ledger_entries(session, user_id=user_id, entries=entries)
        return charges

    async def _take(self, session: Session, *, user_id: str, amount: int, today: str) -> Charge | None:
        """One conditional debit (renewing the account first if a new day began)."""
        row = await store.debit(session, user_id=user_id, amount=amount, period=today)
        if row is None and await self._renewed(session, user_id=user_id, today=today):
            row = await store.debit(session, user_id=user_id, amount=amount, period=today)
        if row is None:
            return None
        return Charge(amount, row.from_daily, row.from_pack, row.daily_balance + row.pack_balance, today)

    async def _renewed(self, session: Session, *, user_id: str, today: str) -> bool:
        """Renew the account if it is still on an earlier day; True if that changed anything."""
        account = await store.get_account(session, user_id=user_id)
        if account is None:
            raise AccountMissing(user_id)
        if account.daily_period == today:
            return False
        await self._current_account(session, user_id=user_id)
        return True

    async def refund(self, *, user_id: str, charge: Charge, context: ChargeContext, key: str | None = None) -> bool:
        """Give a charge back to the buckets and the day it came from (see the module docstring).
        With `key`, a second refund under the same key changes nothing; returns whether this call
        refunded."""
        try:
            async with self._db.session() as session:
                await self._refund_in(session, user_id=user_id, charge=charge, context=context, key=key)
        except IntegrityError:
            if key is None:
                raise
            return False  # refunded before under this key
        return True

    async def _refund_in(
        self, session: Session, *, user_id: str, charge: Charge, context: ChargeContext, key: str | None
    ) -> None:
        account = await self._current_account(session, user_id=user_id)
        period = charge.period or account.daily_period
        same_day = period == account.daily_period
        same_month = period[:7] == account.month_period
        entries = [
            _entry(charge.from_pack, PACK, "refund", context, period),
            _entry(charge.from_daily, DAILY, "refund", context, period),
        ]
        if not same_day:  # that day's allowance has ended: what comes back to it expires with it
            expired = ChargeContext("refunded allowance of an ended day expired", *_refs(context))
            entries.append(_entry(-charge.from_daily, DAILY, "expire", expired, period))
        entries = [entry for entry in entries if entry.delta]
        if key is not None:
            marker = entries[0] if entries else _entry(0, PACK, "refund", context, period)
            entries = [replace(marker, idem_key=key), *entries[1:]]
        await store.add_ledger_entries(session, user_id=user_id, entries=entries, keep_zero=key is not None)
        await store.credit(
            session,
            user_id=user_id,
            to_daily=charge.from_daily if same_day else 0,
            to_pack=charge.from_pack,
            month_given_back=charge.from_daily if same_month else 0,
        )

    async def refund_remainder(self, *, user_id: str, conversation_id: str, query_id: str, reason: str) -> int:
        """Refund whatever a query's charges still hold (each charged item once, under the same keys
        a live run uses), from the ledger alone — for queries a dead process left unsettled.
        Returns the credits given back."""
        async with self._db.session() as session:
            held = await store.held_by_query(
                session, user_id=user_id, conversation_id=conversation_id, query_id=query_id
            )
        refunded = 0
        for item_id, charge in held.items():
            context = ChargeContext(reason, conversation_id, query_id, item_id)
            if await self.refund(
                user_id=user_id,
                charge=charge_of(charge),
                context=context,
                key=refund_key(conversation_id, query_id, item_id),
            ):
                refunded += charge.from_daily + charge.from_pack
        return refunded

    async def grant_pack(self, *, user_id: str, amount: int, reason: str) -> int:
        """Add never-expiring credits (a pack purchase or an operator's grant); returns the balance."""
        if amount <= 0:
            raise ValueError("a grant must be positive")
        async with self._db.session() as session:
            account = await self._current_account(session, user_id=user_id)
            await store.credit(session, user_id=user_id, to_daily=0, to_pack=amount)
            await store.add_ledger_entries(
                session,
                user_id=user_id,
                entries=[_entry(amount, PACK, "grant", ChargeContext(reason), account.daily_period)],
            )
            return account.balance + amount

    async def balance(self, *, user_id: str) -> int:
        """What the user can spend now (renewing the allowance if a new day began)."""
        async with self._db.session() as session:
            return await self.balance_in(session, user_id=user_id)

    async def balance_in(self, session: Session, *, user_id: str) -> int:
        """`balance` inside the caller's transaction."""
        return (await self._current_account(session, user_id=user_id)).balance

    async def snapshot(self, *, user_id: str, recent: int = 20) -> CreditSnapshot:
        """Balances by bucket, plan, what is left this month and the latest ledger rows."""
        async with self._db.session() as session:
            account = await self._current_account(session, user_id=user_id)
            rows = await store.recent_ledger(session, user_id=user_id, limit=recent)
        cap = terms_for(account.plan).monthly_cap
        left_month = None if cap is None else max(0, cap - account.month_used)
        return CreditSnapshot(account=account, left_this_month=left_month, recent=rows)

    async def ledger_sums(self, *, user_id: str) -> dict[str, int]:
        """The ledger's sum per bucket (for audits and tests of the invariant)."""
        async with self._db.session() as session:
            return await store.ledger_sums(session, user_id=user_id)

    async def _current_account(self, session: Session, *, user_id: str) -> AccountRecord:
        """The account, renewed first if the UTC day changed since its last use."""
        today = day_period(self._clock())
        for _ in range(20):
            account = await store.get_account(session, user_id=user_id)
            if account is None:
                raise AccountMissing(user_id)
            if account.daily_period == today:
                return account
            change = renewal(
                terms=terms_for(account.plan),
                daily_balance=account.daily_balance,
                month_used=account.month_used,
                last_month=account.month_period,
                now=self._clock(),
            )
            renewed = await store.renew(
                session,
                old=account,
                daily_balance=change.grant,
                daily_period=change.daily_period,
                month_period=change.month_period,
                month_used=change.month_used,
            )
            if renewed:
                context = ChargeContext(f"daily allowance {change.daily_period}")
                await store.add_ledger_entries(
                    session,
                    user_id=user_id,
                    entries=[
                        _entry(
                            -change.expire,
                            DAILY,
                            "expire",
                            ChargeContext("unused allowance expired"),
                            account.daily_period,
                        ),
                        _entry(change.grant, DAILY, "allowance", context, change.daily_period),
                    ],
                )
        raise RuntimeError("could not renew the credit account")  # pragma: no cover - contention bound


def refund_key(conversation_id: str | None, query_id: str | None, item_id: str | None) -> str:
    """The idempotency key of the refund of one charge of a query (`item_id` None: its base)."""
    return f"refund:{conversation_id}:{query_id}:{item_id or 'base'}"


def charge_of(held: store.HeldCharge) -> Charge:
    """A charge rebuilt from what the ledger says a query still holds."""
    return Charge(held.from_daily + held.from_pack, held.from_daily, held.from_pack, 0, held.period)


def _refs(context: ChargeContext) -> tuple[str | None, str | None, str | None]:
    return context.conversation_id, context.query_id, context.item_id


def _entry(delta: int, bucket: str, kind: str, context: ChargeContext, period: str) -> store.NewLedgerEntry:
    return store.NewLedgerEntry(
        delta=delta,
        bucket=bucket,
        kind=kind,
        reason=context.reason,
        period=period,
        conversation_id=context.conversation_id,
        query_id=context.query_id,
        item_id=context.item_id,
    )


def _split(total: Charge, amounts: Sequence[int], *, period: str) -> list[Charge]:
    """One debit of a total, attributed to its parts in order exactly as separate debits would be:
    the daily allowance pays the first parts, packs the rest."""
    daily_left = total.from_daily
    balance = total.balance_after + total.amount
    parts = []
    for amount in amounts:
        from_daily = min(daily_left, amount)
        daily_left -= from_daily
        balance -= amount
        parts.append(Charge(amount, from_daily, amount - from_daily, balance, period))
    return parts
