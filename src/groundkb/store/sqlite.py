"""SQLite store: one file, WAL, FTS5 for keywords, exact vector search with numpy.

The schema is in ``sqlite_schema.py``; an older file is migrated when opened. One
connection behind a lock serves every thread of a process (SQLite allows one writer at
a time anyway); other processes open their own and read while one writes (WAL).

- ``change_token`` is ``PRAGMA data_version`` (changes when another connection commits)
  with a counter of this connection's own commits: no write is needed to keep it.
- Term statistics come from FTS5 itself (its totals record, ``chunks_vocab`` look-ups
  per term); the whole vocabulary, for typo correction, is loaded once per change token.
- Keyword candidates come from FTS5's ``bm25()``; in a process that has loaded the
  vocabulary (one that searches many times), from each phrase's scores kept in memory
  (``sqlite_kept.py``): the same candidates, several times faster for words asked before.
- ``nearest`` multiplies a numpy matrix of every vector (``exact.py``), also built once
  per change token, and mapped from the cache folder where an earlier process kept it
  for the same content (``kept_vectors.py``).
- Both are rebuilt like the search engine's derived data (``refreshing.py``): after
  this store's own writes before the next read; after another process's, in the
  background at a bounded rate, the previous version answering meanwhile (so a server
  keeps its pace while another process ingests).

Every ``sqlite3`` error becomes a :class:`~groundkb.errors.StoreError`.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import Conflict, InvalidInput, StoreError
from ..models import Chunk, Document, Filters, Source, SourceInfo, Stats
from ..refreshing import Refreshing
from . import migrations, sqlite_kept, sqlite_query, sqlite_vectors
from .base import (
    FIELDS,
    DocMetadata,
    DocSummary,
    KeywordMatch,
    KeywordQuery,
    SimilarTerm,
    StoredDoc,
    TermStats,
    WriteResult,
    chunk_key,
)
from .rows import (
    DOC_COLUMNS,
    analyzed,
    check_chunks,
    check_meta_key,
    doc_row,
    document,
    now,
    similar,
    starting_with,
    summary,
)
from .sqlite_kept import KeptScores
from .sqlite_query import (
    MATCH_COLS,
    SUMMARY_COLS,
    Vocabulary,
    allowed_terms,
    filter_sql,
    fts_phrase,
    match_row,
    where_clause,
)
from .sqlite_schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Migrator,
    check_tokenizer,
    mark_content,
    record_tokenizer,
    schema_version,
)

if TYPE_CHECKING:
    from .exact import VectorMatrix

log = logging.getLogger(__name__)


class SQLiteStore:
    """The embedded default store (see the module docstring)."""

    backend = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        migrate: bool = True,
        int8_vectors: bool = True,
        kept_scores_mb: int = 128,
    ) -> None:
        self.location = self.path = str(path)
        self._lock = threading.RLock()
        self._token_lock = threading.Lock()
        self._token_db: sqlite3.Connection | None = None
        self._commits = 0
        self._vocab: Refreshing[str, Vocabulary] = Refreshing(
            self.change_token, self._load_vocabulary
        )
        self._kept: KeptScores | None = None
        self._kept_lock = threading.Lock()
        self._kept_bytes = max(0, kept_scores_mb) << 20  # half for scores, half for rows
        # first letter -> (change token, its terms, their chunk counts): typo correction
        # before the whole vocabulary is loaded (``similar_terms``)
        self._letters: dict[str, tuple[str, list[str], dict[str, int]]] = {}
        self._int8_vectors = int8_vectors
        self._keep_matrix = True  # the first load may keep the matrix (``kept_vectors.py``)
        self._matrix: Refreshing[str, VectorMatrix] = Refreshing(
            self.change_token, self._load_matrix
        )
        self.migrated: tuple[int, int] | None = None  # (before, after) when opening migrated
        if self.path != ":memory:":
            if read_only and not Path(self.path).exists():
                raise InvalidInput(f"no index at {self.path}: run `groundkb ingest` first")
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder of {self.path}: {exc}") from exc
        try:
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA busy_timeout = 30000")
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA cache_size = -65536")
            if migrate:
                self.migrated = migrations.migrate(Migrator(self._db, self.path), MIGRATIONS)
                with self._tx(changes_data=False) as db:  # only what a new index lacks
                    record_tokenizer(db, now())
            else:
                migrations.check_current(schema_version(self._db), MIGRATIONS, self.path)
            check_tokenizer(self._db, self.path)
            # The change marker comes from a connection of its own: asking for it never
            # waits for a long read on the main connection (a search's vector side on a
            # worker thread asks while the caller's thread reads keyword candidates).
            # Every commit on the main connection counts as another connection's there.
            self._token_db = (
                sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                if self.path != ":memory:"
                else None
            )
        except sqlite3.Error as exc:
            self._db.close()
            if "not a database" in str(exc):
                raise StoreError(f"{self.path} is not a groundkb index ({exc})") from exc
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        except BaseException:
            self._db.close()
            raise

    # ----------------------------------------------------------------- lifecycle
    def close(self) -> None:
        with self._lock, self._token_lock:
            self._db.close()
            if self._token_db is not None:
                self._token_db.close()

    @contextmanager
    def _tx(self, changes_data: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction; ``changes_data=False`` for one that leaves every read the
        same (the caches keyed on the change token stay valid)."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot write to {self.path}: {exc}") from exc
            try:
                yield self._db
                if changes_data:
                    mark_content(self._db)
                self._db.execute("COMMIT")
                if changes_data:
                    self._commits += 1
                    self._vocab.invalidate()  # read your own writes
                    self._matrix.invalidate()
            except sqlite3.Error as exc:
                self._rollback()
                raise StoreError(f"{self.path}: {exc}") from exc
            except BaseException:
                self._rollback()
                raise

    def optimize(self) -> None:
        # FTS5 adds a segment (a b-tree) per committed write and merges them by levels,
        # so a freshly ingested index holds 10-20 of them and a term is looked up in
        # each. Merged into one, the candidate query takes 10-39 % less time (100k
        # chunks, the tldr pages, SciFact, eight APIs; docs/benchmarks.md).
        with self._tx(changes_data=False) as db:
            db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
        # The merge is one transaction as large as the keyword index: give the write-ahead
        # log's space back (a reader still on an older snapshot may keep it).
        with self._lock, suppress(sqlite3.Error):
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def _rollback(self) -> None:
        with suppress(sqlite3.Error):  # the transaction may already be gone
            self._db.execute("ROLLBACK")

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Several reads that must see one state (a read transaction)."""
        with self._lock:
            try:
                self._db.execute("BEGIN")
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc
            try:
                yield
            finally:
                self._rollback()

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc

    def change_token(self) -> str:
        db, lock = (self._db, self._lock) if self._token_db is None else (
            self._token_db, self._token_lock)  # fmt: skip
        with lock:
            try:
                version = db.execute("PRAGMA data_version").fetchone()[0]
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc
            return f"{version}.{self._commits}"

    def content_token(self) -> str | None:
        if self._token_db is None:  # an index in memory: nothing outlives the process
            return None
        db, lock = self._token_db, self._token_lock
        with lock:
            try:
                row = db.execute("SELECT value FROM meta WHERE key = 'content'").fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc
        return f"sqlite:{row[0]}" if row else None

    def _meta(self, *keys: str) -> dict[str, str]:
        marks = ",".join("?" * len(keys))
        return dict(self._query(f"SELECT key, value FROM meta WHERE key IN ({marks})", keys))

    def get_meta(self, key: str) -> str | None:
        return self._meta(key).get(key)

    def set_meta(self, key: str, value: str | None) -> None:
        check_meta_key(key)
        with self._tx() as db:
            if value is None:
                db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                db.execute(
                    "INSERT INTO meta(key, value) VALUES(?, ?)"
                    " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def stats(self) -> Stats:
        by_type = dict(self._query("SELECT type, count(*) FROM documents GROUP BY type"))
        size = 0
        if self.path != ":memory:":
            size = sum(
                os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p)
            )
        return Stats(
            path=self.path,
            backend=self.backend,
            schema_version=SCHEMA_VERSION,
            documents=sum(by_type.values()),
            chunks=int(self._query("SELECT count(*) FROM chunks")[0][0]),
            sources=int(self._query("SELECT count(*) FROM sources")[0][0]),
            by_type=by_type,
            size_bytes=size,
        )

    # ------------------------------------------------------------------- sources
    def put_source(self, source: Source) -> None:
        stamp = now()
        with self._tx() as db:
            db.execute(
                "INSERT INTO sources(name, kind, location, groups, created_at, updated_at) "
                "VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET kind = excluded.kind,"
                " location = excluded.location, groups = excluded.groups,"
                " updated_at = excluded.updated_at",
                (
                    source.name,
                    source.kind,
                    source.location,
                    json.dumps(source.groups),
                    stamp,
                    stamp,
                ),
            )

    def sources(self) -> list[SourceInfo]:
        rows = self._query(
            "SELECT s.name, s.kind, s.location, s.groups, s.updated_at,"
            " (SELECT count(*) FROM documents d WHERE d.source = s.name),"
            " (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id"
            "   WHERE d.source = s.name)"
            " FROM sources s ORDER BY s.name"
        )
        return [
            SourceInfo(Source(n, k, loc, tuple(json.loads(g))), docs, chunks, updated)
            for n, k, loc, g, updated, docs, chunks in rows
        ]

    def delete_source(self, name: str) -> int:
        with self._tx() as db:
            n = db.execute("SELECT count(*) FROM documents WHERE source = ?", (name,)).fetchone()[0]
            db.execute("DELETE FROM documents WHERE source = ?", (name,))
            db.execute("DELETE FROM sources WHERE name = ?", (name,))
        return int(n)

    # ----------------------------------------------------------------- documents
    def doc_states(self, source: str) -> dict[str, StoredDoc]:
        rows = self._query(
            "SELECT id, content_hash, origin, origin_hash FROM documents WHERE source = ?",
            (source,),
        )
        return {r[0]: StoredDoc(*r) for r in rows}

    def _in_batches(self, sql: str, ids: Sequence[Any], args: Sequence[Any] = ()) -> list[Any]:
        """Run ``sql`` (with one ``{marks}`` placeholder list, then ``args``) over ids,
        500 at a time."""
        out: list[Any] = []
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            out += self._query(sql.format(marks=",".join("?" * len(part))), [*part, *args])
        return out

    def owners(self, doc_ids: Iterable[str]) -> dict[str, str]:
        rows = self._in_batches(
            "SELECT id, source FROM documents WHERE id IN ({marks})", list(doc_ids)
        )
        return {r[0]: r[1] for r in rows}

    def write(self, doc: Document, chunks: Sequence[Chunk]) -> WriteResult:
        check_chunks(doc, chunks)
        with self._tx() as db:
            row = db.execute(
                "SELECT source, content_hash FROM documents WHERE id = ?", (doc.id,)
            ).fetchone()
            if row and row[0] != doc.source:
                raise Conflict(f"document id {doc.id!r} already belongs to source {row[0]!r}")
            if not db.execute("SELECT 1 FROM sources WHERE name = ?", (doc.source,)).fetchone():
                raise InvalidInput(f"no source named {doc.source!r}: put the source first")
            status: Literal["inserted", "updated"] = "inserted" if row is None else "updated"
            updates = ", ".join(f"{c}=excluded.{c}" for c in DOC_COLUMNS[2:])
            db.execute(
                f"INSERT INTO documents({', '.join(DOC_COLUMNS)})"
                f" VALUES({','.join('?' * len(DOC_COLUMNS))})"
                f" ON CONFLICT(id) DO UPDATE SET {updates}",
                doc_row(doc),
            )
            existing = {
                idx: (rowid, h)
                for rowid, idx, h in db.execute(
                    "SELECT rowid, idx, chunk_hash FROM chunks WHERE doc_id = ?", (doc.id,)
                )
            }
            written = 0
            for c in chunks:
                old = existing.get(c.index)
                if old and old[1] == c.chunk_hash:
                    continue
                if old:
                    rowid = old[0]
                    db.execute(
                        "UPDATE chunks SET header_path=?, text=?, chunk_hash=? WHERE rowid=?",
                        (c.header_path, c.text, c.chunk_hash, rowid),
                    )
                    db.execute("DELETE FROM chunks_fts WHERE rowid = ?", (rowid,))
                else:
                    cur = db.execute(
                        "INSERT INTO chunks(doc_id, idx, header_path, text, chunk_hash)"
                        " VALUES(?,?,?,?,?)",
                        (doc.id, c.index, c.header_path, c.text, c.chunk_hash),
                    )
                    rowid = cur.lastrowid
                db.execute(
                    "INSERT INTO chunks_fts(rowid, title, aliases, keywords, header, body)"
                    " VALUES(?,?,?,?,?,?)",
                    (rowid, *analyzed(doc, c)),
                )
                written += 1
            stale = [rowid for idx, (rowid, _) in existing.items() if idx >= len(chunks)]
            db.executemany("DELETE FROM chunks WHERE rowid = ?", [(r,) for r in stale])
            if row and row[1] == doc.content_hash and not written and not stale:
                return WriteResult("unchanged", 0, 0)
        return WriteResult(status, written, len(stale))

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        ids = list(dict.fromkeys(doc_ids))
        if not ids:
            return 0
        deleted = 0
        with self._tx() as db:
            for i in range(0, len(ids), 500):
                part = ids[i : i + 500]
                cur = db.execute(
                    f"DELETE FROM documents WHERE id IN ({','.join('?' * len(part))})", part
                )
                deleted += cur.rowcount
        return deleted

    def documents(self, doc_ids: Sequence[str], filters: Filters = Filters()) -> list[Document]:
        ids = list(dict.fromkeys(doc_ids))
        cols = ", ".join(DOC_COLUMNS)
        where, args = filter_sql(filters)
        rows = self._in_batches(
            f"SELECT {cols} FROM documents d WHERE id IN ({{marks}})"
            + (f" AND {where}" if where else ""),
            ids,
            args,
        )
        found = {r[0]: document(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def chunks(self, doc_ids: Sequence[str], filters: Filters = Filters()) -> list[Chunk]:
        ids = list(dict.fromkeys(doc_ids))
        where, args = filter_sql(filters)
        sql = "SELECT c.doc_id, c.idx, c.text, c.header_path, c.chunk_hash FROM chunks c"
        if where:
            sql += " JOIN documents d ON d.id = c.doc_id WHERE c.doc_id IN ({marks}) AND " + where
        else:
            sql += " WHERE c.doc_id IN ({marks})"
        rows = self._in_batches(sql, ids, args)
        order = {d: i for i, d in enumerate(ids)}
        rows.sort(key=lambda r: (order[r[0]], r[1]))
        return [Chunk(*r) for r in rows]

    def list_documents(
        self, filters: Filters, limit: int = 100, offset: int = 0
    ) -> list[DocSummary]:
        where, args = where_clause(filters)
        rows = self._query(
            f"SELECT {SUMMARY_COLS} FROM documents d{where} ORDER BY d.id LIMIT ? OFFSET ?",
            [*args, limit, offset],
        )
        return [summary(r) for r in rows]

    def count_documents(self, filters: Filters) -> int:
        where, args = where_clause(filters)
        return int(self._query(f"SELECT count(*) FROM documents d{where}", args)[0][0])

    def document_metadata(self, filters: Filters) -> list[DocMetadata]:
        where, args = where_clause(filters)
        rows = self._query(
            f"SELECT d.id, d.source, d.type, d.title, d.metadata FROM documents d{where}"
            " ORDER BY d.id",
            args,
        )
        return [DocMetadata(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def flagged_documents(self, filters: Filters, key: str) -> list[str]:
        where, args = where_clause(filters)
        path = "$." + json.dumps(key)  # a quoted label: any key, dots and all
        test = "json_type(d.metadata, ?) = 'true'"
        rows = self._query(
            f"SELECT d.id FROM documents d{where} {'AND' if where else 'WHERE'} {test}"
            " ORDER BY d.id",
            [*args, path],
        )
        return [r[0] for r in rows]

    # -------------------------------------------------------------------- keyword
    def keyword_candidates(self, query: KeywordQuery) -> list[KeywordMatch]:
        phrases = sorted({p for p in query.phrases if p})
        groups = sorted({g for g in query.together if g and all(g)})
        if not ((phrases and query.limit > 0) or (groups and query.together_limit > 0)):
            return []
        weights = [float(query.weights.get(f, 1.0)) for f in FIELDS]
        where, args = filter_sql(query.filters)
        if where:
            sql = (
                "SELECT f.rowid, -bm25(chunks_fts, ?, ?, ?, ?, ?) AS s FROM chunks_fts f"
                " JOIN chunks c ON c.rowid = f.rowid JOIN documents d ON d.id = c.doc_id"
                f" WHERE chunks_fts MATCH ? AND {where} ORDER BY s DESC LIMIT ?"
            )
        else:
            sql = (
                "SELECT rowid, -bm25(chunks_fts, ?, ?, ?, ?, ?) AS s FROM chunks_fts"
                " WHERE chunks_fts MATCH ? ORDER BY s DESC LIMIT ?"
            )
        phrase_units = [fts_phrase(p) for p in phrases]
        group_units = [" AND ".join(fts_phrase(p) for p in g) for g in groups]
        with self._snapshot():
            kept = self._kept_scores()

            def best(units: list[str], limit: int, match: str) -> list[tuple[int, float]]:
                if kept is not None:
                    for item in kept.missing(units, weights, query.filters):
                        kept.read(self._query, item)
                    found = kept.best(units, weights, query.filters, limit)
                    if found is not None:  # None: the budget let a unit go meanwhile
                        return found
                return self._query(sql, [*weights, match, *args, limit])

            scores: dict[int, float] = {}
            later: set[int] = set()
            if phrases and query.limit > 0:
                scores.update(best(phrase_units, query.limit, " OR ".join(phrase_units)))
            if groups and query.together_limit > 0:
                match = " OR ".join(f"({u})" for u in group_units)
                more = best(group_units, query.together_limit, match)
                later = {rowid for rowid, _ in more if rowid not in scores}
                scores.update((rowid, s) for rowid, s in more if rowid in later)
            if not scores:
                return []

            def read(ids: list[int]) -> list[Any]:
                return self._query(
                    f"SELECT {MATCH_COLS} FROM chunks c JOIN chunks_fts f ON f.rowid = c.rowid"
                    f" JOIN documents d ON d.id = c.doc_id WHERE c.rowid IN"
                    f" ({','.join('?' * len(ids))})",
                    ids,
                )

            rows = kept.rows(list(scores), read) if kept is not None else read(list(scores))
        # Best first: the phrases' matches, then the groups' (their scores are BM25 over
        # other phrases); equal scores in the order the chunks were written.
        rows.sort(key=lambda r: (r[0] in later, -scores[r[0]]))
        return [match_row(r, scores[r[0]]) for r in rows]

    def _kept_scores(self) -> KeptScores | None:
        """Candidate scores kept in memory (``sqlite_kept.py``), where the vocabulary is
        loaded for the index as it is now: a process that searches many times."""
        if not self._kept_bytes:
            return None
        vocab = self._loaded_vocabulary()
        if vocab is None or not sqlite_kept.available():
            return None
        with self._kept_lock:
            if self._kept is None or self._kept.token != vocab.token:
                half = self._kept_bytes // 2
                self._kept = KeptScores(vocab.token, max_bytes=half, max_row_bytes=half)
            return self._kept

    def read_ahead(self, weights: Mapping[str, float], max_chunks: int | None = None) -> None:
        """Keep now what the first askings of questions would read from FTS5 one by one
        (``sqlite_kept.py``), in a process whose keyword candidates come from kept scores:
        the scores of every word held by at most ``max_chunks`` chunks (None: every
        word), most frequent first, while they fit in half of the units' budget; then
        every chunk's row while the rows fit in half of theirs. Stops when the index
        changes or the store closes.

        First, where the matrix of vectors is loaded already (a hybrid warm-up loads it)
        and no chunk waits for its vector, its int8 copy is built (``exact.py``): the
        first searches would otherwise build it beside them."""
        matrix = self._matrix.peek()  # never loaded here: a keyword index needs none
        if matrix is not None and not self.count_chunks_to_embed():
            matrix.prepare_int8()
        kept = self._kept_scores()
        vocab = self._loaded_vocabulary()
        if kept is None or vocab is None or vocab.token != kept.token:
            return
        unit_weights = [float(weights.get(f, 1.0)) for f in FIELDS]
        room = kept.max_bytes // 2 - kept.unit_bytes
        df = vocab.df
        words = sorted(
            (t for t, n in df.items() if max_chunks is None or n <= max_chunks),
            key=lambda t: (-df[t], t),
        )
        try:
            for word in words:
                size = 16 * df[word]  # a row id and a score a chunk (sqlite_kept.py)
                if size > room:
                    continue
                if self._kept is not kept:
                    return
                unit = fts_phrase((word,))
                for wanted in kept.missing([unit], unit_weights, Filters()):
                    kept.read(self._query, wanted)
                room -= size
            last = -1
            while self._kept is kept:
                rows = self._query(
                    f"SELECT {MATCH_COLS} FROM chunks c JOIN chunks_fts f ON f.rowid = c.rowid"
                    " JOIN documents d ON d.id = c.doc_id WHERE c.rowid > ?"
                    " ORDER BY c.rowid LIMIT 500",
                    (last,),
                )
                if not rows or not kept.keep_rows(rows, kept.max_row_bytes // 2):
                    return
                last = rows[-1][0]
        except (StoreError, sqlite3.ProgrammingError):  # closed meanwhile
            return

    def chunk_matches(
        self, chunk_ids: Sequence[str], filters: Filters = Filters()
    ) -> list[KeywordMatch]:
        keys = list(dict.fromkeys(chunk_key(c) for c in chunk_ids))
        out: list[KeywordMatch] = []
        # rows kept for the index as it is now (sqlite_kept.py), the filters applied here
        kept = self._kept_scores()
        known = kept.rows_of(keys) if kept is not None else {}
        for row in known.values():
            m = match_row(row, 0.0)
            if filters.allows(m.doc.type, m.doc.category, m.doc.source):
                out.append(m)
        missing = [k for k in keys if k not in known]
        where, args = where_clause(filters)
        for i in range(0, len(missing), 250):
            part = missing[i : i + 250]
            rows = self._query(
                f"SELECT {MATCH_COLS} FROM (VALUES {','.join('(?,?)' for _ in part)}) v"
                " CROSS JOIN chunks c ON c.doc_id = v.column1 AND c.idx = v.column2"
                " JOIN chunks_fts f ON f.rowid = c.rowid JOIN documents d ON d.id = c.doc_id"
                + where,
                [*(v for pair in part for v in pair), *args],
            )
            out += [match_row(r, 0.0) for r in rows]
        order = {f"{d}#{i}": n for n, (d, i) in enumerate(keys)}
        out.sort(key=lambda m: order[m.chunk_id])
        return out

    def _load_vocabulary(self, token: str) -> Vocabulary:
        with self._snapshot():
            return Vocabulary.load(self._query, token)

    def _vocabulary(self) -> Vocabulary:
        return self._vocab.get()

    def _loaded_vocabulary(self) -> Vocabulary | None:
        """The vocabulary if it is loaded for the index as it is now. A process that
        loaded it for an older state (one that searches many times, after a write) has
        it rebuilt in the background meanwhile, never waited for: term statistics and
        keyword candidates read FTS5 until it is there."""
        vocab = self._vocab.peek()
        if vocab is None:
            self._vocab.refresh_in_background()
        return vocab

    def term_stats(self, terms: Collection[str]) -> TermStats:
        # From the vocabulary when typo correction (``similar_terms``) has loaded it for
        # the index as it is now: a dictionary look-up, where FTS5 reads a term's whole
        # posting list to count its chunks (0.45 ms a common term at 100k chunks).
        # Otherwise from FTS5 directly (its totals record and a term look-up each), not
        # by loading the vocabulary: that costs a fresh process tens of milliseconds.
        vocab = self._loaded_vocabulary()
        if vocab is not None:
            return TermStats(vocab.chunks, vocab.avg_length, {t: vocab.df.get(t, 0) for t in terms})
        with self._snapshot():
            return sqlite_query.term_stats(self._query, terms)

    def documents_holding(
        self, terms: Collection[str], filters: Filters = Filters()
    ) -> dict[str, dict[str, int]]:
        with self._snapshot():
            return sqlite_query.documents_holding(self._query, terms, filters)

    def similar_terms(
        self, word: str, max_edits: int, filters: Filters = Filters(), first_letter: bool = False
    ) -> list[SimilarTerm]:
        vocab = self._vocab.peek()
        if first_letter and vocab is None:
            # Typo correction in a fresh process (a CLI search): the terms of one first
            # letter are a range FTS5 reads alone (11-18 ms at 100k chunks, against
            # 580 ms for the whole vocabulary and its totals).
            terms, df = self._letter_terms(word[:1])
        else:
            vocab = vocab or self._vocabulary()
            terms, df = vocab.terms, vocab.df
            if first_letter:
                terms = starting_with(terms, word[:1])
        found = similar(word, max_edits, terms, df)
        if filters.is_empty() or not found:
            return found
        with self._snapshot():
            return allowed_terms(self._query, found, filters)

    def _letter_terms(self, letter: str) -> tuple[Sequence[str], Mapping[str, int]]:
        """The vocabulary's terms that begin with ``letter``, with their chunk counts,
        kept for the index as it is now."""
        token = self.change_token()
        kept = self._letters.get(letter)
        if kept is not None and kept[0] == token:
            return kept[1], kept[2]
        upper = letter[:-1] + chr(ord(letter[-1]) + 1) if letter else ""
        sql = "SELECT term, doc FROM chunks_vocab WHERE term >= ? AND term < ?"
        rows = self._query(sql, (letter, upper)) if letter else []
        if len(self._letters) >= 64 or any(k[0] != token for k in self._letters.values()):
            self._letters = {}  # another state of the index, or many first letters
        terms = [t for t, _ in rows]
        self._letters[letter] = (token, terms, dict(rows))
        return terms, self._letters[letter][2]

    # --------------------------------------------------------------------- vectors
    def embedder(self) -> tuple[str, int] | None:
        meta = self._meta("embedder", "embedder_dimension")
        if not meta.get("embedder"):
            return None
        return meta["embedder"], int(meta.get("embedder_dimension", 0))

    def set_embedder(self, name: str, dimension: int) -> None:
        with self._tx() as db:
            sqlite_vectors.set_embedder(db, name, dimension)

    def chunks_to_embed(self, limit: int) -> list[tuple[str, str]]:
        return sqlite_vectors.chunks_to_embed(self._query, limit)

    def count_chunks_to_embed(self) -> int:
        return sqlite_vectors.count_chunks_to_embed(self._query)

    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        sqlite_vectors.check_dimensions(self.embedder(), items)
        with self._tx() as db:
            sqlite_vectors.put_vectors(db, items)

    def _vectors(self) -> VectorMatrix:
        return self._matrix.get()

    def _load_matrix(self, token: str) -> VectorMatrix:
        """The matrix of every current vector: mapped from the cache folder where a
        process kept it for this content (``kept_vectors.py``), else read from the index,
        and kept when this is the store's first load and reading took long enough."""
        embedder = self.embedder()
        content = self.content_token() if embedder is not None else None
        if embedder is None or content is None:
            return sqlite_vectors.load(self._query, token, embedder, self._int8_vectors)
        from . import kept_vectors  # numpy: only an index with vectors gets here

        kept = kept_vectors.read(
            kept_vectors.paths(content, embedder), token, embedder[1], self._int8_vectors
        )
        if kept is not None:
            return kept
        keep, self._keep_matrix = self._keep_matrix, False
        started = time.perf_counter()
        with self._snapshot():  # the content named and the vectors read in one state
            named = self._query("SELECT value FROM meta WHERE key = 'content'")
            matrix = sqlite_vectors.load(self._query, token, embedder, self._int8_vectors)
        if keep and named and time.perf_counter() - started >= kept_vectors.KEEP_MIN_S:
            kept_vectors.write(kept_vectors.paths(f"sqlite:{named[0][0]}", embedder), matrix)
        return matrix

    def nearest(self, vector: bytes, filters: Filters, k: int) -> list[tuple[str, float]]:
        return self._vectors().nearest(vector, filters, k)

    def similarities(self, vector: bytes, chunk_ids: Sequence[str]) -> dict[str, float]:
        return self._vectors().similarities(vector, chunk_ids)

    def document_similarities(self, vector: bytes, doc_ids: Sequence[str]) -> dict[str, float]:
        return self._vectors().document_similarities(vector, doc_ids)

    def get_vectors(self, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        return sqlite_vectors.get_vectors(self._query, chunk_ids)
