"""Gateway usage: queued off the request path, written in batches, billed through the ledger
(on SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

from almanac.auth.service import AccountService
from almanac.billing.ledger import CreditService
from almanac.gateway.usage import UsageRecorder
from almanac.storage import gateway as store
from almanac.storage.db import Database
from almanac.storage.gateway import GatewayUsageRecord


def row(user_id: str, tokens_in: int = 600, tokens_out: int = 400, **extra: object) -> GatewayUsageRecord:
    values: dict[str, object] = {
        "user_id": user_id,
        "api_key_id": None,
        "model": "claude-sonnet-4-6",
        "upstream": "openai",
        "upstream_model": "gpt-4o",
        "stream": True,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "latency_ms": 12,
        "status": 200,
        "created_at": datetime.now(UTC),
    }
    values.update(extra)
    return GatewayUsageRecord(**values)  # type: ignore[arg-type]


async def test_rows_are_written_in_batches_in_the_background(database: Database) -> None:
    user = (await AccountService(database).create_user(email="u@example.com")).user
    recorder = UsageRecorder(database, flush_interval_s=0.01, batch_size=50)
    for n in range(120):
        recorder.record(row(user.id, tokens_in=n))
    await recorder.close()
    assert recorder.written == 120
    async with database.session() as session:
        rows = await store.recent_usage(session, user_id=user.id, limit=500)
        totals = await store.usage_totals(session, user_id=user.id)
    assert len(rows) == 120 and rows[0].input_tokens == 119
    assert totals == (120, sum(range(120)), 120 * 400)


async def test_rows_still_queued_at_shutdown_are_written_before_close_returns(database: Database) -> None:
    user = (await AccountService(database).create_user(email="s@example.com")).user
    recorder = UsageRecorder(database, flush_interval_s=3600, batch_size=500)  # no flush would come by itself
    for n in range(3):
        recorder.record(row(user.id, tokens_in=n))
    await asyncio.sleep(0)
    assert recorder.written == 0  # queued, not written: the request did not wait for the database
    await recorder.close()
    async with database.session() as session:
        assert len(await store.recent_usage(session, user_id=user.id)) == 3


async def test_planner_usage_is_kept_in_its_own_columns(database: Database) -> None:
    user = (await AccountService(database).create_user(email="p@example.com")).user
    recorder = UsageRecorder(database)
    recorder.record(
        row(
            user.id,
            planner_model="planner",
            planner_input_tokens=70,
            planner_output_tokens=7,
            boost_loops=2,
            boost_outcome="guided",
        )
    )
    await recorder.close()
    async with database.session() as session:
        [stored] = await store.recent_usage(session, user_id=user.id)
        totals = await store.usage_totals(session, user_id=user.id)
    assert (stored.planner_input_tokens, stored.boost_loops, stored.boost_outcome) == (70, 2, "guided")
    assert totals == (1, 670, 407)


async def test_billing_debits_per_user_and_never_below_zero(database: Database) -> None:
    accounts = AccountService(database)
    rich = (await accounts.create_user(email="rich@example.com")).user
    poor = (await accounts.create_user(email="poor@example.com")).user
    credits = CreditService(database)
    await credits.grant_pack(user_id=rich.id, amount=100, reason="test")
    start_rich = await credits.balance(user_id=rich.id)
    start_poor = await credits.balance(user_id=poor.id)
    recorder = UsageRecorder(database, credits=credits, credits_per_1k_tokens=2.5)
    recorder.record(row(rich.id))  # 1,000 tokens → 2.5
    recorder.record(row(rich.id, 300, 200))  # 500 → 1.25; 3.75 → 4 for the batch
    recorder.record(row(poor.id, 100_000, 0))  # 250 credits, more than a free day has
    await recorder.close()
    assert await credits.balance(user_id=rich.id) == start_rich - 4
    assert await credits.balance(user_id=poor.id) == 0
    assert sum((await credits.ledger_sums(user_id=poor.id)).values()) == 0 == start_poor - start_poor
    async with database.session() as session:
        rich_rows = await store.recent_usage(session, user_id=rich.id)
    assert sorted(r.credits for r in rich_rows) == [0, 4]


async def test_a_failed_write_is_logged_and_the_recorder_goes_on(database: Database) -> None:
    recorder = UsageRecorder(database)
    recorder.record(replace(row("no-such-user")))  # violates the foreign key on PostgreSQL and SQLite
    await recorder.flush()
    user = (await AccountService(database).create_user(email="later@example.com")).user
    recorder.record(row(user.id))
    await recorder.close()
    async with database.session() as session:
        assert len(await store.recent_usage(session, user_id=user.id)) == 1


async def test_one_bad_row_never_drops_the_rows_written_with_it(database: Database) -> None:
    """An attacker's request and a victim's land in one batch. Whatever the attacker's row holds —
    a NUL in the model name, or a user deleted while the request ran (the database refuses the
    row) — the victim's row is recorded."""
    accounts = AccountService(database)
    victim = (await accounts.create_user(email="victim@example.com")).user
    recorder = UsageRecorder(database, flush_interval_s=60, batch_size=500)
    recorder.record(row(victim.id, tokens_in=1, model="evil\x00model"))
    recorder.record(row("00000000-0000-0000-0000-00000000dead", tokens_in=2))  # no such user: refused
    recorder.record(row(victim.id, tokens_in=3))
    await recorder.close()
    async with database.session() as session:
        rows = await store.recent_usage(session, user_id=victim.id)
    assert sorted(r.input_tokens for r in rows) == [1, 3]
    assert {r.model for r in rows} == {"evil\ufffdmodel", "claude-sonnet-4-6"}
    assert recorder.written == 2
