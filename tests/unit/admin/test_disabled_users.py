"""A disabled user is nobody: no key and no browser session of theirs identifies them, even a
session opened after they were disabled (the local sign-in link makes sessions without a key) —
but a refusal can tell their keys and sessions from unknown ones, to say why. Enabling them again
ends every session they had."""

from __future__ import annotations

from datetime import UTC, datetime

from almanac.auth.service import AccountService
from almanac.storage import admin_users
from almanac.storage.db import Database


async def test_keys_and_sessions_of_a_disabled_user_identify_nobody(database: Database) -> None:
    accounts = AccountService(database)
    created = await accounts.create_user(email="gone@example.com")
    before = await accounts.open_session(user_id=created.user.id, ttl_s=3600)
    async with database.session() as session:
        assert await admin_users.set_disabled(session, user_id=created.user.id, at=datetime.now(UTC))
    after = await accounts.open_session(user_id=created.user.id, ttl_s=3600)
    assert await accounts.identify(created.api_key) is None
    assert await accounts.session_identity(before) is None
    assert await accounts.session_identity(after) is None
    assert await accounts.is_disabled(api_key=created.api_key)
    assert await accounts.is_disabled(session_token=before) and await accounts.is_disabled(session_token=after)
    async with database.session() as session:
        assert await admin_users.set_disabled(session, user_id=created.user.id, at=None)
    identity = await accounts.identify(created.api_key)
    assert identity is not None and identity.user.disabled_at is None
    # Enabling again ends every session they had: none of them comes back.
    assert await accounts.session_identity(before) is None and await accounts.session_identity(after) is None
    assert not await accounts.is_disabled(session_token=before) and not await accounts.is_disabled(api_key="alm_x")
