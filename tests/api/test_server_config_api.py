"""GET /api/config: what this server offers the person using it — whether the chat model is the
built-in offline one, the strategies, payments and GitHub tools (SQLite and PostgreSQL)."""

from typing import Any

from tests.support import api_client, make_user

from almanac.chat.suggestions import MODEL_SUGGESTIONS, OFFLINE_SUGGESTIONS
from almanac.llm.fake import ScriptedModel


async def test_an_embedded_server_says_its_model_is_the_offline_one(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        config = (await http.get("/api/config")).json()
    assert config == {
        "chat_model": {"name": "almanac-offline", "provider": "offline", "offline": True},
        "strategies": {"default": "direct", "available": ["direct", "boost", "collaborate"]},
        "payments_enabled": False,
        "github_tools": False,
        "suggestions": list(OFFLINE_SUGGESTIONS),
    }


async def test_a_real_model_and_payments_are_reported(database_url: str, build: Any) -> None:
    services, settings = build(
        database_url,
        model=ScriptedModel(name="claude-haiku-4-5"),
        stripe_secret_key="sk_test_x",
        stripe_webhook_secret="whsec_x",
        stripe_price_pro="price_pro",
        stripe_price_pack="price_pack",
        default_strategy="boost",
    )
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        config = (await http.get("/api/config")).json()
    assert config["chat_model"] == {"name": "claude-haiku-4-5", "provider": "fake", "offline": False}
    assert config["payments_enabled"] is True and config["strategies"]["default"] == "boost"
    assert config["suggestions"] == list(MODEL_SUGGESTIONS)


async def test_anonymous_callers_learn_nothing(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    async with api_client(services, settings) as anonymous:
        assert (await anonymous.get("/api/config")).status_code == 401
