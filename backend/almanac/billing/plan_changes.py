"""Changing a user's plan, inside the caller's transaction (a Stripe event's, an admin action's).

An upgrade takes effect at once: the plan changes and today's allowance is raised to the new
plan's (`CreditAdjustments.raise_allowance_in`). A downgrade changes the plan now and leaves
today's allowance as it is; the next UTC day renews with the new plan's allowance. (Stripe reports
a cancelled subscription's end only when the paid period is over, so that is when it arrives.)
"""

from __future__ import annotations

from dataclasses import dataclass

from almanac.billing.adjustments import CreditAdjustments
from almanac.billing.plans import Plan, terms_for
from almanac.storage import users as user_store
from almanac.storage.db import Session


@dataclass(frozen=True)
class PlanChange:
    old: str
    new: str
    top_up: int = 0  # credits added to today's allowance

    @property
    def changed(self) -> bool:
        return self.old != self.new


async def change_plan_in(
    session: Session, adjustments: CreditAdjustments, *, user_id: str, plan: Plan, reason: str
) -> PlanChange:
    """Put the user on `plan` (no change if they are on it already). Raises LookupError for an
    unknown user."""
    user = await user_store.get_user(session, user_id=user_id)
    if user is None:
        raise LookupError(user_id)
    if user.plan == plan.value:
        return PlanChange(user.plan, plan.value)
    await user_store.set_plan(session, user_id=user_id, plan=plan.value)
    top_up = 0
    if terms_for(plan).daily_allowance > terms_for(user.plan).daily_allowance:
        top_up = await adjustments.raise_allowance_in(session, user_id=user_id, reason=reason)
    return PlanChange(user.plan, plan.value, top_up)
