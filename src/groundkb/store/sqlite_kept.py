"""Keyword candidates from scores kept in memory, in a process that searches many times.

FTS5 answers a candidate query (``Store.keyword_candidates``: any of the phrases, or all
the phrases of a group, best ``limit`` by BM25) by scoring every chunk that matches and
sorting: at 100k chunks 2.3 ms for the phrases and 1.2 ms for the pairs of common words
at the median, the largest single cost of a keyword search. FTS5's ``bm25()`` adds one
term per phrase of the query, and a term depends only on its phrase, the chunk and the
index. So :class:`KeptScores` asks FTS5 once for every chunk's score of one *unit* (a
phrase, or a group of phrases joined by AND), with that unit alone as the query, keeps
it as two numpy arrays (row ids, scores), and answers a candidate query by adding up
its units' arrays and taking the best. The same chunks come back with the same scores:

- a chunk's score for the phrases is the sum of its phrases' scores, added in the
  query's order as FTS5 adds them, to the last bit;
- for groups FTS5 counts a phrase once for every group the chunk holds whole (a group it
  holds only in part adds nothing), which is the sum of those groups' scores; the sum is
  associated another way, so it may differ from FTS5's in the last bit;
- equal scores keep the lower row id, as FTS5's sort does;
- filters keep the rows of the documents they allow (one query per filter, kept), and a
  unit's score counts every chunk for its IDF, as FTS5's does behind a join.

The store uses it only where the typo vocabulary is loaded for the index as it is now:
a process that warmed up (``serve``, a program that searches many times). A CLI search
asks once and reads FTS5 as before, as does an install without numpy. A question with a
unit not yet kept reads the unit first: one FTS5 query over the chunks that hold it,
which costs a little more than the candidate query would have (``bm25()`` is most of
both: about 2.5 µs a chunk, against 0.5 µs to match one). A process warming up reads
ahead (``SQLiteStore.read_ahead``): every word's unit, most frequent first, and then
every chunk's row, each while half of its budget holds them, so that a question's first
asking reads little or nothing. Units are dropped least
recently used first past half of the ``kept_scores_mb`` setting (64 MiB of its 128 by
default; 16 bytes a chunk that holds a unit), and all of them when the index changes.
The candidates' rows (their text and fields) are kept the same way, in the other half;
``kept_scores_mb`` 0 turns all of it off. Measured in docs/benchmarks.md ("Candidate scores
kept in memory"), with what was tried and dropped.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from ..models import Filters
from .sqlite_query import filter_sql

Query = Callable[[str, Sequence[Any]], list[Any]]
# ("unit", FTS5 expression, column weights) or ("allowed", filters, ())
Wanted = tuple[str, Any, tuple[float, ...]]

# Defaults; the store gives each half of the ``kept_scores_mb`` setting (128).
MAX_BYTES = 64 << 20  # the kept units' arrays, per store
MAX_ROW_BYTES = 64 << 20  # the kept candidate rows (their text and fields), per store
MAX_FILTERS = 16  # kept masks of allowed rows
UNIT_SQL = "SELECT rowid, -bm25(chunks_fts, ?, ?, ?, ?, ?) FROM chunks_fts WHERE chunks_fts MATCH ?"


@cache
def available() -> bool:
    """Whether numpy is installed (the ``embed`` and ``postgres`` extras bring it)."""
    return importlib.util.find_spec("numpy") is not None


class KeptScores:
    """Units' scores in every chunk that holds them, for one state of the index (its
    change token). Thread-safe."""

    def __init__(
        self, token: str, max_bytes: int = MAX_BYTES, max_row_bytes: int = MAX_ROW_BYTES
    ) -> None:
        self.token = token
        self.max_bytes = max_bytes
        self.max_row_bytes = max_row_bytes
        self._units: OrderedDict[tuple[str, tuple[float, ...]], tuple[Any, Any]] = OrderedDict()
        self._allowed: OrderedDict[Filters, Any] = OrderedDict()
        self._rows: OrderedDict[int, tuple[Any, ...]] = OrderedDict()
        self._keys: dict[tuple[str, int], int] = {}  # a kept row's (doc id, index) → row id
        self._bytes = 0
        self._row_bytes = 0
        self._lock = threading.Lock()
        self.reads = 0  # units read from FTS5 (for tests and metrics)

    def best(
        self,
        units: Sequence[str],
        weights: Sequence[float],
        filters: Filters,
        limit: int,
    ) -> list[tuple[int, float]] | None:
        """The ``limit`` chunks with the highest sum of the scores of the ``units``
        they hold (FTS5 expressions), as (row id, score), best first; None unless every
        unit (and the filters' rows) is kept: :meth:`missing` says what to read."""
        import numpy as np

        from .exact import top_indices  # numpy's, imported with it

        weights = tuple(weights)
        with self._lock:
            kept = [self._units.get((unit, weights)) for unit in units]
            allowed = self._allowed.get(filters) if not filters.is_empty() else None
            if (allowed is None and not filters.is_empty()) or None in kept:
                return None
            for unit in units:
                self._units.move_to_end((unit, weights))
        parts = [p for p in kept if p is not None and len(p[0])]
        if not parts or limit <= 0:
            return []
        size = max(int(rows[-1]) for rows, _ in parts) + 1  # FTS5 gives row ids in order
        total = np.zeros(size)
        held = np.zeros(size, dtype=bool)
        for rows, scores in parts:  # a unit's rows are distinct: no add is lost
            total[rows] += scores
            held[rows] = True
        found = np.flatnonzero(held)
        if allowed is not None:
            found = found[found < len(allowed)]
            found = found[allowed[found]]
        scores = total[found]
        best = top_indices(scores, limit)  # equal scores in row order, as FTS5's sort
        return list(zip(found[best].tolist(), scores[best].tolist(), strict=True))

    def missing(
        self, units: Sequence[str], weights: Sequence[float], filters: Filters
    ) -> list[Wanted]:
        """What :meth:`best` lacks to answer, for :meth:`read`."""
        weights = tuple(weights)
        with self._lock:
            wanted: list[Wanted] = [
                ("unit", unit, weights) for unit in units if (unit, weights) not in self._units
            ]
            if not filters.is_empty() and filters not in self._allowed:
                wanted.append(("allowed", filters, ()))
        return wanted

    def read(self, query: Query, wanted: Wanted) -> None:
        """Read one thing :meth:`missing` named and keep it (``query`` must see the
        index in the state of this object's token)."""
        import numpy as np

        kind, what, weights = wanted
        if kind == "allowed":
            assert isinstance(what, Filters)
            where, args = filter_sql(what)
            rows = query(
                f"SELECT c.rowid FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE {where}",
                args,
            )
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            mask = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
            mask[ids] = True
            with self._lock:
                self._allowed[what] = mask
                while len(self._allowed) > MAX_FILTERS:
                    self._allowed.popitem(last=False)
            return
        assert isinstance(what, str)
        rows = query(UNIT_SQL, [*weights, what])
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        scores = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        key = (what, weights)
        with self._lock:
            self.reads += 1
            if key not in self._units:
                self._units[key] = (ids, scores)
                self._bytes += ids.nbytes + scores.nbytes
                while self._bytes > self.max_bytes and len(self._units) > 1:
                    _, (old_ids, old_scores) = self._units.popitem(last=False)
                    self._bytes -= old_ids.nbytes + old_scores.nbytes

    def keep_rows(self, rows: Sequence[Sequence[Any]], up_to: int) -> bool:
        """Keep ``rows`` (row id first) read ahead of any question, while the kept rows
        take at most ``up_to`` bytes; whether there is room for more."""
        with self._lock:
            for row in rows:
                if self._row_bytes >= up_to:
                    return False
                if row[0] not in self._rows:
                    self._keep_row(tuple(row))
            return self._row_bytes < up_to

    def rows_of(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], tuple[Any, ...]]:
        """The kept rows of the chunks ``keys`` ((doc id, index) pairs) that are kept."""
        found: dict[tuple[str, int], tuple[Any, ...]] = {}
        with self._lock:
            for key in keys:
                rowid = self._keys.get(key)
                if rowid is not None:
                    self._rows.move_to_end(rowid)
                    found[key] = self._rows[rowid]
        return found

    def _keep_row(self, row: tuple[Any, ...]) -> None:
        """Keep one row (under the lock; the caller checked it is not kept)."""
        self._rows[row[0]] = row
        self._keys[(row[1], row[2])] = row[0]
        self._row_bytes += _row_bytes(row)

    def _forget_rows(self) -> None:
        """Drop the least recently used rows past the budget (under the lock)."""
        while self._row_bytes > self.max_row_bytes and self._rows:
            _, old = self._rows.popitem(last=False)
            self._keys.pop((old[1], old[2]), None)
            self._row_bytes -= _row_bytes(old)

    @property
    def unit_bytes(self) -> int:
        """What the kept units' arrays take."""
        return self._bytes

    def rows(
        self, ids: Sequence[int], read: Callable[[list[int]], list[Any]]
    ) -> list[tuple[Any, ...]]:
        """The rows of the chunks ``ids`` (row id first) in row id order: the kept ones
        from memory, the others from ``read`` (kept from then on)."""
        found: dict[int, tuple[Any, ...]] = {}
        with self._lock:
            for i in ids:
                row = self._rows.get(i)
                if row is not None:
                    self._rows.move_to_end(i)
                    found[i] = row
        missing = [i for i in ids if i not in found]
        if missing:
            fresh = [tuple(r) for r in read(missing)]
            with self._lock:
                for row in fresh:
                    found[row[0]] = row
                    if row[0] not in self._rows:
                        self._keep_row(row)
                self._forget_rows()
        return [found[i] for i in sorted(found)]


def _row_bytes(row: tuple[Any, ...]) -> int:
    """What a kept row takes in memory: its tuple and the objects only it holds."""
    return sys.getsizeof(row) + sum(sys.getsizeof(v) for v in row if isinstance(v, str | bytes))
