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
from uuid import uuid4

from ..analyze.text import TOKENIZER_VERSION
from ..errors import IndexMismatch, StoreError
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

# ``documents`` rebuilt with ``content`` last. SQLite stores a row's columns in order and
# a long value spills onto a chain of overflow pages: reading any column after it (the
# uri, command and metadata a search hit carries) walked that chain, page by page, for
# every candidate chunk of a long document. On the Python documentation (527 pages,
# 22 kB on average) reading 75 candidate rows took 2.4 ms instead of 1.1 ms. Rebuilt as
# SQLite's documentation says a table is changed: a new table, the rows copied, the old
# one dropped, the new one renamed, its indexes made again (foreign keys are not
# enforced while migrating, and checked before the commit: ``Migrator``).
_DOCUMENT_COLUMNS = (
    "id, source, type, category, subcategory, title, summary, keywords, aliases,"
    " content_hash, uri, origin, origin_hash, command, metadata, updated_at,"
    " examples, related_ids, content"
)
_SCHEMA_3 = f"""
CREATE TABLE documents_new(
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    type TEXT NOT NULL,
    category TEXT NOT NULL DEFAULT '',
    subcategory TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    keywords TEXT NOT NULL DEFAULT '[]',
    aliases TEXT NOT NULL DEFAULT '[]',
    content_hash TEXT NOT NULL,
    uri TEXT NOT NULL DEFAULT '',
    origin TEXT NOT NULL DEFAULT '',
    origin_hash TEXT NOT NULL DEFAULT '',
    command TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{{}}',
    updated_at TEXT NOT NULL,
    examples TEXT NOT NULL DEFAULT '[]',
    related_ids TEXT NOT NULL DEFAULT '[]',
    content TEXT NOT NULL
);
INSERT INTO documents_new({_DOCUMENT_COLUMNS})
    SELECT {_DOCUMENT_COLUMNS} FROM documents ORDER BY rowid;
DROP TABLE documents;
ALTER TABLE documents_new RENAME TO documents;
CREATE INDEX documents_source ON documents(source, origin);
CREATE INDEX documents_type ON documents(type, category);
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "documents, chunks and the FTS5 index", _SCHEMA_1),
    Migration(2, "embeddings", _SCHEMA_2),
    Migration(3, "documents with their content last", _SCHEMA_3),
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
    """Record the tokenizer and creation time of a new index, and mark its content if
    no writer marked it yet (inside a transaction)."""
    db.execute(
        "INSERT OR IGNORE INTO meta(key, value) VALUES('tokenizer', ?)", (TOKENIZER_VERSION,)
    )
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES('created_at', ?)", (stamp,))
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES('content', ?)", (uuid4().hex,))


def mark_content(db: sqlite3.Connection) -> None:
    """Give the index's content a new name (inside the transaction that changes it): a
    random one, so that two copies of one file that are changed apart never share one
    (``Store.content_token``)."""
    db.execute(
        "INSERT INTO meta(key, value) VALUES('content', ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (uuid4().hex,),
    )


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
    The caller holds the store's lock.

    Foreign keys are not enforced while migrating (a rebuilt table is dropped and
    renamed: enforced, dropping ``documents`` would delete every chunk); every reference
    is checked before the commit, and enforcement is back as it was afterwards."""

    def __init__(self, db: sqlite3.Connection, location: str) -> None:
        self.db = db
        self.location = location
        self.applied = 0

    def schema_version(self) -> int:
        return schema_version(self.db)

    @contextmanager
    def migration_lock(self) -> Iterator[None]:
        enforced = bool(self.db.execute("PRAGMA foreign_keys").fetchone()[0])
        self.db.execute("PRAGMA foreign_keys = OFF")  # ignored inside a transaction
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
                broken = self.applied and self.db.execute("PRAGMA foreign_key_check").fetchmany(3)
                if broken:
                    raise StoreError(f"migrating {self.location} would break references: {broken}")
                if self.applied and schema_version(self.db):
                    mark_content(self.db)
                self.db.execute("COMMIT")
            except BaseException:
                with suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                raise
        finally:
            self.db.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")

    def apply(self, migration: Migration) -> None:
        self.applied += 1
        for statement in statements(migration.sql):
            self.db.execute(statement)
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(migration.version),),
        )
