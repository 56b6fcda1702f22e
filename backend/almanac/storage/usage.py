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

from sqlalchemy import and_, case, func, insert, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from almanac.storage.tables import (
    Conversation,
    Discussion,
    GatewayUsage,
    HistoryItem,
    LedgerEntry,
    ModelUsage,
    User,
)

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
    """Spending on one kind of charge: a tool (`tool` its name; None when its debit was made before
    the range), a question's base (`question`), a discussion turn (`discussion`) or the gateway."""

    kind: str  # tool | question | discussion | gateway
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
    title: str | None  # None: the conversation (or discussion) was deleted
    question: str | None
    kind: str = "chat"  # chat: a chat question; discussion: a discussion's turn (`query_id` q3: turn 3)


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
    """Credits and charged calls per tool, per question base, per discussion turn and for the
    gateway, most credits first.

    A charge is named by its debit's ledger reason (`tool <name>`, `query`, `discussion turn`), so a
    tool keeps its name after its conversation (or discussion) is deleted; the gateway's rows have
    no conversation and each is a charge of its own."""
    charge = select(
        LedgerEntry.conversation_id.label("conversation_id"),
        LedgerEntry.item_id.label("item_id"),
        func.max(case((LedgerEntry.kind == "debit", LedgerEntry.reason), else_=None)).label("reason"),
        func.max(case((LedgerEntry.kind == "debit", 1), else_=0)).label("debited"),
        func.sum(-LedgerEntry.delta).label("credits"),
    ).where(*_spending(user_id, start, end))
    gateway_row = case((LedgerEntry.conversation_id.is_(None), LedgerEntry.id), else_=None)
    charges = charge.group_by(
        LedgerEntry.conversation_id, LedgerEntry.query_id, LedgerEntry.item_id, gateway_row
    ).subquery()
    kind = case(
        (charges.c.conversation_id.is_(None), literal("gateway")),
        (charges.c.item_id.is_not(None), literal("tool")),
        (charges.c.reason == DISCUSSION_TURN, literal("discussion")),
        else_=literal("question"),
    )
    rows = await session.execute(
        select(kind, charges.c.reason, func.sum(charges.c.debited), func.sum(charges.c.credits)).group_by(
            kind, charges.c.reason
        )
    )
    totals: dict[tuple[str, str | None], list[int]] = {}
    for k, reason, calls, credits in rows.all():
        name = _tool_name(reason) if k == "tool" else None
        total = totals.setdefault((k, name), [0, 0])
        total[0] += int(calls or 0)
        total[1] += int(credits or 0)
    found = [ItemSpend(k, name, calls, credits) for (k, name), (calls, credits) in totals.items()]
    return sorted(found, key=lambda item: (-item.credits, item.kind, item.tool or ""))


DISCUSSION_TURN = "discussion turn"  # the ledger reason of a discussion turn's price
_TOOL = "tool "  # a tool call's ledger reason: `tool <name>`


def _tool_name(reason: str | None) -> str | None:
    """The tool a debit's reason names (None when the debit is outside the range)."""
    return reason[len(_TOOL) :] if reason and reason.startswith(_TOOL) else None


async def top_queries(
    session: AsyncSession, *, user_id: str | None, start: str, end: str, limit: int
) -> list[QuerySpend]:
    """The chat queries and discussion turns that cost most (net of refunds), with their
    conversation's (or discussion's) title and the question's first words when they still exist."""
    credits = func.sum(-LedgerEntry.delta)
    base = func.max(
        case((and_(LedgerEntry.kind == "debit", LedgerEntry.item_id.is_(None)), LedgerEntry.reason), else_=None)
    )
    rows = (
        await session.execute(
            select(
                LedgerEntry.user_id,
                LedgerEntry.conversation_id,
                LedgerEntry.query_id,
                func.min(LedgerEntry.period),
                credits,
                base,
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
    titles.update(
        (
            await session.execute(select(Discussion.id, Discussion.title).where(Discussion.id.in_(conversation_ids)))
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
            kind="discussion" if reason and reason.startswith(DISCUSSION_TURN) else "chat",
        )
        for owner, conversation_id, query_id, day, total, reason in rows
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
