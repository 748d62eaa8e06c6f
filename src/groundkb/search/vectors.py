"""Exact vector search over the stored embeddings (numpy), and score fusion.

The matrix of every stored vector is loaded once per index generation; a query is one
matrix-vector product (cosine, since vectors are unit length) and a partial sort. At
100k chunks × 384 dimensions that is ~150 MB of float32 and a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..models import Filters
from ..store.base import VectorRow


@dataclass(frozen=True)
class VectorIndex:
    generation: int
    ids: list[str]
    matrix: NDArray[np.float32]
    types: NDArray[np.str_]
    categories: NDArray[np.str_]
    sources: NDArray[np.str_]
    positions: dict[str, int]

    @classmethod
    def build(cls, generation: int, rows: Sequence[VectorRow], dimension: int) -> VectorIndex:
        if rows:
            matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32)
            matrix = matrix.reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, dimension), dtype=np.float32)
        return cls(
            generation,
            [r.chunk_id for r in rows],
            np.ascontiguousarray(matrix),
            np.array([r.type for r in rows], dtype=str),
            np.array([r.category for r in rows], dtype=str),
            np.array([r.source for r in rows], dtype=str),
            {r.chunk_id: i for i, r in enumerate(rows)},
        )

    def cosines(self, query: NDArray[np.float32], chunk_ids: Sequence[str]) -> dict[str, float]:
        """Exact cosine of ``query`` with each given chunk that has a vector."""
        found = [(c, self.positions[c]) for c in chunk_ids if c in self.positions]
        if not found:
            return {}
        sims = self.matrix[[i for _, i in found]] @ query.astype(np.float32, copy=False)
        return {c: float(x) for (c, _), x in zip(found, sims, strict=True)}

    def search(
        self, query: NDArray[np.float32], filters: Filters, k: int
    ) -> list[tuple[str, float]]:
        """The ``k`` chunks most similar to ``query`` (cosine), best first."""
        if not self.ids or k <= 0:
            return []
        sims = self.matrix @ query.astype(np.float32, copy=False)
        if not filters.is_empty():
            mask = np.ones(len(self.ids), dtype=bool)
            for values, column in (
                (filters.types, self.types),
                (filters.categories, self.categories),
                (filters.sources, self.sources),
            ):
                if values:
                    mask &= np.isin(column, list(values))
            sims = np.where(mask, sims, -np.inf)
        k = min(k, len(self.ids))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self.ids[i], float(sims[i])) for i in top if np.isfinite(sims[i])]


def to_bytes(vectors: NDArray[np.float32]) -> list[bytes]:
    return [np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in vectors]


class Neighbours(list[tuple[str, float]]):
    """Vector search results, best first, that can also score any other chunk."""

    def __init__(
        self, hits: list[tuple[str, float]], index: VectorIndex, query: NDArray[np.float32]
    ) -> None:
        super().__init__(hits)
        self.vectors = index
        self.query = query

    def cosine(self, chunk_ids: Sequence[str]) -> dict[str, float]:
        return self.vectors.cosines(self.query, chunk_ids)
