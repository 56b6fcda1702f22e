"""What administrators can do, each change recorded in the audit log in its own transaction.

Errors by audience: `UnknownTarget` (no such user: 404), `AdminConflict` (the change cannot be
made as asked — removing more credits than a bucket holds, disabling yourself, taking the role
from the last administrator: 409). Credits granted or removed are ledger rows whose reason names
the administrator; the audit log says who did what to whom, when, and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from almanac.billing.adjustments import Adjusted, CreditAdjustments
from almanac.billing.ledger import CreditService, CreditSnapshot
from almanac.billing.plan_changes import PlanChange, change_plan_in
from almanac.billing.plans import Plan
from almanac.storage import admin_users as store
from almanac.storage import audit as audit_store
from almanac.storage import billing_events as billing_store
from almanac.storage import users as user_store
from almanac.storage.audit import AuditRecord
from almanac.storage.billing_events import SubscriptionRecord
from almanac.storage.db import Database, Session
from almanac.storage.records import UserRecord

CLI_ACTOR = ("cli", "(command line)")
VIEW_REPEAT_S = 600  # a repeated look at the same thing by the same administrator within this is not recorded again


class UnknownTarget(LookupError):
    """No user has this ID."""


class AdminConflict(Exception):
    """The change cannot be made as asked; the message says why."""


@dataclass(frozen=True)
class Actor:
    """Who acts: an administrator (their ID and e-mail), or the command line."""

    id: str
    email: str

    @classmethod
    def of(cls, user: UserRecord) -> Actor:
        return cls(user.id, user.email)


@dataclass(frozen=True)
class UserDetail:
    user: UserRecord
    credits: CreditSnapshot
    subscription: SubscriptionRecord | None


class AdminService:
    def __init__(
        self,
        database: Database,
        credits: CreditService,
        adjustments: CreditAdjustments,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._db = database
        self._credits = credits
        self._adjustments = adjustments
        self._clock = clock or (lambda: datetime.now(UTC))

    async def users(self, *, search: str = "", limit: int = 50, offset: int = 0) -> tuple[list[store.UserRow], int]:
        """Users whose e-mail contains `search`, newest first, and how many match."""
        async with self._db.session() as session:
            return await store.list_users(session, search=search, limit=limit, offset=offset)

    async def user(self, actor: Actor, *, user_id: str, recent: int = 50) -> UserDetail:
        """One user's plan, balances by bucket and latest ledger rows (looking is recorded too)."""
        async with self._db.session() as session:
            user = await self._target(session, user_id)
            subscriptions = await billing_store.subscriptions_of(session, user_id=user_id)
            await self._looked(session, actor, "view_user", user, {})
        snapshot = await self._credits.snapshot(user_id=user_id, recent=recent)
        return UserDetail(user, snapshot, subscriptions[0] if subscriptions else None)

    async def adjust_credits(
        self,
        actor: Actor,
        *,
        user_id: str,
        action: Literal["grant", "remove"],
        bucket: str,
        amount: int,
        reason: str,
    ) -> Adjusted:
        """Grant credits to, or remove them from, one bucket; the ledger row's reason names the
        administrator. Removing more than the bucket holds changes nothing (`AdminConflict`)."""
        why = f"{reason.strip()} (by admin {actor.email})"
        async with self._db.session() as session:
            user = await self._target(session, user_id)
            if action == "grant":
                done = await self._adjustments.grant_in(
                    session, user_id=user_id, bucket=bucket, amount=amount, reason=why
                )
            else:
                done = await self._adjustments.remove_in(
                    session, user_id=user_id, bucket=bucket, amount=amount, reason=why
                )
            if not done.done:
                raise AdminConflict(f"the {bucket} bucket holds fewer than {amount} credits")
            details = {
                "bucket": bucket,
                "amount": amount,
                "reason": reason.strip(),
                "daily": done.daily,
                "pack": done.pack,
            }
            await self._audit(session, actor, f"{action}_credits", user, details)
        return done

    async def change_plan(self, actor: Actor, *, user_id: str, plan: Plan, reason: str) -> PlanChange:
        """Put a user on a plan now (an upgrade raises today's allowance at once)."""
        async with self._db.session() as session:
            user = await self._target(session, user_id)
            change = await change_plan_in(
                session,
                self._adjustments,
                user_id=user_id,
                plan=plan,
                reason=f"plan set to {plan} by admin {actor.email}",
            )
            details = {"from": change.old, "to": change.new, "top_up": change.top_up, "reason": reason.strip()}
            await self._audit(session, actor, "change_plan", user, details)
        return change

    async def set_disabled(self, actor: Actor, *, user_id: str, disabled: bool, reason: str) -> UserRecord:
        """Disable a user (their keys and browser sessions stop working at once) or enable them."""
        if disabled and actor.id == user_id:
            raise AdminConflict("administrators cannot disable themselves")
        async with self._db.session() as session:
            user = await self._target(session, user_id)
            await store.set_disabled(session, user_id=user_id, at=self._clock() if disabled else None)
            action = "disable_user" if disabled else "enable_user"
            await self._audit(session, actor, action, user, {"reason": reason.strip()})
            updated = await user_store.get_user(session, user_id=user_id)
        assert updated is not None
        return updated

    async def set_role(self, actor: Actor, *, user_id: str, role: Literal["user", "admin"]) -> UserRecord:
        """Make a user an administrator, or an ordinary user again (never the last administrator)."""
        async with self._db.session() as session:
            user = await self._target(session, user_id)
            if user.role == "admin" and role != "admin" and await store.count_admins(session) <= 1:
                raise AdminConflict("this is the last administrator")
            await store.set_role(session, user_id=user_id, role=role)
            if user.role != role:
                await self._audit(session, actor, "set_role", user, {"from": user.role, "to": role})
            updated = await user_store.get_user(session, user_id=user_id)
        assert updated is not None
        return updated

    async def viewed(self, actor: Actor, *, action: str, user_id: str | None, details: dict[str, Any]) -> None:
        """Record a look at one user's data (`user_id`; `UnknownTarget` if there is no such user) or
        at the whole service's (None) — see `_looked`."""
        async with self._db.session() as session:
            user = await self._target(session, user_id) if user_id is not None else None
            await self._looked(session, actor, action, user, details)

    async def audit(
        self, *, target_user_id: str | None = None, limit: int = 50, offset: int = 0
    ) -> tuple[list[AuditRecord], int]:
        """The audit log, newest first (only entries about one user, if given)."""
        async with self._db.session() as session:
            return await audit_store.entries(session, target_user_id=target_user_id, limit=limit, offset=offset)

    async def record(self, actor: Actor, *, action: str, target: UserRecord | None, details: dict[str, Any]) -> None:
        """Record an action taken elsewhere (say, a role given on the command line)."""
        async with self._db.session() as session:
            await self._audit(session, actor, action, target, details)

    async def _target(self, session: Session, user_id: str) -> UserRecord:
        user = await user_store.get_user(session, user_id=user_id)
        if user is None:
            raise UnknownTarget(user_id)
        return user

    async def _looked(
        self, session: Session, actor: Actor, action: str, target: UserRecord | None, details: dict[str, Any]
    ) -> None:
        """Record a look (not a change): once per administrator, kind of look and target within
        `VIEW_REPEAT_S`, so reloading a page — as the UI does after every change — does not bury the
        changes under identical rows. List and search pages are not recorded at all."""
        since = self._clock() - timedelta(seconds=VIEW_REPEAT_S)
        target_id = target.id if target is not None else None
        if not await audit_store.has_entry_since(
            session, actor_id=actor.id, action=action, target_user_id=target_id, since=since
        ):
            await self._audit(session, actor, action, target, details)

    async def _audit(
        self, session: Session, actor: Actor, action: str, target: UserRecord | None, details: dict[str, Any]
    ) -> None:
        await audit_store.add_entry(
            session,
            actor_id=actor.id,
            actor_email=actor.email,
            action=action,
            target_user_id=target.id if target else None,
            target_email=target.email if target else None,
            details=details,
            at=self._clock(),
        )
