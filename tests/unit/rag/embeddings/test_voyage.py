"""VoyageEmbedder against a local fake of the Voyage API (real HTTP, real SDK, Voyage's wire format)."""

from __future__ import annotations

import traceback
from collections.abc import Iterator

import numpy as np
import pytest
from tests.fakes.voyage_server import (
    REQUEST_TOKEN_LIMITS,
    FakeVoyageServer,
    ScriptedReply,
    fake_embedding,
    fake_token_count,
)

from almanac.rag.embeddings import Embedder, EmbeddingError, VoyageEmbedder
from almanac.rag.embeddings.voyage import (
    MAX_TEXTS_PER_REQUEST,
    MODEL_LIMITS,
    estimate_tokens,
    plan_batches,
)

API_KEY = "pa-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeVoyageServer]:
    with FakeVoyageServer(api_key=API_KEY) as running:
        yield running


@pytest.fixture
def voyage(server: FakeVoyageServer) -> VoyageEmbedder:
    server.reset()
    return VoyageEmbedder(api_key=API_KEY, base_url=server.base_url, max_retries=2, retry_base_delay=0.01)


def expected(texts: list[str], input_type: str) -> np.ndarray:
    return np.stack([fake_embedding(text, input_type) for text in texts])


# --- pure planning --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("texts", "max_texts", "max_tokens", "sizes"),
    [
        ([], 3, 100, []),
        (["a"] * 7, 3, 1_000, [3, 3, 1]),
        (["x" * 40] * 4, 1_000, 2 * estimate_tokens("x" * 40), [2, 2]),
        (["short", "y" * 1_000, "short"], 1_000, 50, [1, 1, 1]),  # an oversized text travels alone
    ],
)
def test_plan_batches_respects_both_limits_and_keeps_order(
    texts: list[str], max_texts: int, max_tokens: int, sizes: list[int]
) -> None:
    batches = list(plan_batches(texts, max_texts=max_texts, max_tokens=max_tokens))
    assert [len(batch) for batch in batches] == sizes
    assert [i for batch in batches for i in batch] == list(range(len(texts)))


@pytest.mark.parametrize("text", ["plain English words", "机器学习是人工智能", "🙂" * 10, "x = f(y) + 1; // ok"])
def test_token_estimate_is_never_below_the_fakes_count(text: str) -> None:
    assert estimate_tokens(text) >= fake_token_count(text)


def test_unknown_model_and_missing_key_are_rejected_up_front() -> None:
    with pytest.raises(ValueError, match="unknown Voyage model"):
        VoyageEmbedder(api_key=API_KEY, model="voyage-99")
    with pytest.raises(ValueError, match="key"):
        VoyageEmbedder(api_key="")


# --- over the wire --------------------------------------------------------------------------------------


def test_voyage_embedder_satisfies_the_embedder_protocol(voyage: VoyageEmbedder) -> None:
    assert isinstance(voyage, Embedder)
    assert (voyage.model_id, voyage.dimension, voyage.max_tokens) == ("voyage/voyage-3-large", 1024, 32_000)


async def test_embeds_in_input_order_with_unit_float32_rows(voyage: VoyageEmbedder) -> None:
    texts = ["what is a coroutine?", "How to cancel a task", "asyncio.timeout"]
    rows = await voyage.embed(texts, input_type="query")
    assert rows.dtype == np.float32 and rows.shape == (3, 1024)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(rows, expected(texts, "query"), atol=1e-6)


async def test_sends_voyages_wire_format_with_bearer_key(voyage: VoyageEmbedder, server: FakeVoyageServer) -> None:
    await voyage.embed(["doc one", "doc two"], input_type="document")
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {
        "input": ["doc one", "doc two"],
        "model": "voyage-3-large",
        "input_type": "document",
        "truncation": True,
        "output_dtype": None,
        "output_dimension": None,
        "encoding_format": "base64",
    }


async def test_empty_input_gives_no_rows_and_sends_nothing(voyage: VoyageEmbedder, server: FakeVoyageServer) -> None:
    rows = await voyage.embed([], input_type="query")
    assert rows.shape == (0, 1024) and rows.dtype == np.float32
    assert server.requests == []


@pytest.mark.parametrize(
    ("texts", "min_requests"),
    [
        ([f"snippet number {i}" for i in range(2_345)], 3),  # the 1,000-texts limit binds
        ([f"{i} " + "lorem ipsum dolor sit amet " * 1_100 for i in range(30)], 3),  # the token limit binds
    ],
    ids=["many-short-texts", "few-long-texts"],
)
async def test_large_inputs_are_split_into_requests_within_both_limits(
    voyage: VoyageEmbedder, server: FakeVoyageServer, texts: list[str], min_requests: int
) -> None:
    rows = await voyage.embed(texts, input_type="document")

    requests = server.requests
    assert len(requests) >= min_requests
    for request in requests:
        assert len(request.body["input"]) <= MAX_TEXTS_PER_REQUEST
        assert sum(map(fake_token_count, request.body["input"])) <= REQUEST_TOKEN_LIMITS["voyage-3-large"]
        assert sum(map(estimate_tokens, request.body["input"])) <= MODEL_LIMITS["voyage-3-large"].request_tokens
    assert [text for request in requests for text in request.body["input"]] == texts
    np.testing.assert_allclose(rows, expected(texts, "document"), atol=1e-6)


async def test_rate_limit_is_retried_after_the_servers_retry_after(
    voyage: VoyageEmbedder, server: FakeVoyageServer
) -> None:
    server.fail_next(ScriptedReply(429, "Rate limit exceeded", retry_after="0"))
    rows = await voyage.embed(["hello"], input_type="query")
    assert len(server.requests) == 2
    np.testing.assert_allclose(rows, expected(["hello"], "query"), atol=1e-6)


async def test_server_error_is_retried_then_succeeds(voyage: VoyageEmbedder, server: FakeVoyageServer) -> None:
    server.fail_next(ScriptedReply(500, "boom"), ScriptedReply(503, "overloaded"))
    rows = await voyage.embed(["hello"], input_type="query")
    assert len(server.requests) == 3 and rows.shape == (1, 1024)


@pytest.mark.parametrize(
    ("replies", "message"),
    [
        ([ScriptedReply(429, "Rate limit exceeded", retry_after="0")] * 3, "rate limit"),
        ([ScriptedReply(500, "Internal server error")] * 3, "HTTP 500"),
        ([ScriptedReply(400, "Input too long")], "rejected the embedding request: Input too long"),
    ],
    ids=["429-exhausted", "500-exhausted", "400"],
)
async def test_vendor_errors_become_embedding_errors(
    voyage: VoyageEmbedder, server: FakeVoyageServer, replies: list[ScriptedReply], message: str
) -> None:
    server.fail_next(*replies)
    with pytest.raises(EmbeddingError, match=message):
        await voyage.embed(["hello"], input_type="query")
    assert len(server.requests) == len(replies)


async def test_rejected_key_error_never_shows_the_key(server: FakeVoyageServer) -> None:
    server.reset()
    wrong_key = "pa-wrong-key-do-not-leak-42"
    voyage = VoyageEmbedder(api_key=wrong_key, base_url=server.base_url, max_retries=0)
    with pytest.raises(EmbeddingError, match="rejected the API key") as caught:
        await voyage.embed(["hello"], input_type="query")
    shown = "".join(traceback.format_exception(caught.value)) + repr(caught.value)
    assert wrong_key not in shown and API_KEY not in shown


async def test_vendor_reason_is_shown_with_the_key_redacted(voyage: VoyageEmbedder, server: FakeVoyageServer) -> None:
    server.fail_next(ScriptedReply(422, f"bad field; you sent key {API_KEY}"))
    with pytest.raises(EmbeddingError, match=r"\[redacted\]") as caught:
        await voyage.embed(["hello"], input_type="query")
    assert API_KEY not in "".join(traceback.format_exception(caught.value))


async def test_slow_server_becomes_a_timeout_error(server: FakeVoyageServer) -> None:
    server.reset()
    server.fail_next(ScriptedReply(200, delay_s=1.0))
    voyage = VoyageEmbedder(api_key=API_KEY, base_url=server.base_url, timeout=0.2, max_retries=0)
    with pytest.raises(EmbeddingError, match=r"did not answer within 0\.2 s"):
        await voyage.embed(["hello"], input_type="query")


async def test_unreachable_server_becomes_a_connection_error() -> None:
    closed = FakeVoyageServer()  # bound but never started: nothing answers on its port
    closed.stop()
    voyage = VoyageEmbedder(api_key=API_KEY, base_url=closed.base_url, max_retries=1, retry_base_delay=0.01)
    with pytest.raises(EmbeddingError, match="Could not reach Voyage AI"):
        await voyage.embed(["hello"], input_type="query")
