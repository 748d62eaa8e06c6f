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
score, not an approximation of it. The scores, the bounds and the best rows come out of
one onnxruntime call (its ``TopK``): numpy never passes over all the rows.
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

# Rows from which a search scans the int8 copy first. Below, the float32 product is as
# fast (per search, top 50 of 384-wide rows, float32 against int8: 0.14 vs 0.17 ms at 2k
# rows, 0.26 vs 0.21 at 4k, 0.67 vs 0.49 at 10k, 1.65 vs 1.04 at 20k, 8.1 vs 3.6 at 100k;
# docs/benchmarks.md). The copy costs a quarter of the matrix's memory (more while
# onnxruntime packs it) and 0.01 s to build at 5k rows, 0.5 s at 100k.
INT8_MIN_ROWS = 5_000
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
        if not self._int8_wanted():
            return state.scan
        with state.lock:
            state.searches += 1
            if state.searches < 3 or state.started:
                return None
            state.started = True
        # Not a daemon: a process that exits while the build is inside onnxruntime would
        # abort (SIGABRT) as the killed thread unwinds through onnxruntime's frames; exit
        # waits for the build instead (0.5 s at 100k rows).
        threading.Thread(target=self._build_int8, name="groundkb-int8").start()
        return None

    def prepare_int8(self) -> None:
        """Build the int8 copy now, on the calling thread (a server warming up), instead
        of at the third search, where the build ran beside the first searches (on the
        tldr pages, 37,490 rows, the first 20 searches after warming up took 335 ms in
        all instead of 190; docs/benchmarks.md). Does nothing where :attr:`int8` would
        build none."""
        state = self._int8
        if not self._int8_wanted():
            return
        with state.lock:
            if state.started:
                return
            state.started = True
        self._build_int8()

    def _int8_wanted(self) -> bool:
        """Whether an int8 copy is still to build: allowed, large enough, not built."""
        return self._int8.scan is None and self.int8_allowed and len(self.ids) >= INT8_MIN_ROWS

    def _build_int8(self) -> None:
        state = self._int8
        try:
            scan = Int8Scan.build(self.matrix)
            if scan is not None and len(self.ids):
                # onnxruntime prepares the session at its first run (8.9 ms on SciFact's
                # 5,746 rows, 0.3-0.5 ms a run after): here, not in a search
                scan.search(self.matrix, self.matrix[0], None, 1)
            state.scan = scan
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
            if mask is None:
                rows = top_indices(sims, k)
            else:  # among the rows the filters allow, in row order
                allowed = np.flatnonzero(mask)
                rows = allowed[top_indices(sims[allowed], k)]
            return [(self.ids[i], float(sims[i])) for i in rows]
        rows, exact = scan.search(self.matrix, q, mask, k)
        return [(self.ids[i], float(s)) for i, s in zip(rows, exact, strict=True)]


def top_indices(scores: NDArray[Any], k: int) -> NDArray[np.intp]:
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
    """An int8 copy of a matrix (a scale per row) and an onnxruntime session that, for
    a query, computes every row's int8 score and error bound and the rows of the best
    int8 scores (``DynamicQuantizeLinear``, ``MatMulInteger``, ``TopK``): one call, no
    pass of numpy over all the rows."""

    session: Any
    rows: int
    no_mask: NDArray[np.float32]  # zeros: the penalty input of an unfiltered search

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
        node = helper.make_node
        nodes = [
            node("DynamicQuantizeLinear", ["q"], ["qq", "q_scale", "q_zero"]),
            node("MatMulInteger", ["qq", "w", "q_zero"], ["dot"]),
            node("Cast", ["dot"], ["dot_f"], to=TensorProto.FLOAT),
            node("Mul", ["dot_f", "scales"], ["row_scaled"]),
            node("Mul", ["row_scaled", "q_scale"], ["approx"]),
            # bound = q_scale/2 · |w'|₁ + row_scale · |q|₁/2 + rounding (see ``scores``)
            node("Mul", ["q_scale", "half"], ["half_step"]),
            node("Mul", ["l1", "half_step"], ["from_q"]),
            node("ReduceL1", ["q"], ["q_l1"], keepdims=0),
            node("Mul", ["q_l1", "half"], ["half_q"]),
            node("Mul", ["scales", "half_q"], ["from_w"]),
            node("Add", ["from_q", "from_w"], ["both"]),
            node("Add", ["both", "rounding"], ["bound"]),
            node("Add", ["approx", "penalty"], ["allowed"]),  # -inf: a row filtered out
            node("Add", ["allowed", "bound"], ["upper"]),
            node("TopK", ["allowed", "k"], ["top_scores", "top_rows"], largest=1, sorted=0),
        ]
        row = [1, n]
        graph = helper.make_graph(
            nodes,
            "int8_scan",
            [
                helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, dim]),
                helper.make_tensor_value_info("penalty", TensorProto.FLOAT, row),
                helper.make_tensor_value_info("k", TensorProto.INT64, [1]),
            ],
            [
                helper.make_tensor_value_info("top_scores", TensorProto.FLOAT, [1, None]),
                helper.make_tensor_value_info("top_rows", TensorProto.INT64, [1, None]),
                helper.make_tensor_value_info("upper", TensorProto.FLOAT, row),
                helper.make_tensor_value_info("approx", TensorProto.FLOAT, row),
                helper.make_tensor_value_info("bound", TensorProto.FLOAT, row),
            ],
            [
                numpy_helper.from_array(np.ascontiguousarray(quantized.T), "w"),
                numpy_helper.from_array(scales[None, :], "scales"),
                numpy_helper.from_array(l1[None, :], "l1"),
                numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
                numpy_helper.from_array(np.array(_ROUNDING, dtype=np.float32), "rounding"),
            ],
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
        return cls(session, n, np.zeros((1, n), dtype=np.float32))

    def scores(self, q: NDArray[np.float32]) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """(int8 score, bound) per row: ``|exact − int8| ≤ bound``.

        The int8 score is the exact product of the dequantized row ``w'`` and the
        dequantized query ``q'`` (integer arithmetic, then two scales), so
        ``q·w − q'·w' = (q − q')·w' + q·(w − w')``, at most ``q_scale/2 · |w'|₁ +
        row_scale/2 · |q|₁``, plus float32 rounding.
        """
        approx, bound = self.session.run(["approx", "bound"], self._feed(q, self.no_mask, 1))
        return approx[0], bound[0]

    def _feed(self, q: NDArray[np.float32], penalty: NDArray[np.float32], k: int) -> Any:
        return {"q": q[None, :], "penalty": penalty, "k": np.array([k], dtype=np.int64)}

    def search(
        self,
        matrix: NDArray[np.float32],
        q: NDArray[np.float32],
        mask: NDArray[np.bool_] | None,
        k: int,
    ) -> tuple[NDArray[np.intp], NDArray[np.float32]]:
        """The rows and exact scores :meth:`VectorMatrix.nearest` gives, found through
        the int8 scores (module docstring)."""
        if mask is None:
            allowed, penalty = self.rows, self.no_mask
        else:
            allowed = int(mask.sum())
            penalty = np.where(mask, np.float32(0), np.float32(-np.inf))[None, :]
        k = min(k, allowed)
        if k <= 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
        want = min(allowed, k * INT8_OVERSAMPLE)
        top_scores, top_rows, upper = self.session.run(
            ["top_scores", "top_rows", "upper"], self._feed(q, penalty, want)
        )
        first = np.sort(top_rows[0][np.isfinite(top_scores[0])]).astype(np.intp)
        exact = _dot(matrix[first], q)
        kth = np.partition(exact, len(exact) - k)[len(exact) - k]
        # every row that could reach the k-th exact score, ties included (the bound holds)
        maybe = np.flatnonzero(upper[0] >= kth)
        rows = np.union1d(first, maybe)
        if len(rows) > len(first):
            exact = _dot(matrix[rows], q)
        best = top_indices(exact, k)
        return rows[best], exact[best]
