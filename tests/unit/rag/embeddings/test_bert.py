"""The numpy BERT kernels: exact-erf GELU, layer norm, and padding that never changes a sentence's vector."""

from __future__ import annotations

import math

import numpy as np
import pytest

from almanac.rag.embeddings.bert import Bert, Scratch, _attention, embed_tokens, gelu_, layer_norm_, load_bert
from almanac.rag.embeddings.minilm import default_model_dir


@pytest.fixture(scope="module")
def bert() -> Bert:
    return load_bert(default_model_dir())


def test_gelu_is_berts_exact_erf_form_to_float32_precision() -> None:
    x = np.linspace(-15, 15, 30_001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    h = x.copy()
    gelu_(h, Scratch())
    assert np.max(np.abs(h - exact) / np.maximum(1.0, np.abs(exact))) < 1e-6


def test_layer_norm_gives_zero_mean_unit_variance_then_scales_and_shifts() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 5.0, size=(7, 384)).astype(np.float32)
    gamma, beta = rng.normal(size=384).astype(np.float32), rng.normal(size=384).astype(np.float32)
    expected = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-12) * gamma + beta
    layer_norm_(x, gamma, beta, 1e-12)
    np.testing.assert_allclose(x, expected, atol=1e-4)


@pytest.mark.parametrize("scale", [0.1, 1.0, 40.0], ids=["small-scores", "typical", "would-overflow-unshifted"])
def test_attention_equals_the_textbook_softmax_formula(scale: float) -> None:
    batch, length, heads, size = 2, 9, 3, 4
    qkv = (np.random.default_rng(1).standard_normal((batch * length, 3 * heads * size)) * scale).astype(np.float32)
    q, k, v = qkv.reshape(batch, length, 3, heads, size).transpose(2, 0, 3, 1, 4).astype(np.float64)
    scores = q @ k.transpose(0, 1, 3, 2)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    expected = (weights / weights.sum(-1, keepdims=True) @ v).transpose(0, 2, 1, 3).reshape(batch * length, -1)
    context = _attention(qkv, (batch, length, heads), None, Scratch())
    np.testing.assert_allclose(context, expected, rtol=1e-4, atol=1e-4 * scale)


def test_scratch_reuses_memory_for_smaller_requests() -> None:
    scratch = Scratch()
    big = scratch.take("buffer", 4, 8)
    small = scratch.take("buffer", 2, 3)
    assert small.shape == (2, 3) and np.shares_memory(big, small)


def test_padding_never_changes_a_sentence_embedding(bert: Bert) -> None:
    ids = np.array([[101, 7592, 2088, 102, 0, 0, 0], [101, 2023, 2003, 1037, 2936, 6251, 102]])
    mask = (np.arange(7) < np.array([[4], [7]])).astype(np.float32)
    padded = embed_tokens(bert, ids, mask)
    alone = embed_tokens(bert, ids[:1, :4], mask[:1, :4])
    np.testing.assert_allclose(padded[0], alone[0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(padded, axis=1), 1.0, atol=1e-6)
