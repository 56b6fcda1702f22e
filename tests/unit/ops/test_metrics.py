"""Metrics: metered models and credits, bounded labels, the MCP status collector, the chat and
gateway observers."""

from datetime import UTC, datetime
from typing import Any

import pytest
from tests.ops_support import value

from almanac.billing.ledger import ChargeContext
from almanac.chat.events import ToolResultEvent
from almanac.llm.base import ModelUnavailable, complete
from almanac.llm.fake import ScriptedModel, reply
from almanac.llm.messages import Message, ModelRequest
from almanac.ops.metered import MeteredCredits, MeteredModel, chat_observer, gateway_observer
from almanac.ops.metrics import BoundedLabel, Metrics
from almanac.storage.gateway import GatewayUsageRecord


def request() -> ModelRequest:
    return ModelRequest(system="", messages=(Message.user("hi"),), max_tokens=100)


async def test_a_metered_model_counts_calls_by_outcome_and_tokens() -> None:
    metrics = Metrics()
    inner = ScriptedModel([reply("one"), reply("two"), ModelUnavailable("down")], name="m1")
    model = MeteredModel(inner, metrics, source="chat")
    assert (model.provider, model.name, model.supports_tools) == ("fake", "m1", True)
    assert (await complete(model, request())).text == "one"
    await complete(model, request())
    with pytest.raises(ModelUnavailable):
        await complete(model, request())
    text = metrics.exposition().decode()
    labels = {"source": "chat", "provider": "fake", "model": "m1"}
    assert value(text, "almanac_model_calls_total", **labels, outcome="ok") == 2
    assert value(text, "almanac_model_calls_total", **labels, outcome="error") == 1
    assert value(text, "almanac_model_tokens_total", **labels, direction="input") == 20
    assert value(text, "almanac_model_tokens_total", **labels, direction="output") == 10


async def test_a_stream_left_early_counts_as_cancelled() -> None:
    metrics = Metrics()
    model = MeteredModel(ScriptedModel([reply("a long answer")]), metrics)
    stream = model.stream(request())
    await anext(stream)
    await stream.aclose()  # type: ignore[attr-defined]
    text = metrics.exposition().decode()
    assert value(
        text, "almanac_model_calls_total", source="chat", provider="fake", model="scripted", outcome="cancelled"
    )


def test_the_wrapped_model_s_other_attributes_are_read_through() -> None:
    inner = ScriptedModel()
    model: Any = MeteredModel(inner, Metrics())
    inner.supports_tools = False  # a provider may change its own flags
    assert model.supports_tools is False and model.pending == inner.pending


def test_a_label_keeps_at_most_its_bound_of_values() -> None:
    bounded = BoundedLabel(limit=3)
    assert [bounded(v) for v in ["a", "b", "a", "c", "d", "b", "e"]] == ["a", "b", "a", "c", "other", "b", "other"]


def test_client_chosen_model_names_cannot_grow_the_scrape() -> None:
    metrics = Metrics()
    for i in range(300):
        metrics.model_call(
            source="gateway", provider="anthropic", model=f"m{i}", outcome="ok", input_tokens=1, output_tokens=1
        )
    text = metrics.exposition().decode()
    assert text.count("almanac_model_calls_total{") == 101
    assert (
        value(text, "almanac_model_calls_total", source="gateway", provider="anthropic", model="other", outcome="ok")
        == 200
    )


def test_label_values_are_printable_and_bounded_so_the_scrape_stays_readable() -> None:
    """A NUL, a newline or a lone surrogate in a model name must not reach the exposition text (a
    surrogate made the whole scrape fail to encode); an over-long name is cut."""
    metrics = Metrics()
    for model in ("evil\x00model", "two\nlines", "lone\ud800", "x" * 5_000):
        metrics.model_call(
            source="gateway", provider="openai", model=model, outcome="ok", input_tokens=1, output_tokens=1
        )
    text = metrics.exposition().decode("utf-8")
    assert "\x00" not in text and "\ud800" not in text
    assert 'model="evil\ufffdmodel"' in text and 'model="two\ufffdlines"' in text and 'model="lone\ufffd"' in text
    assert f'model="{"x" * 100}"' in text and "x" * 101 not in text


def test_mcp_servers_are_reported_when_scraped() -> None:
    metrics = Metrics()
    states = [("git", "ready", 12), ("github", "restarting", 0)]
    metrics.watch_mcp(lambda: states)
    text = metrics.exposition().decode()
    assert value(text, "almanac_mcp_server_up", server="git") == 1
    assert value(text, "almanac_mcp_server_up", server="github") == 0
    assert value(text, "almanac_mcp_server_tools", server="git") == 12
    states[1] = ("github", "ready", 40)
    assert value(metrics.exposition().decode(), "almanac_mcp_server_up", server="github") == 1


def test_tool_results_are_counted_by_tool_and_errors_apart() -> None:
    metrics = Metrics()
    observe = chat_observer(metrics)
    for status, is_error in [("ok", False), ("ok", False), ("timeout", True)]:
        observe(ToolResultEvent("id", "retrieve_documentation", "q1-t1", "q1-t1-sum", is_error, status, None, 5, 10))
    text = metrics.exposition().decode()
    assert value(text, "almanac_tool_calls_total", tool="retrieve_documentation", status="ok") == 2
    assert value(text, "almanac_tool_calls_total", tool="retrieve_documentation", status="timeout") == 1
    assert value(text, "almanac_tool_errors_total", tool="retrieve_documentation") == 1


def test_gateway_requests_are_counted_as_upstream_model_calls() -> None:
    metrics = Metrics()
    observe = gateway_observer(metrics)
    row = GatewayUsageRecord(
        user_id="u",
        api_key_id=None,
        model="claude-sonnet-4-6",
        upstream="openai",
        upstream_model="gpt-4o",
        stream=True,
        input_tokens=100,
        output_tokens=7,
        latency_ms=5,
        status=200,
        created_at=datetime.now(UTC),
    )
    observe(row)
    observe(GatewayUsageRecord(**{**row.__dict__, "status": 499}))
    text = metrics.exposition().decode()
    labels = {"source": "gateway", "provider": "openai", "model": "gpt-4o"}
    assert value(text, "almanac_model_calls_total", **labels, outcome="ok") == 1
    assert value(text, "almanac_model_calls_total", **labels, outcome="cancelled") == 1
    assert value(text, "almanac_model_tokens_total", **labels, direction="input") == 200


async def test_metered_credits_count_what_was_debited_and_refunded(database: Any) -> None:
    from almanac.auth.service import AccountService

    metrics = Metrics()
    credits = MeteredCredits(database, metrics=metrics)
    user = (await AccountService(database).create_user(email="m@example.com", plan="free")).user
    charge = await credits.debit(user_id=user.id, amount=5, context=ChargeContext("query"))
    assert charge is not None
    await credits.debit(user_id=user.id, amount=3, context=ChargeContext("gateway: 3,000 tokens"))
    assert await credits.debit(user_id=user.id, amount=500, context=ChargeContext("query")) is None  # refused
    assert await credits.refund(user_id=user.id, charge=charge, context=ChargeContext("refund"), key="k")
    assert not await credits.refund(user_id=user.id, charge=charge, context=ChargeContext("refund"), key="k")
    text = metrics.exposition().decode()
    assert value(text, "almanac_credits_debited_total", source="chat") == 5
    assert value(text, "almanac_credits_debited_total", source="gateway") == 3
    assert value(text, "almanac_credits_refunded_total", source="chat") == 5
    assert await credits.balance(user_id=user.id) == 47
