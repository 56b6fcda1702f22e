"""Balance changes made by operators and purchases, inside the caller's transaction — so that the
ledger rows commit together with what caused them (a Stripe event's row, an audit entry).

Each change renews the account for today first, writes its ledger rows, and keeps the invariant
that each bucket's ledger sum equals its balance. Removals never take a bucket below zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from almanac.billing.entitlement import upgrade_top_up
from almanac.billing.ledger import DAILY, PACK, CreditService
from almanac.billing.plans import terms_for
from almanac.storage import adjustments as store
from almanac.storage import credits as credit_store
from almanac.storage.db import Session

BUCKETS = (DAILY, PACK)


@dataclass(frozen=True)
class Adjusted:
    """What an adjustment did: whether it happened, and the buckets afterwards."""

    done: bool
    daily: int
    pack: int


class CreditAdjustments:
    """Grants, removals and upgrade top-ups, each with its ledger rows, in the caller's session."""

    def __init__(self, credits: CreditService) -> None:
        self._credits = credits

    async def grant_in(
        self, session: Session, *, user_id: str, bucket: str, amount: int, reason: str, idem_key: str | None = None
    ) -> Adjusted:
        """Add `amount` to a bucket (`pack`: never expires; `daily`: today's allowance, expires
        tonight and does not count as spent). With `idem_key`, a second grant under the same key
        changes nothing (`done` False)."""
        _check(bucket, amount)
        period = await self._today(session, user_id=user_id)
        if idem_key is not None and await store.has_idem_key(session, key=idem_key):
            return await self._adjusted(session, user_id=user_id, done=False)
        await credit_store.credit(
            session,
            user_id=user_id,
            to_daily=amount if bucket == DAILY else 0,
            to_pack=amount if bucket == PACK else 0,
            month_given_back=0,
        )
        entry = credit_store.NewLedgerEntry(amount, bucket, "grant", reason, period, idem_key=idem_key)
        await credit_store.add_ledger_entries(session, user_id=user_id, entries=[entry])
        return await self._adjusted(session, user_id=user_id, done=True)

    async def remove_in(self, session: Session, *, user_id: str, bucket: str, amount: int, reason: str) -> Adjusted:
        """Take `amount` out of a bucket if it holds that much (`done` False, nothing changed, if not)."""
        _check(bucket, amount)
        period = await self._today(session, user_id=user_id)
        if not await store.take_from_bucket(session, user_id=user_id, bucket=bucket, amount=amount):
            return await self._adjusted(session, user_id=user_id, done=False)
        entry = credit_store.NewLedgerEntry(-amount, bucket, "remove", reason, period)
        await credit_store.add_ledger_entries(session, user_id=user_id, entries=[entry])
        return await self._adjusted(session, user_id=user_id, done=True)

    async def raise_allowance_in(self, session: Session, *, user_id: str, reason: str) -> int:
        """After a change to a plan with a larger allowance (the user's plan is already changed):
        top today's allowance up to the plan's (see `entitlement.upgrade_top_up`); returns the
        credits added. Calling it again the same day adds nothing."""
        period = await self._today(session, user_id=user_id)
        account = await credit_store.get_account(session, user_id=user_id)
        assert account is not None  # _today renewed it
        granted = await store.allowance_granted(session, user_id=user_id, period=period)
        top_up = upgrade_top_up(
            terms=terms_for(account.plan),
            granted_today=granted,
            daily_balance=account.daily_balance,
            month_used=account.month_used,
        )
        if top_up > 0:
            await credit_store.credit(session, user_id=user_id, to_daily=top_up, to_pack=0, month_given_back=0)
            entry = credit_store.NewLedgerEntry(top_up, DAILY, "allowance", reason, period)
            await credit_store.add_ledger_entries(session, user_id=user_id, entries=[entry])
        return top_up

    async def _today(self, session: Session, *, user_id: str) -> str:
        """Renew the account if a new UTC day began; today's period."""
        await self._credits.balance_in(session, user_id=user_id)
        account = await credit_store.get_account(session, user_id=user_id)
        assert account is not None
        return account.daily_period

    async def _adjusted(self, session: Session, *, user_id: str, done: bool) -> Adjusted:
        account = await credit_store.get_account(session, user_id=user_id)
        assert account is not None
        return Adjusted(done, account.daily_balance, account.pack_balance)


def _check(bucket: str, amount: int) -> None:
    if bucket not in BUCKETS:
        raise ValueError(f"unknown bucket {bucket!r} (daily or pack)")
    if amount <= 0:
        raise ValueError("the amount must be positive")
