"""Where credits and tokens went: aggregates over the ledger, chat model usage and gateway usage.

Spending is read from the ledger (the source of truth): a charge's `debit` rows minus its
`refund` rows, on the UTC day (`period`) the credits were taken. Tokens come from `model_usage`
(chat queries, written by each query's finish step) and `gateway_usage` (/v1/messages); calls
whose server reported no usage have estimated tokens, and each model's row says how many such
calls it includes (`estimated_calls`). Every
query takes an optional user: None means the whole service.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String, and_, case, cast, func, insert, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.tables import Conversation, GatewayUsage, HistoryItem, LedgerEntry, ModelUsage, User

SPENDING = ("debit", "refund")


@dataclass(frozen=True)
class NewModelUsage:
    user_id: str
    conversation_id: str
    query_id: str
    role: str
    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    created_at: datetime
    estimated_calls: int = 0


@dataclass(frozen=True)
class DaySpend:
    day: str
    daily: int
    pack: int


@dataclass(frozen=True)
class ItemSpend:
    """Spending on one kind of charge: a tool (`tool` its name), a question's base (`question`),
    the gateway (`gateway`), or tools of deleted conversations (`tool` None)."""

    kind: str  # tool | question | gateway
    tool: str | None
    calls: int
    credits: int


@dataclass(frozen=True)
class ModelTokens:
    source: str  # chat | gateway
    role: str  # chat | planner | helper (chat); request | planner (gateway)
    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    estimated_calls: int = 0  # of `calls`, those whose tokens were estimated (the server reported none)


@dataclass(frozen=True)
class QuerySpend:
    user_id: str
    email: str
    conversation_id: str
    query_id: str
    day: str
    credits: int
    title: str | None  # None: the conversation was deleted
    question: str | None


@dataclass(frozen=True)
class UserSpend:
    user_id: str
    email: str
    credits: int


async def add_model_usage(session: AsyncSession, *, rows: Sequence[NewModelUsage]) -> None:
    """Insert rows (one statement); a query's (role, model) pair may be recorded only once."""
    if rows:
        await session.execute(insert(ModelUsage), [dict(row.__dict__) for row in rows])


def _spending(user_id: str | None, start: str, end: str) -> list[Any]:
    conditions: list[Any] = [LedgerEntry.kind.in_(SPENDING), LedgerEntry.period >= start, LedgerEntry.period <= end]
    if user_id is not None:
        conditions.append(LedgerEntry.user_id == user_id)
    return conditions


async def spend_by_day(session: AsyncSession, *, user_id: str | None, start: str, end: str) -> list[DaySpend]:
    """Credits spent per UTC day from `start` to `end` (YYYY-MM-DD, inclusive), by bucket; days
    without spending are left out."""
    rows = await session.execute(
        select(LedgerEntry.period, LedgerEntry.bucket, func.sum(-LedgerEntry.delta))
        .where(*_spending(user_id, start, end))
        .group_by(LedgerEntry.period, LedgerEntry.bucket)
    )
    days: dict[str, dict[str, int]] = {}
    for period, bucket, total in rows.all():
        days.setdefault(period, {})[bucket] = int(total or 0)
    return [DaySpend(day, spent.get("daily", 0), spent.get("pack", 0)) for day, spent in sorted(days.items())]


async def spend_by_item(session: AsyncSession, *, user_id: str | None, start: str, end: str) -> list[ItemSpend]:
    """Credits and charged calls per tool (by the tool item's name), per question base, and for
    the gateway, most credits first."""
    kind = case(
        (LedgerEntry.conversation_id.is_(None), literal("gateway")),
        (LedgerEntry.item_id.is_(None), literal("question")),
        else_=literal("tool"),
    )
    charge = (
        cast(LedgerEntry.conversation_id, String)
        + literal(":")
        + func.coalesce(LedgerEntry.query_id, "")
        + literal(":")
        + func.coalesce(LedgerEntry.item_id, "")
    )
    calls = func.count(func.distinct(case((LedgerEntry.kind == "debit", charge), else_=None)))
    rows = await session.execute(
        select(kind, HistoryItem.tool_name, calls, func.sum(-LedgerEntry.delta))
        .select_from(LedgerEntry)
        .outerjoin(
            HistoryItem,
            and_(
                HistoryItem.conversation_id == LedgerEntry.conversation_id, HistoryItem.item_id == LedgerEntry.item_id
            ),
        )
        .where(*_spending(user_id, start, end))
        .group_by(kind, HistoryItem.tool_name)
    )
    found = [ItemSpend(k, name if k == "tool" else None, int(n or 0), int(c or 0)) for k, name, n, c in rows.all()]
    return sorted(found, key=lambda item: (-item.credits, item.kind, item.tool or ""))


async def top_queries(
    session: AsyncSession, *, user_id: str | None, start: str, end: str, limit: int
) -> list[QuerySpend]:
    """The chat queries that cost most (net of refunds), with their conversation's title and the
    question's first words when they still exist."""
    credits = func.sum(-LedgerEntry.delta)
    rows = (
        await session.execute(
            select(
                LedgerEntry.user_id,
                LedgerEntry.conversation_id,
                LedgerEntry.query_id,
                func.min(LedgerEntry.period),
                credits,
            )
            .where(
                *_spending(user_id, start, end),
                LedgerEntry.conversation_id.is_not(None),
                LedgerEntry.query_id.is_not(None),
            )
            .group_by(LedgerEntry.user_id, LedgerEntry.conversation_id, LedgerEntry.query_id)
            .having(credits > 0)
            .order_by(credits.desc(), func.min(LedgerEntry.id).desc())
            .limit(limit)
        )
    ).all()
    if not rows:
        return []
    conversation_ids = {row[1] for row in rows}
    titles = dict(
        (
            await session.execute(
                select(Conversation.id, Conversation.title).where(Conversation.id.in_(conversation_ids))
            )
        ).all()
    )
    questions = {
        (conversation_id, item_id): content
        for conversation_id, item_id, content in (
            await session.execute(
                select(
                    HistoryItem.conversation_id, HistoryItem.item_id, func.substr(HistoryItem.content, 1, 200)
                ).where(
                    HistoryItem.conversation_id.in_(conversation_ids),
                    HistoryItem.item_id.in_({row[2] for row in rows}),
                )
            )
        ).all()
    }
    emails = dict(
        (await session.execute(select(User.id, User.email).where(User.id.in_({row[0] for row in rows})))).all()
    )
    return [
        QuerySpend(
            user_id=owner,
            email=emails.get(owner, ""),
            conversation_id=str(conversation_id),
            query_id=str(query_id),
            day=day,
            credits=int(total),
            title=titles.get(str(conversation_id)),
            question=questions.get((str(conversation_id), str(query_id))),
        )
        for owner, conversation_id, query_id, day, total in rows
    ]


async def top_users(session: AsyncSession, *, start: str, end: str, limit: int) -> list[UserSpend]:
    """The users who spent most credits (the whole service)."""
    credits = func.sum(-LedgerEntry.delta)
    rows = await session.execute(
        select(LedgerEntry.user_id, User.email, credits)
        .join(User, User.id == LedgerEntry.user_id)
        .where(*_spending(None, start, end))
        .group_by(LedgerEntry.user_id, User.email)
        .having(credits > 0)
        .order_by(credits.desc(), User.email)
        .limit(limit)
    )
    return [UserSpend(user, email, int(total)) for user, email, total in rows.all()]


async def model_tokens(
    session: AsyncSession, *, user_id: str | None, since: datetime, until: datetime
) -> list[ModelTokens]:
    """Calls and tokens per model, for chat queries and gateway requests made in [since, until), and
    how many of those calls had estimated tokens."""
    chat = select(
        ModelUsage.role,
        ModelUsage.provider,
        ModelUsage.model,
        func.sum(ModelUsage.calls),
        func.sum(ModelUsage.input_tokens),
        func.sum(ModelUsage.output_tokens),
        func.sum(ModelUsage.estimated_calls),
    ).where(ModelUsage.created_at >= since, ModelUsage.created_at < until)
    gateway = select(
        GatewayUsage.upstream,
        GatewayUsage.upstream_model,
        func.count(GatewayUsage.id),
        func.sum(GatewayUsage.input_tokens),
        func.sum(GatewayUsage.output_tokens),
        func.sum(case((GatewayUsage.usage_estimated, 1), else_=0)),
    ).where(GatewayUsage.created_at >= since, GatewayUsage.created_at < until)
    planner = select(
        GatewayUsage.planner_model,
        func.count(GatewayUsage.id),
        func.sum(GatewayUsage.planner_input_tokens),
        func.sum(GatewayUsage.planner_output_tokens),
        func.sum(case((GatewayUsage.planner_usage_estimated, 1), else_=0)),
    ).where(GatewayUsage.created_at >= since, GatewayUsage.created_at < until, GatewayUsage.planner_model.is_not(None))
    if user_id is not None:
        chat = chat.where(ModelUsage.user_id == user_id)
        gateway = gateway.where(GatewayUsage.user_id == user_id)
        planner = planner.where(GatewayUsage.user_id == user_id)
    found = [
        ModelTokens("chat", role, provider, model, int(n or 0), int(i or 0), int(o or 0), int(e or 0))
        for role, provider, model, n, i, o, e in (
            await session.execute(chat.group_by(ModelUsage.role, ModelUsage.provider, ModelUsage.model))
        ).all()
    ]
    found += [
        ModelTokens("gateway", "request", upstream, model, int(n or 0), int(i or 0), int(o or 0), int(e or 0))
        for upstream, model, n, i, o, e in (
            await session.execute(gateway.group_by(GatewayUsage.upstream, GatewayUsage.upstream_model))
        ).all()
    ]
    found += [
        ModelTokens("gateway", "planner", "openai", str(model), int(n or 0), int(i or 0), int(o or 0), int(e or 0))
        for model, n, i, o, e in (await session.execute(planner.group_by(GatewayUsage.planner_model))).all()
    ]
    return sorted(found, key=lambda row: (-(row.input_tokens + row.output_tokens), row.source, row.model))
