"""Administration: users (search, plan, balances, ledger), credits granted or removed with a
reason, plans, disabling, roles, service-wide usage and the audit log. Anyone but an administrator
gets 404 here, as if these routes did not exist."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from almanac.admin.service import Actor, AdminConflict, AdminService, UnknownTarget
from almanac.api.deps import AdminUser, ServicesDep
from almanac.api.errors import ApiError
from almanac.api.responses import errors
from almanac.api.routes.billing import subscription_public
from almanac.api.routes.credits import PRICES
from almanac.api.routes.usage import USAGE_REFUSALS, FromDay, ToDay, day_range, usage_public, usage_service
from almanac.api.schemas import (
    NO_NUL_PATTERN,
    UUID_PATTERN,
    AdminUserDetail,
    AdminUserPublic,
    AdminUserRowPublic,
    AdminUsersPublic,
    AuditEntryPublic,
    AuditLogPublic,
    BucketsPublic,
    CreditAdjustmentCreate,
    CreditAdjustmentPublic,
    CreditsPublic,
    LedgerEntryPublic,
    Offset,
    PlanChangePublic,
    PlanUpdate,
    RoleUpdate,
    UsagePublic,
    UserStatusUpdate,
    UuidPath,
)
from almanac.billing.plans import Plan, terms_for
from almanac.services import Services
from almanac.storage.records import UserRecord
from almanac.usage.service import DayRange

router = APIRouter(prefix="/api/admin", tags=["admin"])
_NOT_ADMIN = "not found — or the caller is not an administrator (indistinguishable)"
Limit = Annotated[int, Query(ge=1, le=200, description="How many to return.")]


def _admin(services: Services) -> AdminService:
    assert services.admin is not None  # the composition root always builds it
    return services.admin


def _user_public(user: UserRecord) -> AdminUserPublic:
    return AdminUserPublic(
        id=user.id,
        email=user.email,
        plan=user.plan,
        role=user.role,  # type: ignore[arg-type]
        disabled=user.disabled_at is not None,
        disabled_at=user.disabled_at,
        created_at=user.created_at,
    )


def _unknown(user_id: str) -> ApiError:
    return ApiError(404, "user_not_found", f"no user {user_id}", field="user_id")


@router.get("/users", response_model=AdminUsersPublic, responses=errors(401, 404, 422, e404=_NOT_ADMIN))
async def list_users(
    _: AdminUser,
    services: ServicesDep,
    search: Annotated[
        str, Query(max_length=320, pattern=NO_NUL_PATTERN, description="Part of the e-mail address.")
    ] = "",
    limit: Limit = 50,
    offset: Offset = 0,
) -> AdminUsersPublic:
    """Users whose e-mail contains `search`, newest first, with their plan, role and balances."""
    rows, total = await _admin(services).users(search=search, limit=limit, offset=offset)
    return AdminUsersPublic(
        data=[
            AdminUserRowPublic(
                id=row.id,
                email=row.email,
                plan=row.plan,
                role=row.role,  # type: ignore[arg-type]
                disabled=row.disabled_at is not None,
                disabled_at=row.disabled_at,
                created_at=row.created_at,
                pack=row.pack_balance,
                daily=row.daily_balance,
                period=row.daily_period,
            )
            for row in rows
        ],
        count=total,
    )


@router.get("/users/{user_id}", response_model=AdminUserDetail, responses=errors(401, 404, 422, e404=_NOT_ADMIN))
async def get_user(
    user_id: UuidPath,
    admin: AdminUser,
    services: ServicesDep,
    recent: Annotated[int, Query(ge=0, le=200, description="How many ledger entries to show.")] = 50,
) -> AdminUserDetail:
    """One user: plan, balance by bucket, what is left today and this month, the latest ledger rows
    and the subscription. (Looking is recorded in the audit log.)"""
    try:
        detail = await _admin(services).user(Actor.of(admin), user_id=user_id, recent=recent)
    except UnknownTarget:
        raise _unknown(user_id) from None
    account = detail.credits.account
    terms = terms_for(account.plan)
    credits = CreditsPublic(
        plan=account.plan,
        balance=account.balance,
        buckets=BucketsPublic(daily=account.daily_balance, pack=account.pack_balance),
        daily_allowance=terms.daily_allowance,
        left_today=account.daily_balance,
        period=account.daily_period,
        monthly_cap=terms.monthly_cap,
        used_this_month=account.month_used,
        left_this_month=detail.credits.left_this_month,
        prices=PRICES,
        recent=[LedgerEntryPublic(**vars(row)) for row in detail.credits.recent],
    )
    return AdminUserDetail(
        user=_user_public(detail.user), credits=credits, subscription=subscription_public(detail.subscription)
    )


@router.post(
    "/users/{user_id}/credits",
    response_model=CreditAdjustmentPublic,
    responses=errors(401, 403, 404, 409, 422, e404=_NOT_ADMIN, e409="the bucket holds fewer credits than asked"),
)
async def adjust_credits(
    user_id: UuidPath, body: CreditAdjustmentCreate, admin: AdminUser, services: ServicesDep
) -> CreditAdjustmentPublic:
    """Grant credits to a bucket or remove them from it, with a reason; the ledger row names the
    administrator. A removal never takes a bucket below zero (409 instead)."""
    try:
        done = await _admin(services).adjust_credits(
            Actor.of(admin),
            user_id=user_id,
            action=body.action,
            bucket=body.bucket,
            amount=body.amount,
            reason=body.reason,
        )
    except UnknownTarget:
        raise _unknown(user_id) from None
    except AdminConflict as exc:
        raise ApiError(409, "not_enough_credits", str(exc), field="amount") from None
    return CreditAdjustmentPublic(
        balance=done.daily + done.pack, buckets=BucketsPublic(daily=done.daily, pack=done.pack)
    )


@router.put(
    "/users/{user_id}/plan",
    response_model=PlanChangePublic,
    responses=errors(401, 403, 404, 422, e404=_NOT_ADMIN),
)
async def change_plan(user_id: UuidPath, body: PlanUpdate, admin: AdminUser, services: ServicesDep) -> PlanChangePublic:
    """Put a user on a plan now: an upgrade raises today's allowance at once; after a downgrade the
    next UTC day renews with the new plan's allowance. (A Stripe subscription's later events set
    the plan again.)"""
    try:
        change = await _admin(services).change_plan(
            Actor.of(admin), user_id=user_id, plan=Plan(body.plan), reason=body.reason
        )
    except UnknownTarget:
        raise _unknown(user_id) from None
    return PlanChangePublic(previous_plan=change.old, plan=change.new, top_up=change.top_up)


@router.put(
    "/users/{user_id}/status",
    response_model=AdminUserPublic,
    responses=errors(401, 403, 404, 409, 422, e404=_NOT_ADMIN, e409="administrators cannot disable themselves"),
)
async def set_status(
    user_id: UuidPath, body: UserStatusUpdate, admin: AdminUser, services: ServicesDep
) -> AdminUserPublic:
    """Disable a user — every key and browser session of theirs stops working at once (on the
    gateway, /v1, at once in this process and within GATEWAY_KEY_CACHE_S in others) — or enable
    them again."""
    try:
        user = await _admin(services).set_disabled(
            Actor.of(admin), user_id=user_id, disabled=body.disabled, reason=body.reason
        )
    except UnknownTarget:
        raise _unknown(user_id) from None
    except AdminConflict as exc:
        raise ApiError(409, "cannot_disable_self", str(exc)) from None
    if services.gateway is not None:
        services.gateway.keys.forget_user(user.id)
    return _user_public(user)


@router.put(
    "/users/{user_id}/role",
    response_model=AdminUserPublic,
    responses=errors(401, 403, 404, 409, 422, e404=_NOT_ADMIN, e409="the last administrator keeps the role"),
)
async def set_role(user_id: UuidPath, body: RoleUpdate, admin: AdminUser, services: ServicesDep) -> AdminUserPublic:
    """Make a user an administrator, or an ordinary user again."""
    try:
        user = await _admin(services).set_role(Actor.of(admin), user_id=user_id, role=body.role)
    except UnknownTarget:
        raise _unknown(user_id) from None
    except AdminConflict as exc:
        raise ApiError(409, "last_admin", str(exc)) from None
    return _user_public(user)


@router.get(
    "/users/{user_id}/usage",
    response_model=UsagePublic,
    responses={**USAGE_REFUSALS, **errors(404, e404=_NOT_ADMIN + "; or no such user")},
)
async def get_user_usage(
    user_id: UuidPath, admin: AdminUser, services: ServicesDep, start: FromDay = None, end: ToDay = None
) -> UsagePublic:
    """One user's usage report (as they see it at GET /api/usage). (Looking is recorded in the
    audit log.)"""
    days = day_range(services, start, end)
    try:
        await _admin(services).viewed(Actor.of(admin), action="view_usage", user_id=user_id, details=_days(days))
    except UnknownTarget:
        raise _unknown(user_id) from None
    return usage_public(await usage_service(services).report(user_id=user_id, days=days))


@router.get("/usage", response_model=UsagePublic, responses={**USAGE_REFUSALS, **errors(404, e404=_NOT_ADMIN)})
async def get_service_usage(
    admin: AdminUser, services: ServicesDep, start: FromDay = None, end: ToDay = None
) -> UsagePublic:
    """The whole service's usage: credits per day and per tool, tokens per model, the questions that
    cost most (their starts: users' words), and the users who spent most. (Looking is recorded in
    the audit log.)"""
    days = day_range(services, start, end)
    await _admin(services).viewed(Actor.of(admin), action="view_service_usage", user_id=None, details=_days(days))
    return usage_public(await usage_service(services).report(user_id=None, days=days))


def _days(days: DayRange) -> dict[str, str]:
    return {"from": days.start.isoformat(), "to": days.end.isoformat()}


@router.get("/audit", response_model=AuditLogPublic, responses=errors(401, 404, 422, e404=_NOT_ADMIN))
async def get_audit(
    _: AdminUser,
    services: ServicesDep,
    user_id: Annotated[
        str | None, Query(pattern=UUID_PATTERN, max_length=36, description="Only entries about this user.")
    ] = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> AuditLogPublic:
    """Every administrator action, newest first: who, what, when, on whom, and the details."""
    entries, total = await _admin(services).audit(target_user_id=user_id, limit=limit, offset=offset)
    return AuditLogPublic(data=[AuditEntryPublic(**vars(entry)) for entry in entries], count=total)
