"""Exact nearest-neighbour search over a matrix of every stored vector (numpy).

The SQLite store loads the matrix once per change token; a query is one matrix-vector
product (the inner product, which is the cosine for unit vectors) and a partial sort.
At 100k chunks × 384 dimensions that is ~150 MB of float32 and a few milliseconds.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import IndexMismatch
from ..models import Filters


def _dot(matrix: NDArray[np.float32], q: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix @ q`` on the calling thread alone.

    A matrix-vector product is bound by memory bandwidth: OpenBLAS's threads make it no
    faster (6.4 vs 6.2 ms at 100k × 384 on 2 cores) but keep spinning after every call,
    so each search burned a second core for nothing (a hybrid SciFact search: 31 ms of
    CPU for 15 ms of wall time), starving the other threads and processes on the
    machine. ``einsum`` without ``optimize`` computes the same product without BLAS.
    """
    out: NDArray[np.float32] = np.einsum("ij,j->i", matrix, q)
    return out


@dataclass(frozen=True)
class VectorMatrix:
    token: str
    ids: list[str]
    matrix: NDArray[np.float32]
    types: NDArray[np.str_]
    categories: NDArray[np.str_]
    sources: NDArray[np.str_]
    positions: dict[str, int]

    @classmethod
    def build(
        cls,
        token: str,
        rows: Sequence[tuple[str, str, str, str, bytes]],
        dimension: int,
    ) -> VectorMatrix:
        """From (chunk id, type, category, source, float32 bytes) rows."""
        if rows:
            matrix = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32)
            matrix = matrix.reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, dimension), dtype=np.float32)
        return cls(
            token,
            [r[0] for r in rows],
            np.ascontiguousarray(matrix),
            np.array([r[1] for r in rows], dtype=str),
            np.array([r[2] for r in rows], dtype=str),
            np.array([r[3] for r in rows], dtype=str),
            {r[0]: i for i, r in enumerate(rows)},
        )

    def query(self, vector: bytes) -> NDArray[np.float32]:
        q = np.frombuffer(vector, dtype=np.float32)
        if q.shape[0] != self.matrix.shape[1]:
            raise IndexMismatch(
                f"the query vector has {q.shape[0]} dimensions, the index {self.matrix.shape[1]}"
            )
        return q

    def similarities(self, vector: bytes, chunk_ids: Sequence[str]) -> dict[str, float]:
        found = [(c, self.positions[c]) for c in chunk_ids if c in self.positions]
        if not found:
            return {}
        sims = _dot(self.matrix[[i for _, i in found]], self.query(vector))
        return {c: float(x) for (c, _), x in zip(found, sims, strict=True)}

    @functools.cached_property
    def documents(self) -> dict[str, list[int]]:
        """Each document's rows (built on first use: only API searches ask)."""
        rows: dict[str, list[int]] = {}
        for i, chunk_id in enumerate(self.ids):
            rows.setdefault(chunk_id.rpartition("#")[0], []).append(i)
        return rows

    def document_similarities(self, vector: bytes, doc_ids: Sequence[str]) -> dict[str, float]:
        found = [(d, self.documents[d]) for d in dict.fromkeys(doc_ids) if d in self.documents]
        if not found:
            return {}
        sims = _dot(self.matrix[[i for _, rows in found for i in rows]], self.query(vector))
        starts = np.cumsum([0] + [len(rows) for _, rows in found[:-1]])
        best = np.maximum.reduceat(sims, starts)  # each document's rows are consecutive
        return {d: float(x) for (d, _), x in zip(found, best, strict=True)}

    def nearest(self, vector: bytes, filters: Filters, k: int) -> list[tuple[str, float]]:
        if not self.ids or k <= 0:
            return []
        sims = _dot(self.matrix, self.query(vector))
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
