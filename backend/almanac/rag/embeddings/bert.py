"""A BERT encoder's forward pass in numpy float32, for sentence-embedding models such as all-MiniLM-L6-v2.

`load_bert` reads a Hugging Face BERT folder (config.json + model.safetensors); `embed_tokens` runs the
encoder on padded token ids and returns attention-masked mean-pooled, L2-normalised sentence vectors,
matching sentence-transformers' Transformer → Pooling(mean) → Normalize pipeline.

Speed: one BLAS call per weight matrix and per attention group, elementwise work in place, and per-thread
scratch buffers reused across calls (a fresh multi-megabyte array costs page faults on every allocation).
Callers keep batches small (about a thousand tokens) so that the activations stay in the CPU cache.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from almanac.rag.embeddings.base import EmbeddingError

_SCORES_PER_GROUP = 1 << 20  # attention scores materialised at once (4 MB)
_EXP_SAFE = 80.0  # exp(±80) and a sum of a few thousand such terms stay normal float32 numbers

Array = npt.NDArray[np.float32]


@dataclass(frozen=True)
class _Layer:
    """One transformer layer; matrices are stored (in, out) so that `x @ w` applies them."""

    qkv_w: Array  # query columns pre-scaled by 1/sqrt(head size)
    qkv_b: Array
    attn_out_w: Array
    attn_out_b: Array
    attn_ln_g: Array
    attn_ln_b: Array
    ffn_in_w: Array
    ffn_in_b: Array
    ffn_out_w: Array
    ffn_out_b: Array
    ffn_ln_g: Array
    ffn_ln_b: Array


@dataclass(frozen=True)
class Bert:
    """The weights of a BERT encoder, arranged for `embed_tokens`."""

    word: Array
    pos_type: Array  # position embeddings with the token-type-0 embedding already added
    ln_g: Array
    ln_b: Array
    layers: tuple[_Layer, ...]
    heads: int
    eps: float


class Scratch:
    """Per-thread reusable buffers: a fresh multi-megabyte array costs page faults on every allocation."""

    def __init__(self) -> None:
        self._buffers: dict[str, Array] = {}

    def take(self, name: str, *shape: int) -> Array:
        """A float32 array of `shape` with undefined contents, reusing the memory of the last `take(name)`."""
        size = math.prod(shape)
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size:
            buffer = self._buffers[name] = np.empty(size, dtype=np.float32)
        return buffer[:size].reshape(shape)


_thread_local = threading.local()


def _scratch() -> Scratch:
    scratch: Scratch | None = getattr(_thread_local, "scratch", None)
    if scratch is None:
        scratch = _thread_local.scratch = Scratch()
    return scratch


# --- elementwise kernels (all in place) ------------------------------------------------------------

# erfc(z) ≈ t·(a1 + t·(a2 + …)) · exp(−z²), t = 1/(1 + p·z), z ≥ 0; |error| < 1.5e-7
# (Abramowitz & Stegun 7.1.26), the float32 resolution of BERT's exact-erf GELU.
_ERFC_P = 0.3275911
_ERFC_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_ERFC_P_SCALED = np.float32(_ERFC_P / math.sqrt(2.0))
_MINUS_HALF_ERFC_A = tuple(np.float32(-0.5 * a) for a in _ERFC_A)
_HALF = np.float32(0.5)


def gelu_(h: Array, scratch: Scratch) -> None:
    """h ← h·Φ(h) = ½·h·(1 + erf(h/√2)), BERT's exact GELU, to within 1e-7·|h|."""
    a = np.abs(h, out=scratch.take("gelu_a", *h.shape))
    t = np.multiply(a, _ERFC_P_SCALED, out=scratch.take("gelu_t", *h.shape))
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    c = _MINUS_HALF_ERFC_A
    y = np.multiply(t, c[4], out=scratch.take("gelu_y", *h.shape))
    for coefficient in (c[3], c[2], c[1], c[0]):
        y += coefficient
        y *= t
    np.square(a, out=t)
    t *= -_HALF
    np.exp(t, out=t)
    y *= t  # y = −½·erfc(|h|/√2)
    y += _HALF
    y *= a
    h *= _HALF
    h += y  # ½h + |h|·(½ − ½·erfc(|h|/√2)) = h·Φ(h)


def layer_norm_(x: Array, gamma: Array, beta: Array, eps: float) -> None:
    """Normalise each row of x to zero mean and unit variance, then scale by gamma and shift by beta."""
    x -= x.mean(axis=1, keepdims=True)
    variance = np.einsum("ij,ij->i", x, x) / np.float32(x.shape[1])
    x *= (1.0 / np.sqrt(variance + np.float32(eps)))[:, None]
    x *= gamma
    x += beta


# --- the forward pass --------------------------------------------------------------------------------


def _max_square_norm(vectors: Array) -> float:
    """The largest squared L2 norm among the vectors along the last axis."""
    return float(np.einsum("...d,...d->...", vectors, vectors).max())


def _attention(qkv: Array, shape: tuple[int, int, int], key_bias: Array | None, scratch: Scratch) -> Array:
    """Multi-head self-attention context, (batch·length, hidden), from the fused q|k|v projections."""
    batch, length, heads = shape
    hidden = qkv.shape[1] // 3
    q_k_v = qkv.reshape(batch, length, 3, heads, hidden // heads)
    context = scratch.take("context", batch, length, heads, hidden // heads)
    group = max(1, min(batch, _SCORES_PER_GROUP // (heads * length * length)))
    # Softmax is shift-invariant; the usual shift by the row maximum only guards exp() against overflow.
    # By Cauchy–Schwarz no |score| exceeds max‖q‖·max‖k‖, so below _EXP_SAFE the shift can be skipped.
    bound = math.sqrt(float(_max_square_norm(q_k_v[:, :, 0]) * _max_square_norm(q_k_v[:, :, 1])))
    for start in range(0, batch, group):
        part = slice(start, start + group)
        size = len(range(*part.indices(batch)))
        queries, keys = q_k_v[part, :, 0].transpose(0, 2, 1, 3), q_k_v[part, :, 1].transpose(0, 2, 3, 1)
        scores = np.matmul(queries, keys, out=scratch.take("scores", size, heads, length, length))
        if key_bias is not None:
            scores += key_bias[part]
        if bound > _EXP_SAFE:
            scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        total = scores.sum(axis=-1, keepdims=True)
        values = q_k_v[part, :, 2].transpose(0, 2, 1, 3)
        heads_context = np.matmul(scores, values, out=scratch.take("heads", size, heads, length, hidden // heads))
        heads_context /= total  # softmax normalisation applied to the (much smaller) context
        context[part] = heads_context.transpose(0, 2, 1, 3)
    return context.reshape(batch * length, hidden)


def _layer_(x: Array, layer: _Layer, shape: tuple[int, int, int], key_bias: Array | None, eps: float) -> None:
    """x ← the layer's output for x (batch·length, hidden)."""
    scratch, tokens = _scratch(), x.shape[0]
    qkv = np.matmul(x, layer.qkv_w, out=scratch.take("qkv", tokens, layer.qkv_w.shape[1]))
    qkv += layer.qkv_b
    context = _attention(qkv, shape, key_bias, scratch)
    attended = np.matmul(context, layer.attn_out_w, out=scratch.take("attended", *x.shape))
    attended += layer.attn_out_b
    attended += x
    layer_norm_(attended, layer.attn_ln_g, layer.attn_ln_b, eps)
    inner = np.matmul(attended, layer.ffn_in_w, out=scratch.take("inner", tokens, layer.ffn_in_w.shape[1]))
    inner += layer.ffn_in_b
    gelu_(inner, scratch)
    np.matmul(inner, layer.ffn_out_w, out=x)
    x += layer.ffn_out_b
    x += attended
    layer_norm_(x, layer.ffn_ln_g, layer.ffn_ln_b, eps)


def embed_tokens(bert: Bert, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.float32]) -> Array:
    """Sentence embeddings (batch, hidden), unit length, for padded token ids and their 0/1 mask."""
    batch, length = ids.shape
    x = np.take(bert.word, ids.reshape(-1), axis=0)
    x.reshape(batch, length, -1)[...] += bert.pos_type[:length]
    layer_norm_(x, bert.ln_g, bert.ln_b, bert.eps)
    key_bias = None
    if not mask.all():
        key_bias = ((mask - 1.0) * np.float32(1e30)).astype(np.float32)[:, None, None, :]
    for layer in bert.layers:
        _layer_(x, layer, (batch, length, bert.heads), key_bias, bert.eps)
    pooled: Array = np.einsum("bt,bth->bh", mask, x.reshape(batch, length, -1))
    pooled /= mask.sum(axis=1, keepdims=True)
    pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
    return pooled


# --- loading -------------------------------------------------------------------------------------------


def load_bert(model_dir: Path) -> Bert:
    """The encoder stored in a Hugging Face BERT folder; EmbeddingError unless it is a BERT with exact GELU."""
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise EmbeddingError("The local embedding model has an unsupported configuration.")
    weights = load_file(str(model_dir / "model.safetensors"))
    heads = int(config["num_attention_heads"])
    scale = np.float32(1.0 / math.sqrt(int(config["hidden_size"]) // heads))

    def w(name: str) -> Array:
        return np.ascontiguousarray(weights[name], dtype=np.float32)

    def wt(name: str) -> Array:
        return np.ascontiguousarray(weights[name].T, dtype=np.float32)

    layers = []
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        s = p + "attention.self."
        layers.append(
            _Layer(
                qkv_w=np.ascontiguousarray(
                    np.concatenate([wt(s + "query.weight") * scale, wt(s + "key.weight"), wt(s + "value.weight")], 1)
                ),
                qkv_b=np.concatenate([w(s + "query.bias") * scale, w(s + "key.bias"), w(s + "value.bias")]),
                attn_out_w=wt(p + "attention.output.dense.weight"),
                attn_out_b=w(p + "attention.output.dense.bias"),
                attn_ln_g=w(p + "attention.output.LayerNorm.weight"),
                attn_ln_b=w(p + "attention.output.LayerNorm.bias"),
                ffn_in_w=wt(p + "intermediate.dense.weight"),
                ffn_in_b=w(p + "intermediate.dense.bias"),
                ffn_out_w=wt(p + "output.dense.weight"),
                ffn_out_b=w(p + "output.dense.bias"),
                ffn_ln_g=w(p + "output.LayerNorm.weight"),
                ffn_ln_b=w(p + "output.LayerNorm.bias"),
            )
        )
    return Bert(
        word=w("embeddings.word_embeddings.weight"),
        pos_type=w("embeddings.position_embeddings.weight") + w("embeddings.token_type_embeddings.weight")[0],
        ln_g=w("embeddings.LayerNorm.weight"),
        ln_b=w("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
        heads=heads,
        eps=float(config["layer_norm_eps"]),
    )
