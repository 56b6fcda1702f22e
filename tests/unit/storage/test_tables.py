"""Every text and JSON column stores any Python text, on SQLite and PostgreSQL: a NUL or a lone
UTF-16 surrogate — from a model, a tool or a client — comes back as U+FFFD instead of failing the
write (PostgreSQL) or poisoning every later read."""

from datetime import UTC, datetime

from sqlalchemy import select

from almanac.auth.service import AccountService
from almanac.storage import conversations as store
from almanac.storage.audit import add_entry
from almanac.storage.db import Database
from almanac.storage.gateway import GatewayUsageRecord, add_usage, recent_usage
from almanac.storage.records import ItemRecord
from almanac.storage.tables import AuditEntry
from almanac.text.clean import REPLACEMENT as R

DIRTY = "a\x00b\ud800c\udfff"
CLEANED = f"a{R}b{R}c{R}"


async def test_history_items_store_nul_and_lone_surrogates_anywhere(database: Database) -> None:
    user = (await AccountService(database).create_user(email="dirty@example.com")).user.id
    async with database.session() as session:
        conversation = (await store.create_conversation(session, user_id=user, title=DIRTY)).id
        await store.add_items(
            session,
            conversation_id=conversation,
            items=[
                ItemRecord("q1", 1, "query", DIRTY),
                ItemRecord(
                    "q1-t1",
                    1,
                    "tool_result",
                    f"output {DIRTY}",
                    tool_name=f"tool{DIRTY}",
                    tool_input={"id": "\ud800", f"key{DIRTY}": [DIRTY, {"deep": "\x00"}], "n": 1},
                    tool_use_id=f"toolu_{DIRTY}",
                ),
            ],
        )
    async with database.session() as session:
        items = await store.list_items(session, user_id=user, conversation_id=conversation)
        title = (await store.get_conversation(session, user_id=user, conversation_id=conversation)).title  # type: ignore[union-attr]
    assert title == CLEANED
    query, result = items
    assert query.content == CLEANED
    assert result.content == f"output {CLEANED}" and result.tool_name == f"tool{CLEANED}"
    assert result.tool_input == {"id": R, f"key{CLEANED}": [CLEANED, {"deep": R}], "n": 1}
    assert result.tool_use_id == f"toolu_{CLEANED}"


async def test_other_tables_are_cleaned_too(database: Database) -> None:
    user = (await AccountService(database).create_user(email="dirty2@example.com")).user.id
    row = GatewayUsageRecord(
        user_id=user,
        api_key_id=None,
        model=f"evil{DIRTY}",
        upstream="offline",
        upstream_model="m",
        stream=False,
        input_tokens=1,
        output_tokens=1,
        latency_ms=1,
        status=200,
        created_at=datetime.now(UTC),
    )
    async with database.session() as session:
        await add_usage(session, rows=[row])
        await add_entry(
            session,
            actor_id=user,
            actor_email="dirty2@example.com",
            action="grant_credits",
            target_user_id=user,
            target_email="dirty2@example.com",
            details={"reason": DIRTY},
        )
    async with database.session() as session:
        [stored] = await recent_usage(session, user_id=user)
        details = (await session.execute(select(AuditEntry.details))).scalar_one()
    assert stored.model == f"evil{CLEANED}"
    assert details == {"reason": CLEANED}
