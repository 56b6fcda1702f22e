"""A deterministic bag-of-words embedder for tests: no model, same text → same vector."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from almanac.rag.embeddings.base import Embeddings, InputType, empty_embeddings


class HashEmbedder:
    def __init__(self, dimension: int = 64, model_id: str = "test/hash-64") -> None:
        self.model_id = model_id
        self.dimension = dimension
        self.max_tokens = 512
        self.calls: list[int] = []

    async def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        self.calls.append(len(texts))
        if not texts:
            return empty_embeddings(self.dimension)
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        return (rows / norms).astype(np.float32)
