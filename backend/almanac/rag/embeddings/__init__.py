"""Text embeddings for retrieval: the `Embedder` seam, a local CPU model and Voyage AI.

Exceptions: `EmbeddingError` (any model or vendor failure; its message is safe to show a user).
"""

from almanac.rag.embeddings.base import Embedder, EmbeddingError, Embeddings, InputType
from almanac.rag.embeddings.minilm import MiniLMEmbedder
from almanac.rag.embeddings.voyage import VoyageEmbedder, VoyageModelLimits

__all__ = [
    "Embedder",
    "EmbeddingError",
    "Embeddings",
    "InputType",
    "MiniLMEmbedder",
    "VoyageEmbedder",
    "VoyageModelLimits",
]
