"""Credit storage on SQLite and PostgreSQL: what a query's ledger rows still hold."""

from almanac.auth.service import AccountService
from almanac.storage import credits as store
from almanac.storage.db import Database


async def test_what_a_query_holds_is_its_debits_net_of_refunds_per_item(database: Database) -> None:
    user = (await AccountService(database).create_user(email="c@example.com")).user.id
    entries = [
        store.NewLedgerEntry(-5, "daily", "debit", "query", "2026-11-24", "c1", "q1", None),
        store.NewLedgerEntry(-2, "daily", "debit", "tool", "2026-11-24", "c1", "q1", "q1-t1"),
        store.NewLedgerEntry(-1, "daily", "debit", "tool", "2026-11-24", "c1", "q1", "q1-t2"),
        store.NewLedgerEntry(-1, "pack", "debit", "tool", "2026-11-24", "c1", "q1", "q1-t2"),
        store.NewLedgerEntry(2, "daily", "refund", "tool", "2026-11-24", "c1", "q1", "q1-t1"),
        store.NewLedgerEntry(-3, "daily", "debit", "tool", "2026-11-24", "c1", "q2", "q2-t1"),  # another query
        store.NewLedgerEntry(50, "daily", "allowance", "day", "2026-11-24"),
    ]
    async with database.session() as session:
        await store.add_ledger_entries(session, user_id=user, entries=entries)
        held = await store.held_by_query(session, user_id=user, conversation_id="c1", query_id="q1")
    assert held == {
        None: store.HeldCharge(5, 0, "2026-11-24"),
        "q1-t2": store.HeldCharge(1, 1, "2026-11-24"),
    }
