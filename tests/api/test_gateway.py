"""The gateway through the official anthropic SDK (in-process): the offline upstream, auth in both
header styles, Anthropic-shaped errors, count_tokens, the model list, usage records and billing."""

from __future__ import annotations

import math

import anthropic
import httpx2
import pytest
from tests.api.gateway_support import gateway

from almanac.billing.ledger import CreditService

MESSAGES = [{"role": "user", "content": "hello"}]


async def test_with_no_upstream_configured_the_offline_model_answers(database_url: str) -> None:
    async with gateway(database_url) as gw:
        message = await gw.client.messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=MESSAGES)
        assert message.type == "message" and message.role == "assistant"
        assert message.model == "claude-sonnet-4-6"
        assert "offline model" in message.content[0].text  # type: ignore[union-attr]
        assert message.stop_reason == "end_turn" and message.usage.output_tokens > 0


async def test_streaming_offline_answer_has_the_anthropic_event_sequence(database_url: str) -> None:
    async with gateway(database_url) as gw:
        async with gw.client.messages.stream(model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES) as stream:
            kinds = [event.type async for event in stream]
            final = await stream.get_final_message()
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert kinds[1] == "content_block_start" and "content_block_delta" in kinds and "message_delta" in kinds
        assert "offline model" in final.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "headers",
    [
        {"x-api-key": "{key}", "anthropic-version": "2023-06-01"},
        {"authorization": "Bearer {key}", "anthropic-version": "2026-10-21"},
        {"x-api-key": "{key}", "anthropic-version": "2099-01-01", "anthropic-beta": "some-feature-2025"},
    ],
    ids=["x-api-key-old-sdk", "bearer-new-sdk", "any-version-and-beta"],
)
async def test_both_auth_header_styles_and_any_version_are_accepted(database_url: str, headers: dict[str, str]) -> None:
    async with gateway(database_url) as gw:
        sent = {name: value.format(key=gw.key) for name, value in headers.items()}
        body = {"model": "claude-opus-4-6", "max_tokens": 50, "messages": MESSAGES, "temperature": 0.2}
        response = await gw.http.post("/v1/messages?beta=true", json=body, headers=sent)
        assert response.status_code == 200
        assert response.json()["type"] == "message"


@pytest.mark.parametrize("key", [None, "alm_not_a_real_key_000000000000000", "sk-ant-something"])
async def test_missing_or_unknown_keys_are_authentication_errors(database_url: str, key: str | None) -> None:
    async with gateway(database_url) as gw:
        headers = {"x-api-key": key} if key else {}
        response = await gw.http.post(
            "/v1/messages", json={"model": "m", "max_tokens": 5, "messages": MESSAGES}, headers=headers
        )
        assert response.status_code == 401
        assert response.json()["type"] == "error"
        assert response.json()["error"]["type"] == "authentication_error"
        client = anthropic.AsyncAnthropic(api_key=key or "x", base_url="http://localhost", http_client=gw.http)
        with pytest.raises(anthropic.AuthenticationError):
            await client.messages.create(model="claude-haiku-4-5", max_tokens=5, messages=MESSAGES)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "claude-haiku-4-5", "messages": MESSAGES}, "max_tokens"),
        ({"max_tokens": 5, "messages": MESSAGES}, "model"),
        ({"model": "claude-haiku-4-5", "max_tokens": 5, "messages": []}, "messages"),
        ({"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [{"role": "bot", "content": "x"}]}, "role"),
    ],
)
async def test_invalid_requests_are_invalid_request_errors_naming_the_field(
    database_url: str, body: dict[str, object], field: str
) -> None:
    async with gateway(database_url) as gw:
        response = await gw.http.post("/v1/messages", json=body, headers={"x-api-key": gw.key})
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error" and field in error["message"]
        if "model" in body and "max_tokens" in body:  # (the SDK itself refuses calls without them)
            with pytest.raises(anthropic.BadRequestError):
                await gw.client.messages.create(**body)  # type: ignore[arg-type]


async def test_body_that_is_not_json_is_rejected(database_url: str) -> None:
    async with gateway(database_url) as gw:
        response = await gw.http.post("/v1/messages", content=b"{nope", headers={"x-api-key": gw.key})
        assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"


async def test_count_tokens_answers_input_tokens(database_url: str) -> None:
    async with gateway(database_url) as gw:
        small = await gw.client.messages.count_tokens(model="claude-sonnet-4-6", messages=MESSAGES)
        large = await gw.client.messages.count_tokens(
            model="claude-sonnet-4-6",
            system="You are terse.",
            messages=[{"role": "user", "content": "word " * 500}],
            tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
        )
        assert 0 < small.input_tokens < large.input_tokens


async def test_models_lists_one_model_per_tier(database_url: str) -> None:
    async with gateway(database_url) as gw:
        page = await gw.client.models.list()
        ids = [model.id for model in page.data]
        assert ids == ["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5"]
        assert (await gw.client.models.retrieve("claude-haiku-4-5")).id == "claude-haiku-4-5"
        with pytest.raises(anthropic.NotFoundError):
            await gw.client.models.retrieve("gpt-unknown")


async def test_unknown_v1_paths_are_not_found_errors(database_url: str) -> None:
    async with gateway(database_url) as gw:
        response = await gw.http.post("/v1/complete", json={}, headers={"x-api-key": gw.key})
        assert response.status_code == 404 and response.json()["error"]["type"] == "not_found_error"


async def test_every_request_is_recorded_for_its_user(database_url: str) -> None:
    async with gateway(database_url) as gw:
        await gw.client.messages.create(model="claude-opus-4-6", max_tokens=10, messages=MESSAGES)
        async with gw.client.messages.stream(model="claude-haiku-4-5", max_tokens=10, messages=MESSAGES) as stream:
            await stream.get_final_message()
        with pytest.raises(anthropic.BadRequestError):
            await gw.client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=[])
        rows = await gw.usage()
        assert [(r.model, r.stream, r.status) for r in reversed(rows)] == [
            ("claude-opus-4-6", False, 200),
            ("claude-haiku-4-5", True, 200),
        ]  # a request refused before it reached a model is not a usage row
        assert all(r.user_id == gw.user_id and r.upstream == "offline" and r.output_tokens > 0 for r in rows)
        assert rows[0].first_token_ms is not None and rows[0].latency_ms >= 0


async def test_with_a_price_the_gateway_bills_the_ledger_and_refuses_an_empty_balance(database_url: str) -> None:
    # 100 credits per 1,000 tokens: one answer of the offline model (its output is counted since it
    # reports none) costs a few credits, less than a day's free allowance.
    async with gateway(database_url, gateway_credits_per_1k_tokens=100) as gw:
        credits = CreditService(gw.services.database)
        before = await credits.balance(user_id=gw.user_id)
        message = await gw.client.messages.create(model="claude-opus-4-6", max_tokens=10, messages=MESSAGES)
        rows = await gw.usage()
        spent = math.ceil((message.usage.input_tokens + message.usage.output_tokens) * 100 / 1000)
        assert 0 < rows[0].credits == spent < before
        assert await credits.balance(user_id=gw.user_id) == before - spent
        sums = await credits.ledger_sums(user_id=gw.user_id)
        assert sum(sums.values()) == before - spent
        while await credits.balance(user_id=gw.user_id) > 0:
            await gw.client.messages.create(model="claude-opus-4-6", max_tokens=10, messages=MESSAGES)
            await gw.usage()
            assert gw.services.gateway is not None
            gw.services.gateway._balance_check._ok_until.clear()  # type: ignore[union-attr]
        assert await credits.balance(user_id=gw.user_id) == 0  # never below zero
        with pytest.raises(anthropic.APIStatusError) as refused:
            await gw.client.messages.create(model="claude-opus-4-6", max_tokens=10, messages=MESSAGES)
        assert refused.value.status_code == 402
        assert refused.value.body["error"]["type"] == "billing_error"  # type: ignore[index]


async def test_sdk_over_http_client_with_bearer_is_httpx2(database_url: str) -> None:
    async with gateway(database_url) as gw:
        assert isinstance(gw.http, httpx2.AsyncClient)
