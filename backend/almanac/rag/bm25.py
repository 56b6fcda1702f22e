"""Lexical retrieval: BM25 over code-aware word tokens, built once and reused for many queries.

The engine is ``bm25s`` (sparse precomputed scores; well under a millisecond a query on a few
thousand chunks, against ~30 ms for ``rank_bm25`` — see ``bench/retrieval_speed.py``). It stays
behind :class:`~almanac.rag.retriever.Retriever`, so another engine can replace it.

Tokens are lowercase ``\\w+`` runs; identifiers are also split into their parts
(``get_user_id`` → ``get_user_id get user id``, ``parseHTTPResponse`` → ``… parse http response``);
English stopwords are dropped and words are Snowball-stemmed (the defaults won on SciFact, CACM and
CoSQA in ``bench/retrieval.py``). An index serialises to bytes for storage.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import bm25s
import numpy as np
import numpy.typing as npt
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from almanac.rag.retriever import Hit, top_k

_WORD_RE = re.compile(r"\w+")
_PART_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STOPWORDS = frozenset(STOPWORDS_EN)
_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class TokenizerConfig:
    """How text becomes BM25 terms; stored with the index so queries are tokenised the same way."""

    split_identifiers: bool = True
    stopwords: bool = True
    stem: bool = True
    min_length: int = 1


class _Stems(threading.local):
    """One Snowball stemmer per thread (PyStemmer objects are not thread-safe), memoised."""

    def __init__(self) -> None:
        self.stemmer = Stemmer.Stemmer("english")
        self.memo: dict[str, str] = {}

    def stem(self, word: str) -> str:
        stemmed = self.memo.get(word)
        if stemmed is None:
            stemmed = self.memo[word] = self.stemmer.stemWord(word)
        return stemmed


_stems = _Stems()
DEFAULT_TOKENIZER = TokenizerConfig()


def tokenize(text: str, config: TokenizerConfig = DEFAULT_TOKENIZER) -> list[str]:
    """Terms of ``text`` under ``config``, in order (identifier parts follow the whole identifier)."""
    terms: list[str] = []
    for word in _WORD_RE.findall(text):
        lower = word.lower()
        terms.append(lower)
        if config.split_identifiers and ("_" in word or not (word.islower() or word.isupper())):
            parts = [p.lower() for p in _PART_RE.findall(word)]
            if len(parts) > 1:
                terms.extend(parts)
    if config.stopwords:
        terms = [t for t in terms if t not in _STOPWORDS]
    if config.min_length > 1:
        terms = [t for t in terms if len(t) >= config.min_length]
    if config.stem:
        terms = [_stems.stem(t) for t in terms]
    return terms


class BM25Index:
    """A BM25 index over a fixed list of texts; implements the ``Retriever`` protocol."""

    def __init__(self, engine: bm25s.BM25, config: TokenizerConfig, size: int) -> None:
        self._engine = engine
        self.config = config
        self._size = size

    @classmethod
    def build(
        cls,
        texts: Sequence[str],
        *,
        config: TokenizerConfig = DEFAULT_TOKENIZER,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> BM25Index:
        """Index ``texts`` (hit indices refer to positions in this sequence). An empty list is allowed."""
        engine = bm25s.BM25(k1=k1, b=b, method="lucene")
        corpus = [tokenize(t, config) for t in texts]
        if texts:
            engine.index(corpus, show_progress=False)
        return cls(engine, config, len(texts))

    def __len__(self) -> int:
        return self._size

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        """BM25 score of every indexed text for ``query`` (zeros when no query term is indexed)."""
        if self._size == 0:
            return np.zeros(0, dtype=np.float32)
        ids = self._engine.get_tokens_ids(tokenize(query, self.config))
        if not ids:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._engine.get_scores_from_ids(ids), dtype=np.float32)

    def document_frequency(self, term: str) -> int:
        """How many indexed texts contain ``term`` (one term as ``tokenize`` gives it: lower-case, stemmed)."""
        ids = self._engine.get_tokens_ids([term]) if self._size else []
        if not ids:
            return 0
        indptr = self._engine.scores["indptr"]
        return int(indptr[ids[0] + 1] - indptr[ids[0]])

    def search(self, query: str, k: int) -> list[Hit]:
        """At most ``k`` texts that share a term with ``query``, best BM25 score first."""
        return top_k(self.scores(query), k, positive_only=True)

    def to_bytes(self) -> bytes:
        """Serialise the index (arrays + vocabulary + parameters) without pickle."""
        engine = self._engine
        header = {
            "version": _FORMAT_VERSION,
            "size": self._size,
            "config": asdict(self.config),
            "params": {"k1": engine.k1, "b": engine.b, "method": engine.method},
        }
        arrays: dict[str, npt.NDArray[np.generic]] = {}
        if self._size:
            vocab = sorted(engine.vocab_dict.items(), key=lambda kv: kv[1])
            header["vocab"] = [term for term, _ in vocab]
            arrays = {name: np.asarray(engine.scores[name]) for name in ("data", "indices", "indptr")}
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, allow_pickle=False, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> BM25Index:
        """Rebuild an index saved by :meth:`to_bytes`; raises ``ValueError`` on an unknown format."""
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
            header = json.loads(archive["header"].tobytes().decode())
            if header.get("version") != _FORMAT_VERSION:
                raise ValueError(f"unsupported BM25 index format {header.get('version')!r}")
            engine = bm25s.BM25(**header["params"])
            size = int(header["size"])
            if size:
                engine.scores = {name: archive[name] for name in ("data", "indices", "indptr")}
                engine.scores["num_docs"] = size
                engine.vocab_dict = {term: i for i, term in enumerate(header["vocab"])}
                engine.unique_token_ids_set = set(engine.vocab_dict.values())
                engine.nonoccurrence_array = None
        return cls(engine, TokenizerConfig(**header["config"]), size)
