"""Exact nearest-neighbour search over a matrix of every stored vector (numpy).

The SQLite store loads the matrix once per change token; a query is one matrix-vector
product (the inner product, which is the cosine for unit vectors) and a partial sort.
At 100k chunks × 384 dimensions that is ~150 MB of float32, and the product is bound by
memory bandwidth (7–8 ms on one core of the reference machine).

From :data:`INT8_MIN_ROWS` rows, when onnxruntime and onnx are installed (the ``embed``
extra), a query first scans an int8 copy of the matrix (one scale per row) with
onnxruntime's integer matrix product: a quarter of the bytes, 2.2–2.6 ms at 100k. The
int8 scores are within a bound of the exact ones that is computed per row and query
(:meth:`Int8Scan.scores`), so the search then takes every row whose int8 score plus its
bound reaches the k-th best exact score of the rows that scored best in int8, and
computes those rows exactly: the result is the exact search's, row for row and score for
score, not an approximation of it.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import IndexMismatch
from ..models import Filters

log = logging.getLogger(__name__)

# Rows from which a search scans the int8 copy first. Below, the float32 product costs
# under a millisecond and the int8 scan saves nothing (per search, top 50 of 384-wide
# rows: 0.53 vs 0.59 ms at 6k rows, 0.87 vs 0.89 at 10k, 1.79 vs 1.38 at 20k, 8.2 vs
# 4.1 at 100k; docs/benchmarks.md). The copy costs a quarter of the matrix's memory
# (more while onnxruntime packs it) and 0.02 s to build at 10k rows, 0.5 s at 100k.
INT8_MIN_ROWS = 10_000
# How many rows the int8 scan hands to the exact product, per row asked for; more come
# only when the bound says a row outside them could still belong to the result.
INT8_OVERSAMPLE = 2
# Float32 rounding in the products themselves (~1e-5 at 384 dimensions), with margin.
_ROUNDING = 1e-4


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


@dataclass
class _Int8State:
    """A matrix's int8 copy: how many searches asked, whether it is being built."""

    searches: int = 0
    started: bool = False
    scan: Int8Scan | None = None
    ready: threading.Event = field(default_factory=threading.Event)  # built or failed
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class VectorMatrix:
    token: str
    ids: list[str]
    matrix: NDArray[np.float32]
    types: NDArray[np.str_]
    categories: NDArray[np.str_]
    sources: NDArray[np.str_]
    positions: dict[str, int]
    int8_allowed: bool = True  # the ``int8_vectors`` setting
    _int8: _Int8State = field(default_factory=lambda: _Int8State(), compare=False, repr=False)

    @classmethod
    def build(
        cls,
        token: str,
        rows: Sequence[tuple[str, str, str, str, bytes]],
        dimension: int,
        int8: bool = True,
    ) -> VectorMatrix:
        """From (chunk id, type, category, source, float32 bytes) rows; ``int8``: scan an
        int8 copy first when there are enough rows (module docstring)."""
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
            int8,
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

    @functools.cached_property
    def _codes(self) -> tuple[tuple[NDArray[np.str_], NDArray[np.intp]], ...]:
        """Per filter column (types, categories, sources): its distinct values and each
        row's index among them (built on the first filtered search)."""
        out = []
        for column in (self.types, self.categories, self.sources):
            values, codes = np.unique(column, return_inverse=True)
            out.append((values, codes))
        return tuple(out)

    def _mask(self, filters: Filters) -> NDArray[np.bool_] | None:
        """The rows ``filters`` allow, or None for all."""
        if filters.is_empty():
            return None
        mask = np.ones(len(self.ids), dtype=bool)
        wanted = (filters.types, filters.categories, filters.sources)
        for asked, (values, codes) in zip(wanted, self._codes, strict=True):
            if asked:  # which distinct values pass, then each row by its value's index
                mask &= np.isin(values, list(asked))[codes]
        return mask

    @property
    def int8(self) -> Int8Scan | None:
        """The int8 copy, once built; None before, below :data:`INT8_MIN_ROWS` rows and
        without onnxruntime. The third search of these vectors starts building it on a
        thread of its own (0.5 s at 100k rows; searches scan float32 meanwhile): vectors
        replaced at every write, as while an index is embedded in the background, never
        pay for a copy no search would use."""
        state = self._int8
        if state.scan is not None or not self.int8_allowed or len(self.ids) < INT8_MIN_ROWS:
            return state.scan
        with state.lock:
            state.searches += 1
            if state.searches < 3 or state.started:
                return None
            state.started = True
        threading.Thread(target=self._build_int8, name="groundkb-int8", daemon=True).start()
        return None

    def _build_int8(self) -> None:
        state = self._int8
        try:
            state.scan = Int8Scan.build(self.matrix)
        except Exception as exc:  # an optimisation: the float32 product stays
            log.warning("int8 vector scan not built, scanning float32: %s", exc)
        finally:
            state.ready.set()

    def nearest(
        self, vector: bytes, filters: Filters, k: int, scan: Int8Scan | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` rows of highest inner product that ``filters`` allow, best first
        (equal scores in row order). ``scan``: the int8 copy to scan first (default:
        :attr:`int8`); the result is the same either way."""
        if not self.ids or k <= 0:
            return []
        q = self.query(vector)
        mask = self._mask(filters)
        scan = scan if scan is not None else self.int8
        if scan is None:
            sims = _dot(self.matrix, q)
            if mask is not None:
                sims = np.where(mask, sims, -np.inf)
            rows = _top(sims, k)
            return [(self.ids[i], float(sims[i])) for i in rows if np.isfinite(sims[i])]
        rows, exact = scan.search(self.matrix, q, mask, k)
        return [(self.ids[i], float(s)) for i, s in zip(rows, exact, strict=True)]


def _top(scores: NDArray[np.float32], k: int) -> NDArray[np.intp]:
    """Indices of the ``k`` highest scores, highest first, equal scores in index order."""
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.intp)
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    within = np.flatnonzero(scores >= kth)  # ties at the k-th score: every one of them
    order = np.lexsort((within, -scores[within]))
    return within[order[:k]]


@dataclass(frozen=True)
class Int8Scan:
    """An int8 copy of a matrix (a scale per row) and an onnxruntime session computing
    its product with a query quantized to uint8 (``DynamicQuantizeLinear``,
    ``MatMulInteger``)."""

    session: Any
    scales: NDArray[np.float32]  # per row: the float value of one int8 step
    l1: NDArray[np.float32]  # per row: the L1 norm of the dequantized row

    @classmethod
    def build(cls, matrix: NDArray[np.float32]) -> Int8Scan | None:
        """The copy and its session; None when onnxruntime or onnx is missing or the
        session cannot be made (searches then compute the float32 product alone)."""
        try:
            import onnxruntime as ort
            from onnx import TensorProto, helper, numpy_helper
        except ImportError:
            return None
        scales = (np.abs(matrix).max(axis=1) / 127.0).astype(np.float32)
        steps = np.where(scales > 0, scales, 1.0)  # a row of zeros stays zeros, bound 0
        quantized = np.clip(np.rint(matrix / steps[:, None]), -127, 127).astype(np.int8)
        l1 = (np.abs(quantized).sum(axis=1, dtype=np.int64) * scales).astype(np.float32)
        n, dim = matrix.shape
        nodes = [
            helper.make_node("DynamicQuantizeLinear", ["q"], ["qq", "q_scale", "q_zero"]),
            helper.make_node("MatMulInteger", ["qq", "w", "q_zero"], ["dot"]),
            helper.make_node("Cast", ["dot"], ["s"], to=TensorProto.FLOAT),
        ]
        graph = helper.make_graph(
            nodes,
            "int8_scan",
            [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, dim])],
            [
                helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, n]),
                helper.make_tensor_value_info("q_scale", TensorProto.FLOAT, []),
            ],
            [numpy_helper.from_array(np.ascontiguousarray(quantized.T), "w")],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # one thread, no spinning: the scan runs beside keyword search (engine.py)
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(
                model.SerializeToString(), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            log.warning("int8 vector scan unavailable, scanning float32: %s", exc)
            return None
        return cls(session, scales, l1)

    def scores(self, q: NDArray[np.float32]) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """(int8 score, bound) per row: ``|exact − int8| ≤ bound``.

        The int8 score is the exact product of the dequantized row ``w'`` and the
        dequantized query ``q'`` (integer arithmetic, then two scales), so
        ``q·w − q'·w' = (q − q')·w' + q·(w − w')``, at most ``q_scale/2 · |w'|₁ +
        row_scale/2 · |q|₁``, plus float32 rounding.
        """
        dot, q_scale = self.session.run(None, {"q": q[None, :]})
        step = np.float32(q_scale)
        approx: NDArray[np.float32] = dot[0] * (self.scales * step)
        half_q = np.float32(np.abs(q).sum() / 2)
        bound: NDArray[np.float32] = (step / 2) * self.l1 + self.scales * half_q
        return approx, bound + np.float32(_ROUNDING)

    def search(
        self,
        matrix: NDArray[np.float32],
        q: NDArray[np.float32],
        mask: NDArray[np.bool_] | None,
        k: int,
    ) -> tuple[NDArray[np.intp], NDArray[np.float32]]:
        """The rows and exact scores :meth:`VectorMatrix.nearest` gives, found through
        the int8 scores (module docstring)."""
        approx, bound = self.scores(q)
        if mask is not None:
            approx = np.where(mask, approx, -np.inf)
        allowed = len(approx) if mask is None else int(mask.sum())
        k = min(k, allowed)
        if k <= 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
        first = _top(approx, min(allowed, k * INT8_OVERSAMPLE))
        exact = _dot(matrix[first], q)
        kth = np.partition(exact, len(exact) - k)[len(exact) - k]
        # every row that could reach the k-th exact score, ties included (the bound holds)
        maybe = np.flatnonzero(approx + bound >= kth)
        rows = np.union1d(first, maybe)
        if len(rows) > len(first):
            exact = _dot(matrix[rows], q)
        else:
            exact = exact[np.argsort(first)]
            rows = np.sort(first)
        best = _top(exact, k)
        return rows[best], exact[best]
