"""The SQLite schema, as numbered migrations (see ``store/migrations.py``).

``documents`` (one row per document), ``chunks`` (one row per chunk, unique on
``(doc_id, idx)``), ``chunks_fts`` (FTS5 over the five analyzed fields, rowid = chunk
rowid) with ``chunks_vocab`` (its terms and document frequencies), ``vectors`` (one
embedding per chunk, valid while the chunk's hash is unchanged) and ``meta`` (schema
version, tokenizer, embedder).
"""

from __future__ import annotations

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
