"""The token vault on both databases: tokens round-trip, are encrypted at rest (the stored row
never holds the token or a recognisable part of it), are shown masked, replaced, removed, kept
per user, and become unusable (not leaked) under another key."""

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from almanac.auth.service import AccountService
from almanac.integrations import MalformedToken, TokensDisabled, TokenVault
from almanac.integrations.secret_key import SecretKey
from almanac.storage.db import Database

ALICE_TOKEN = "ghp_" + "Al1ceT0ken" * 3 + "Zq9x8w"
BOB_TOKEN = "github_pat_" + "B0bsT0ken_" * 8 + "k7"
NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def vault(database: Database, secret: str | None = "k" * 40) -> TokenVault:
    return TokenVault(
        database, load_key=lambda: SecretKey(secret, "test", "" if secret else "no key"), clock=lambda: NOW
    )


async def user(database: Database) -> str:
    created = await AccountService(database).create_user(email=f"u-{uuid.uuid4().hex[:8]}@example.com")
    return created.user.id


async def raw_rows(database: Database) -> list[tuple[object, ...]]:
    async with database.session() as session:
        rows = await session.execute(text("SELECT * FROM integration_tokens"))
        return [tuple(row) for row in rows]


async def test_a_token_round_trips_encrypted_at_rest(database: Database) -> None:
    tokens = vault(database)
    alice = await user(database)
    status = await tokens.connect(user_id=alice, integration="github", token=f" {ALICE_TOKEN}\n")
    assert (status.connected, status.masked, status.updated_at) == (True, f"ghp_…{ALICE_TOKEN[-4:]}", NOW)
    assert await tokens.token(user_id=alice, integration="github") == ALICE_TOKEN
    assert await tokens.status(user_id=alice, integration="github") == status
    (row,) = await raw_rows(database)
    stored = b"".join(value if isinstance(value, bytes) else str(value).encode() for value in row)
    for part in (ALICE_TOKEN, ALICE_TOKEN[4:], ALICE_TOKEN[4:14], ALICE_TOKEN[10:20]):
        assert part.encode() not in stored, part


async def test_each_user_has_their_own_token_and_replacing_or_removing_it_works(database: Database) -> None:
    tokens = vault(database)
    alice, bob = await user(database), await user(database)
    await tokens.connect(user_id=alice, integration="github", token=ALICE_TOKEN)
    assert await tokens.token(user_id=bob, integration="github") is None
    assert (await tokens.status(user_id=bob, integration="github")).connected is False
    await tokens.connect(user_id=bob, integration="github", token=BOB_TOKEN)
    await tokens.connect(user_id=alice, integration="github", token=BOB_TOKEN)  # replaced, not added
    assert len(await raw_rows(database)) == 2
    assert await tokens.token(user_id=alice, integration="github") == BOB_TOKEN
    assert await tokens.disconnect(user_id=alice, integration="github") is True
    assert await tokens.disconnect(user_id=alice, integration="github") is False
    assert await tokens.token(user_id=alice, integration="github") is None
    assert await tokens.token(user_id=bob, integration="github") == BOB_TOKEN


async def test_a_token_written_under_another_key_is_not_connected_and_not_used(database: Database) -> None:
    alice = await user(database)
    await vault(database, "k" * 40).connect(user_id=alice, integration="github", token=ALICE_TOKEN)
    other = vault(database, "n" * 40)
    assert (await other.status(user_id=alice, integration="github")).connected is False
    assert await other.token(user_id=alice, integration="github") is None
    await other.connect(user_id=alice, integration="github", token=BOB_TOKEN)  # reconnecting repairs it
    assert await other.token(user_id=alice, integration="github") == BOB_TOKEN


async def test_malformed_tokens_and_a_vault_without_a_key_are_refused(database: Database) -> None:
    alice = await user(database)
    with pytest.raises(MalformedToken):
        await vault(database).connect(user_id=alice, integration="github", token="ghp_short")
    off = vault(database, None)
    assert (await off.start()).problem == "no key" and off.enabled is False and off.problem == "no key"
    with pytest.raises(TokensDisabled, match="no key"):
        await off.connect(user_id=alice, integration="github", token=ALICE_TOKEN)
    assert await off.token(user_id=alice, integration="github") is None
    assert await raw_rows(database) == []
    with pytest.raises(KeyError):
        await vault(database).status(user_id=alice, integration="gitlab")


async def test_deleting_a_user_deletes_their_tokens(database: Database) -> None:
    tokens = vault(database)
    alice = await user(database)
    await tokens.connect(user_id=alice, integration="github", token=ALICE_TOKEN)
    async with database.session() as session:
        await session.execute(text("DELETE FROM credit_accounts WHERE user_id = :id"), {"id": alice})
        await session.execute(text("DELETE FROM api_keys WHERE user_id = :id"), {"id": alice})
        await session.execute(text("DELETE FROM users WHERE id = :id"), {"id": alice})
    assert await raw_rows(database) == []
