"""Conversation storage on SQLite and PostgreSQL: owner scoping, query leases (take, renew, expire,
claim after a crash), and deletion that waits for a running query."""

from datetime import UTC, datetime, timedelta

from almanac.auth.service import AccountService
from almanac.storage import conversations as store
from almanac.storage.db import Database

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


async def owner(database: Database, email: str = "owner@example.com") -> str:
    return (await AccountService(database).create_user(email=email)).user.id


async def test_a_lease_is_exclusive_until_it_expires_and_renewing_moves_it(database: Database) -> None:
    user = await owner(database)
    async with database.session() as session:
        conversation = (await store.create_conversation(session, user_id=user, title="t")).id
        first = await store.begin_query(
            session,
            user_id=user,
            conversation_id=conversation,
            lock_token="a",
            now=NOW,
            lease_until=NOW + timedelta(seconds=30),
        )
        assert first == 1
        busy = await store.begin_query(
            session,
            user_id=user,
            conversation_id=conversation,
            lock_token="b",
            now=NOW,
            lease_until=NOW + timedelta(seconds=30),
        )
        assert busy is None
        assert await store.extend_lease(
            session, conversation_id=conversation, lock_token="a", lease_until=NOW + timedelta(seconds=60)
        )
        assert not await store.extend_lease(session, conversation_id=conversation, lock_token="b", lease_until=NOW)
        later = NOW + timedelta(seconds=45)  # past the first lease, within the renewed one
        assert (
            await store.begin_query(
                session, user_id=user, conversation_id=conversation, lock_token="b", now=later, lease_until=later
            )
            is None
        )
        assert await store.end_query(session, conversation_id=conversation, lock_token="a")
        second = await store.begin_query(
            session,
            user_id=user,
            conversation_id=conversation,
            lock_token="b",
            now=later,
            lease_until=later + timedelta(seconds=30),
        )
        assert second == 2


async def test_an_expired_lease_is_claimed_once_with_the_unfinished_query(database: Database) -> None:
    user = await owner(database)
    async with database.session() as session:
        conversation = (await store.create_conversation(session, user_id=user, title="t")).id
        await store.begin_query(
            session,
            user_id=user,
            conversation_id=conversation,
            lock_token="dead",
            now=NOW,
            lease_until=NOW + timedelta(seconds=30),
        )
        assert await store.claim_expired_lease(session, conversation_id=conversation, user_id=user, now=NOW) is None
        assert await store.expired_leases(session, now=NOW) == []
        later = NOW + timedelta(seconds=31)
        assert await store.expired_leases(session, now=later) == [conversation]
        assert (
            await store.claim_expired_lease(session, conversation_id=conversation, user_id="someone-else", now=later)
            is None
        )
        assert await store.claim_expired_lease(session, conversation_id=conversation, user_id=user, now=later) == (
            user,
            1,
        )
        assert await store.claim_expired_lease(session, conversation_id=conversation, user_id=None, now=later) is None
        assert await store.expired_leases(session, now=later) == []


async def test_deleting_waits_for_the_running_query_and_is_owner_scoped(database: Database) -> None:
    user = await owner(database)
    other = await owner(database, "other@example.com")
    async with database.session() as session:
        conversation = (await store.create_conversation(session, user_id=user, title="t")).id
        await store.begin_query(
            session,
            user_id=user,
            conversation_id=conversation,
            lock_token="a",
            now=NOW,
            lease_until=NOW + timedelta(seconds=30),
        )
        assert (
            await store.delete_conversation(session, user_id=other, conversation_id=conversation, now=NOW) == "missing"
        )
        assert await store.delete_conversation(session, user_id=user, conversation_id=conversation, now=NOW) == "busy"
        later = NOW + timedelta(seconds=31)  # its process died: the lease no longer protects it
        assert (
            await store.delete_conversation(session, user_id=user, conversation_id=conversation, now=later) == "deleted"
        )
        assert await store.get_conversation(session, user_id=user, conversation_id=conversation) is None
