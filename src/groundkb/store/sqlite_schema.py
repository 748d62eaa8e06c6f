"""The SQLite schema, as numbered migrations (see ``store/migrations.py``).

``documents`` (one row per document), ``chunks`` (one row per chunk, unique on
``(doc_id, idx)``), ``chunks_fts`` (FTS5 over the five analyzed fields, rowid = chunk
rowid) with ``chunks_vocab`` (its terms and document frequencies), ``vectors`` (one
embedding per chunk, valid while the chunk's hash is unchanged) and ``meta`` (schema
version, tokenizer, embedder).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from ..analyze.text import TOKENIZER_VERSION
from ..errors import IndexMismatch
from .migrations import Migration

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

# Embeddings, one per chunk, valid while the chunk's hash is unchanged.
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

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "documents, chunks and the FTS5 index", _SCHEMA_1),
    Migration(2, "embeddings", _SCHEMA_2),
)
SCHEMA_VERSION = len(MIGRATIONS)


def statements(script: str) -> Iterator[str]:
    """Split a SQL script into complete statements (triggers contain semicolons)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf.strip()
            buf = ""
    if buf.strip():
        yield buf.strip()


def record_tokenizer(db: sqlite3.Connection, stamp: str) -> None:
    """Record the tokenizer and creation time of a new index (inside a transaction)."""
    db.execute(
        "INSERT OR IGNORE INTO meta(key, value) VALUES('tokenizer', ?)", (TOKENIZER_VERSION,)
    )
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES('created_at', ?)", (stamp,))


def check_tokenizer(db: sqlite3.Connection, path: str) -> None:
    """IndexMismatch for an index built with another tokenizer."""
    tok = db.execute("SELECT value FROM meta WHERE key='tokenizer'").fetchone()
    if tok and tok[0] != TOKENIZER_VERSION:
        raise IndexMismatch(
            f"{path} was built with tokenizer {tok[0]!r}, this groundkb uses "
            f"{TOKENIZER_VERSION!r}: rebuild the index (delete it and ingest again)."
        )


def schema_version(db: sqlite3.Connection) -> int:
    """The recorded version; 0 for a file without a groundkb schema."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone():
        return 0
    row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else 0


class Migrator:
    """``migrations.MigrationTarget`` for one SQLite file: every pending migration in one
    ``BEGIN IMMEDIATE`` transaction, which also excludes every other writer of the file.
    The caller holds the store's lock."""

    def __init__(self, db: sqlite3.Connection, location: str) -> None:
        self.db = db
        self.location = location

    def schema_version(self) -> int:
        return schema_version(self.db)

    @contextmanager
    def migration_lock(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise

    def apply(self, migration: Migration) -> None:
        for statement in statements(migration.sql):
            self.db.execute(statement)
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(migration.version),),
        )
