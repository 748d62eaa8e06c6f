"""Vector candidates for the engine: a store's nearest neighbours that can also score any
other chunk (fusion scores every candidate on both sides), and vectors as bytes.

The search itself is the store's (``Store.nearest``): an exact numpy scan in SQLite, an
HNSW index in PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..store.base import Store


def to_bytes(vectors: NDArray[np.float32]) -> list[bytes]:
    return [np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in vectors]


class Neighbours(list[tuple[str, float]]):
    """Vector search results, best first, that can also score any other chunk."""

    def __init__(self, hits: list[tuple[str, float]], store: Store, vector: bytes) -> None:
        super().__init__(hits)
        self.store = store
        self.vector = vector

    def cosine(self, chunk_ids: Sequence[str]) -> dict[str, float]:
        return self.store.similarities(self.vector, chunk_ids) if chunk_ids else {}

    def document_cosine(self, doc_ids: Sequence[str]) -> dict[str, float]:
        """Per document, the best cosine among its chunks."""
        return self.store.document_similarities(self.vector, doc_ids) if doc_ids else {}
