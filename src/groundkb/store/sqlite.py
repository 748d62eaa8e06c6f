"""SQLite store: one file, WAL, FTS5 for keywords, numbered migrations.

Layout: ``documents`` (one row per document), ``chunks`` (one row per chunk, unique on
``(doc_id, idx)``), ``chunks_fts`` (FTS5 over the analyzed fields, rowid = chunk rowid),
``meta`` (schema version, tokenizer, generation). One writer at a time (a lock in this
process, SQLite's in others); readers never block in WAL mode.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..analyze.text import TOKENIZER_VERSION, analyzed_fields
from ..errors import Conflict, IndexMismatch, InvalidInput, StoreError
from ..models import Chunk, Document, Example, Filters, Source, SourceInfo, Stats
from .base import (
    FIELDS,
    DocSummary,
    KeywordMatch,
    KeywordQuery,
    StoredDoc,
    VectorRow,
    WriteResult,
    embedding_text,
)

log = logging.getLogger(__name__)

_SCHEMA_1 = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources(
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    location TEXT NOT NULL DEFAULT '',
    groups TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE documents(
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    type TEXT NOT NULL,
    category TEXT NOT NULL DEFAULT '',
    subcategory TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    keywords TEXT NOT NULL DEFAULT '[]',
    aliases TEXT NOT NULL DEFAULT '[]',
    examples TEXT NOT NULL DEFAULT '[]',
    related_ids TEXT NOT NULL DEFAULT '[]',
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    uri TEXT NOT NULL DEFAULT '',
    origin TEXT NOT NULL DEFAULT '',
    origin_hash TEXT NOT NULL DEFAULT '',
    command TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    updated_at TEXT NOT NULL
);
CREATE INDEX documents_source ON documents(source, origin);
CREATE INDEX documents_type ON documents(type, category);
CREATE TABLE chunks(
    rowid INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    header_path TEXT NOT NULL,
    text TEXT NOT NULL,
    chunk_hash TEXT NOT NULL,
    UNIQUE(doc_id, idx)
);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    title, aliases, keywords, header, body,
    tokenize = 'unicode61 remove_diacritics 0'
);
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TRIGGER chunks_after_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunks_fts WHERE rowid = old.rowid;
END;
"""

# Version 2: embeddings, one per chunk, valid while the chunk's hash is unchanged.
_SCHEMA_2 = """
CREATE TABLE vectors(
    rowid INTEGER PRIMARY KEY,
    chunk_hash TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE TRIGGER chunks_delete_vector AFTER DELETE ON chunks BEGIN
    DELETE FROM vectors WHERE rowid = old.rowid;
END;
CREATE TRIGGER chunks_update_vector AFTER UPDATE OF chunk_hash ON chunks BEGIN
    DELETE FROM vectors WHERE rowid = old.rowid;
END;
"""

# Numbered migrations: MIGRATIONS[n] brings a database from version n to n + 1.
MIGRATIONS: dict[int, str] = {0: _SCHEMA_1, 1: _SCHEMA_2}
SCHEMA_VERSION = len(MIGRATIONS)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _analyzed(doc: Document, chunk: Chunk) -> tuple[str, str, str, str, str]:
    return analyzed_fields(doc.title, doc.aliases, doc.keywords, chunk.header_path, chunk.text)


def _statements(script: str) -> Iterator[str]:
    """Split a SQL script into complete statements (triggers contain semicolons)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf.strip()
            buf = ""
    if buf.strip():
        yield buf.strip()


# A word in more than COMMON_RATIO of the chunks of an index of COMMON_MIN_ROWS or more
# is left out of the FTS5 candidate query (see keyword_search).
COMMON_MIN_ROWS = 20_000
COMMON_RATIO = 0.01


def _fts_phrase(tokens: tuple[str, ...]) -> str:
    return '"' + " ".join(t.replace('"', '""') for t in tokens) + '"'


def _filter_sql(filters: Filters, alias: str = "d") -> tuple[str, list[Any]]:
    parts: list[str] = []
    args: list[Any] = []
    for column, values in (
        ("type", filters.types),
        ("category", filters.categories),
        ("source", filters.sources),
    ):
        if values:
            parts.append(f"{alias}.{column} IN ({','.join('?' * len(values))})")
            args.extend(values)
    return (" AND ".join(parts), args)


class SQLiteStore:
    """The embedded default store. Thread-safe: one connection behind a lock."""

    backend = "sqlite"

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._stats_cache: tuple[int, int, float] | None = None
        if self.path != ":memory:":
            parent = Path(self.path).parent
            if read_only and not Path(self.path).exists():
                raise InvalidInput(f"no index at {self.path}: run `groundkb ingest` first")
            parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute("PRAGMA busy_timeout = 30000")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute("PRAGMA cache_size = -65536")
        self._migrate()

    # ----------------------------------------------------------------- lifecycle
    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot write to {self.path}: {exc}") from exc
            try:
                yield self._db
                self._db.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc

    def _migrate(self) -> None:
        with self._lock:
            db = self._db
            has_meta = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
            ).fetchone()
            version = 0
            if has_meta:
                row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise IndexMismatch(
                    f"{self.path} has schema version {version}; this groundkb reads up to "
                    f"{SCHEMA_VERSION}. Upgrade groundkb."
                )
            if version < SCHEMA_VERSION:
                db.execute("BEGIN IMMEDIATE")
                try:
                    for v in range(version, SCHEMA_VERSION):
                        log.info("migrating %s: schema %d -> %d", self.path, v, v + 1)
                        for statement in _statements(MIGRATIONS[v]):
                            db.execute(statement)
                    db.executemany(
                        "INSERT INTO meta(key, value) VALUES(?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        [
                            ("schema_version", str(SCHEMA_VERSION)),
                            ("tokenizer", TOKENIZER_VERSION),
                        ],
                    )
                    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES('generation', '0')")
                    db.execute(
                        "INSERT OR IGNORE INTO meta(key, value) VALUES('created_at', ?)", (_now(),)
                    )
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
            tok = db.execute("SELECT value FROM meta WHERE key='tokenizer'").fetchone()
            if tok and tok[0] != TOKENIZER_VERSION:
                raise IndexMismatch(
                    f"{self.path} was built with tokenizer {tok[0]!r}, this groundkb uses "
                    f"{TOKENIZER_VERSION!r}: rebuild the index (delete it and ingest again)."
                )

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO meta(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def generation(self) -> int:
        return int(self._query("SELECT value FROM meta WHERE key='generation'")[0][0])

    # ------------------------------------------------------------------- sources
    def put_source(self, source: Source) -> None:
        now = _now()
        with self._tx() as db:
            db.execute(
                "INSERT INTO sources(name, kind, location, groups, created_at, updated_at) "
                "VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET kind = excluded.kind,"
                " location = excluded.location, groups = excluded.groups,"
                " updated_at = excluded.updated_at",
                (source.name, source.kind, source.location, json.dumps(source.groups), now, now),
            )

    def get_source(self, name: str) -> Source | None:
        rows = self._query("SELECT name, kind, location, groups FROM sources WHERE name=?", (name,))
        if not rows:
            return None
        n, k, loc, groups = rows[0]
        return Source(n, k, loc, tuple(json.loads(groups)))

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

    def owners(self, doc_ids: Iterable[str]) -> dict[str, str]:
        ids = list(doc_ids)
        out: dict[str, str] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            rows = self._query(
                f"SELECT id, source FROM documents WHERE id IN ({','.join('?' * len(part))})",
                part,
            )
            out.update({r[0]: r[1] for r in rows})
        return out

    def write(self, doc: Document, chunks: Sequence[Chunk]) -> WriteResult:
        for i, c in enumerate(chunks):
            if c.doc_id != doc.id or c.index != i:
                raise InvalidInput(f"chunk {c.id} does not belong at index {i} of {doc.id}")
        with self._tx() as db:
            row = db.execute(
                "SELECT source, content_hash FROM documents WHERE id = ?", (doc.id,)
            ).fetchone()
            if row and row[0] != doc.source:
                raise Conflict(f"document id {doc.id!r} already belongs to source {row[0]!r}")
            status: Literal["inserted", "updated"] = "inserted" if row is None else "updated"
            db.execute(
                "INSERT INTO documents(id, source, type, category, subcategory, title, summary,"
                " keywords, aliases, examples, related_ids, content, content_hash, uri, origin,"
                " origin_hash, command, metadata, updated_at)"
                " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(id) DO UPDATE SET type=excluded.type, category=excluded.category,"
                " subcategory=excluded.subcategory, title=excluded.title,"
                " summary=excluded.summary, keywords=excluded.keywords,"
                " aliases=excluded.aliases, examples=excluded.examples,"
                " related_ids=excluded.related_ids, content=excluded.content,"
                " content_hash=excluded.content_hash, uri=excluded.uri, origin=excluded.origin,"
                " origin_hash=excluded.origin_hash, command=excluded.command,"
                " metadata=excluded.metadata, updated_at=excluded.updated_at",
                (
                    doc.id,
                    doc.source,
                    doc.type,
                    doc.category,
                    doc.subcategory,
                    doc.title,
                    doc.summary,
                    json.dumps(doc.keywords),
                    json.dumps(doc.aliases),
                    json.dumps([[e.code, e.description, e.output] for e in doc.examples]),
                    json.dumps(doc.related_ids),
                    doc.content,
                    doc.content_hash,
                    doc.uri,
                    doc.origin,
                    doc.origin_hash,
                    doc.command,
                    json.dumps(dict(doc.metadata), default=str),
                    doc.updated_at or _now(),
                ),
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
                fields = _analyzed(doc, c)
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
                    (rowid, *fields),
                )
                written += 1
            stale = [rowid for idx, (rowid, _) in existing.items() if idx >= len(chunks)]
            db.executemany("DELETE FROM chunks WHERE rowid = ?", [(r,) for r in stale])
            if row and row[1] == doc.content_hash and not written and not stale:
                return WriteResult("unchanged", 0, 0)
        return WriteResult(status, written, len(stale))

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        ids = list(doc_ids)
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

    def get_document(self, doc_id: str) -> Document | None:
        rows = self._query(
            "SELECT id, source, type, category, subcategory, title, summary, keywords, aliases,"
            " examples, related_ids, content, content_hash, uri, origin, origin_hash, metadata,"
            " updated_at FROM documents WHERE id = ?",
            (doc_id,),
        )
        if not rows:
            return None
        r = rows[0]
        return Document(
            id=r[0],
            source=r[1],
            type=r[2],
            category=r[3],
            subcategory=r[4],
            title=r[5],
            summary=r[6],
            keywords=tuple(json.loads(r[7])),
            aliases=tuple(json.loads(r[8])),
            examples=tuple(Example(c, d, o) for c, d, o in json.loads(r[9])),
            related_ids=tuple(json.loads(r[10])),
            content=r[11],
            content_hash=r[12],
            uri=r[13],
            origin=r[14],
            origin_hash=r[15],
            metadata=json.loads(r[16]),
            updated_at=r[17],
        )

    def get_chunks(self, doc_id: str) -> list[Chunk]:
        rows = self._query(
            "SELECT doc_id, idx, text, header_path, chunk_hash FROM chunks"
            " WHERE doc_id = ? ORDER BY idx",
            (doc_id,),
        )
        return [Chunk(*r) for r in rows]

    _SUMMARY_COLS = (
        "d.id, d.source, d.type, d.category, d.title, d.summary, d.keywords, d.aliases,"
        " d.command, d.uri, d.origin, coalesce(json_extract(d.metadata, '$.operation_kind'), '')"
    )

    @staticmethod
    def _summary(r: Sequence[Any]) -> DocSummary:
        return DocSummary(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            tuple(json.loads(r[6])),
            tuple(json.loads(r[7])),
            r[8],
            r[9],
            r[10],
            r[11],
        )

    def list_documents(
        self, filters: Filters, limit: int = 100, offset: int = 0
    ) -> list[DocSummary]:
        where, args = _filter_sql(filters)
        rows = self._query(
            f"SELECT {self._SUMMARY_COLS} FROM documents d"
            f"{' WHERE ' + where if where else ''} ORDER BY d.id LIMIT ? OFFSET ?",
            [*args, limit, offset],
        )
        return [self._summary(r) for r in rows]

    def count_documents(self, filters: Filters) -> int:
        where, args = _filter_sql(filters)
        rows = self._query(
            f"SELECT count(*) FROM documents d{' WHERE ' + where if where else ''}", args
        )
        return int(rows[0][0])

    # -------------------------------------------------------------------- search
    def keyword_search(self, query: KeywordQuery) -> list[KeywordMatch]:
        """Candidate chunks, best first by FTS5 BM25 over the OR of every alternative.

        On a large index, single words found in more than ``COMMON_RATIO`` of the chunks
        are left out of the FTS5 query (they would make it score most of the index): the
        candidates are what the rarer words find, twice ``limit`` of them, ordered by
        those words only — the "common terms" strategy of Lucene. The search engine
        rescores every candidate with all the query's words (``Searcher._bm25``).
        """
        phrases = sorted({alt for clause in query.clauses for alt in clause if alt})
        if not phrases or query.limit <= 0:
            return []
        weights = [float(query.weights.get(f, 1.0)) for f in FIELDS]
        common: list[str] = []
        n_rows, _ = self.row_stats()
        if n_rows >= COMMON_MIN_ROWS:
            singles = [p[0] for p in phrases if len(p) == 1]
            dfs = self._term_rows(singles)
            common = [t for t in singles if dfs.get(t, 0) > COMMON_RATIO * n_rows]
            if len(common) == len(phrases):
                common = []
        rare = [p for p in phrases if not (len(p) == 1 and p[0] in common)]
        fetch = query.limit * 2 if common else query.limit
        match = " OR ".join(_fts_phrase(p) for p in rare)
        where, args = _filter_sql(query.filters)
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
        top = self._query(sql, [*weights, match, *args, fetch])
        if not top:
            return []
        scores = {rowid: s for rowid, s in top}
        marks = ",".join("?" * len(scores))
        rows = self._query(
            "SELECT c.rowid, c.doc_id, c.idx, c.header_path, c.text, c.chunk_hash,"
            " f.title, f.aliases, f.keywords, f.header, f.body, d.content_hash,"
            f" {self._SUMMARY_COLS}"
            " FROM chunks c JOIN chunks_fts f ON f.rowid = c.rowid"
            f" JOIN documents d ON d.id = c.doc_id WHERE c.rowid IN ({marks})",
            list(scores),
        )
        out = [self._match(r, scores[r[0]]) for r in rows]
        out.sort(key=lambda m: -m.score)
        return out

    def row_stats(self) -> tuple[int, float]:
        """(rows, average tokens per row) of the FTS index, cached per generation."""
        gen = self.generation()
        if self._stats_cache is None or self._stats_cache[0] != gen:
            n = int(self._query("SELECT count(*) FROM chunks")[0][0])
            total = self._query("SELECT coalesce(sum(cnt), 0) FROM chunks_vocab")[0][0]
            self._stats_cache = (gen, n, float(total) / n if n else 1.0)
        return self._stats_cache[1], self._stats_cache[2]

    def _term_rows(self, terms: Sequence[str]) -> dict[str, int]:
        if not terms:
            return {}
        marks = ",".join("?" * len(terms))
        return dict(
            self._query(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", terms)
        )

    # ---------------------------------------------------------------- vectors
    def embedder(self) -> tuple[str, int] | None:
        rows = self._query(
            "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_dimension')"
        )
        meta = dict(rows)
        if not meta.get("embedder"):
            return None
        return meta["embedder"], int(meta.get("embedder_dimension", 0))

    def set_embedder(self, name: str, dimension: int) -> None:
        with self._tx() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if row is None or row[0] != name:
                db.execute("DELETE FROM vectors")
            db.executemany(
                "INSERT INTO meta(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [("embedder", name), ("embedder_dimension", str(dimension))],
            )

    def chunks_to_embed(self, limit: int) -> list[tuple[str, str]]:
        rows = self._query(
            "SELECT c.doc_id, c.idx, d.title, c.header_path, c.text FROM chunks c"
            " JOIN documents d ON d.id = c.doc_id"
            " LEFT JOIN vectors v ON v.rowid = c.rowid AND v.chunk_hash = c.chunk_hash"
            " WHERE v.rowid IS NULL ORDER BY c.rowid LIMIT ?",
            (limit,),
        )
        return [(f"{r[0]}#{r[1]}", embedding_text(r[2], r[3], r[4])) for r in rows]

    def count_chunks_to_embed(self) -> int:
        return int(
            self._query(
                "SELECT count(*) FROM chunks c LEFT JOIN vectors v"
                " ON v.rowid = c.rowid AND v.chunk_hash = c.chunk_hash WHERE v.rowid IS NULL"
            )[0][0]
        )

    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self._tx() as db:
            for chunk_id, blob in items:
                doc_id, _, idx = chunk_id.rpartition("#")
                row = db.execute(
                    "SELECT rowid, chunk_hash FROM chunks WHERE doc_id = ? AND idx = ?",
                    (doc_id, int(idx)),
                ).fetchone()
                if row is not None:
                    db.execute(
                        "INSERT OR REPLACE INTO vectors(rowid, chunk_hash, vector) VALUES(?,?,?)",
                        (row[0], row[1], blob),
                    )

    def vectors(self) -> list[VectorRow]:
        rows = self._query(
            "SELECT c.doc_id, c.idx, d.type, d.category, d.source, v.vector FROM vectors v"
            " JOIN chunks c ON c.rowid = v.rowid AND c.chunk_hash = v.chunk_hash"
            " JOIN documents d ON d.id = c.doc_id ORDER BY c.rowid"
        )
        return [VectorRow(f"{r[0]}#{r[1]}", r[2], r[3], r[4], r[5]) for r in rows]

    def matches(self, chunk_ids: Sequence[str]) -> list[KeywordMatch]:
        """Chunks by id with their analyzed fields, as keyword matches of score 0."""
        if not chunk_ids:
            return []
        pairs = [(c.rpartition("#")[0], int(c.rpartition("#")[2])) for c in chunk_ids]
        values = ",".join("(?,?)" for _ in pairs)
        rows = self._query(
            "SELECT c.rowid, c.doc_id, c.idx, c.header_path, c.text, c.chunk_hash,"
            " f.title, f.aliases, f.keywords, f.header, f.body, d.content_hash,"
            f" {self._SUMMARY_COLS}"
            f" FROM (VALUES {values}) v CROSS JOIN chunks c"
            " ON c.doc_id = v.column1 AND c.idx = v.column2"
            " JOIN chunks_fts f ON f.rowid = c.rowid JOIN documents d ON d.id = c.doc_id",
            [v for pair in pairs for v in pair],
        )
        return [self._match(r, 0.0) for r in rows]

    def _match(self, r: Sequence[Any], score: float) -> KeywordMatch:
        return KeywordMatch(
            chunk_id=f"{r[1]}#{r[2]}",
            doc_id=r[1],
            index=r[2],
            score=score,
            fields=dict(zip(FIELDS, r[6:11], strict=True)),
            text=r[4],
            header_path=r[3],
            chunk_hash=r[5],
            doc=self._summary(r[12:]),
            content_hash=r[11],
        )

    def vocabulary(self) -> dict[str, int]:
        return dict(self._query("SELECT term, doc FROM chunks_vocab"))

    def chunk_count(self) -> int:
        return int(self._query("SELECT count(*) FROM chunks")[0][0])

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
            chunks=self.chunk_count(),
            sources=int(self._query("SELECT count(*) FROM sources")[0][0]),
            by_type=by_type,
            size_bytes=size,
        )
