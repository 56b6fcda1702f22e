"""Recording a chat query's model usage: once per query, role and model; never failing the query."""

from __future__ import annotations

from sqlalchemy import select

from almanac.auth.service import AccountService
from almanac.storage.db import Database
from almanac.storage.tables import ModelUsage
from almanac.usage.recording import ModelUse, record_query_usage


async def _rows(database: Database) -> list[tuple[str, str, int, int, int]]:
    async with database.session() as session:
        found = await session.execute(
            select(
                ModelUsage.role, ModelUsage.model, ModelUsage.calls, ModelUsage.input_tokens, ModelUsage.output_tokens
            ).order_by(ModelUsage.role)
        )
        return [tuple(row) for row in found.all()]  # type: ignore[misc]


async def test_a_query_is_recorded_once_with_its_uses_added_up(database: Database) -> None:
    user = (await AccountService(database).create_user(email="u@example.com")).user
    uses = [
        ModelUse("anthropic", "claude-haiku-4-5", 1000, 200),
        ModelUse("anthropic", "claude-haiku-4-5", 1500, 300),
        ModelUse("openai", "gpt-4o", 400, 80, role="planner"),
    ]
    record = dict(user_id=user.id, conversation_id="c-1", query_id="q1")
    assert await record_query_usage(database, **record, uses=uses) is True
    assert await record_query_usage(database, **record, uses=uses) is False  # a retried finish step
    assert await _rows(database) == [("chat", "claude-haiku-4-5", 2, 2500, 500), ("planner", "gpt-4o", 1, 400, 80)]


async def test_nothing_to_record_and_failures_never_raise(database: Database) -> None:
    assert await record_query_usage(database, user_id="u", conversation_id="c", query_id="q1", uses=[]) is False
    # an unknown user breaks the foreign key: logged, not raised
    unknown = dict(user_id="00000000-0000-4000-8000-000000000000", conversation_id="c", query_id="q1")
    assert await record_query_usage(database, **unknown, uses=[ModelUse("offline", "m", 1, 1)]) is False
    assert await _rows(database) == []
