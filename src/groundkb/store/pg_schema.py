"""The PostgreSQL schema, as numbered migrations (see ``store/migrations.py``).

All tables live in one PostgreSQL schema (``groundkb`` unless the URL says
``?schema=``), created by ``groundkb migrate`` together with the ``vector`` extension.

- ``documents``: one row per document, the same columns as SQLite's, plus
  ``operation_kind`` (from the metadata) for summaries.
- ``chunks``: one row per chunk with the document's source, type and category copied
  in (filters never need a join), the five analyzed fields, their token count, a
  ``tsvector`` of those tokens (built by groundkb, not by a text-search configuration:
  positions count tokens across the fields, with a gap between fields so no phrase
  spans two, and weight labels A title, B aliases, C keywords, D header and body) under
  a GIN index, and the embedding (NULL until embedded, and again when the chunk's text
  changes). The HNSW index on the embedding is made by ``set_embedder``, when the
  dimension is known.
- ``terms``: every indexed term with the number of chunks containing it, kept exact in
  the same transaction as each write (BM25 needs it per query; the vocabulary for typo
  correction is its rows).
- ``state``: one row: a version bumped by every write (the change token) and the chunk
  and token totals (BM25's average length).
- ``meta``: schema version, knowledge base id, tokenizer, embedder.

Identifiers and terms use the ``C`` collation, so ``ORDER BY`` is code-point order, the
same as SQLite's and Python's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from ..analyze.text import TOKENIZER_VERSION
from ..errors import StoreError
from .migrations import Migration

_SCHEMA_1 = """
CREATE TABLE meta(key text COLLATE "C" PRIMARY KEY, value text NOT NULL);
CREATE TABLE state(
    id int PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL,
    chunks bigint NOT NULL,
    tokens bigint NOT NULL
);
INSERT INTO state VALUES (1, 0, 0, 0);
INSERT INTO meta VALUES ('kb_id', md5(random()::text || clock_timestamp()::text));
CREATE TABLE sources(
    name text COLLATE "C" PRIMARY KEY,
    kind text NOT NULL,
    location text NOT NULL DEFAULT '',
    groups text NOT NULL DEFAULT '[]',
    created_at text NOT NULL,
    updated_at text NOT NULL
);
CREATE TABLE documents(
    id text COLLATE "C" PRIMARY KEY,
    source text COLLATE "C" NOT NULL REFERENCES sources(name) ON DELETE CASCADE,
    type text NOT NULL,
    category text NOT NULL DEFAULT '',
    subcategory text NOT NULL DEFAULT '',
    title text NOT NULL,
    summary text NOT NULL DEFAULT '',
    keywords text NOT NULL DEFAULT '[]',
    aliases text NOT NULL DEFAULT '[]',
    examples text NOT NULL DEFAULT '[]',
    related_ids text NOT NULL DEFAULT '[]',
    content text NOT NULL,
    content_hash text NOT NULL,
    uri text NOT NULL DEFAULT '',
    origin text NOT NULL DEFAULT '',
    origin_hash text NOT NULL DEFAULT '',
    command text NOT NULL DEFAULT '',
    metadata text NOT NULL DEFAULT '{}',
    updated_at text NOT NULL,
    operation_kind text NOT NULL DEFAULT ''
);
CREATE INDEX documents_source ON documents(source, origin);
CREATE INDEX documents_type ON documents(type, category);
CREATE TABLE chunks(
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    doc_id text COLLATE "C" NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    idx int NOT NULL,
    source text COLLATE "C" NOT NULL,
    type text NOT NULL,
    category text NOT NULL,
    header_path text NOT NULL,
    text text NOT NULL,
    chunk_hash text NOT NULL,
    fields text[] NOT NULL,
    length int NOT NULL,
    tsv tsvector NOT NULL,
    embedding vector,
    UNIQUE (doc_id, idx)
);
-- Keep the tsvector inline (compressed) rather than out of line: candidate ranking
-- reads it once per ts_rank call, and out-of-line values are fetched again each time.
ALTER TABLE chunks ALTER COLUMN tsv SET STORAGE MAIN;
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE INDEX chunks_unembedded ON chunks (id) WHERE embedding IS NULL;
CREATE TABLE terms(term text COLLATE "C" PRIMARY KEY, df int NOT NULL);
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "documents, chunks, terms and the full-text index", _SCHEMA_1),
)
SCHEMA_VERSION = len(MIGRATIONS)


def vector_extension(conn: psycopg.Connection[Any]) -> tuple[str, str] | None:
    """(schema, version) of the installed ``vector`` extension, if any."""
    row = conn.execute(
        "SELECT n.nspname, e.extversion FROM pg_extension e"
        " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    ).fetchone()
    return (str(row[0]), str(row[1])) if row else None


def search_path(schema: str, extension_schema: str) -> str:
    return f'SET search_path TO "{schema}", "{extension_schema}"'


def schema_version(conn: psycopg.Connection[Any], schema: str) -> int:
    """The recorded schema version; 0 when the schema has no groundkb tables."""
    found = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".meta',)).fetchone()
    if found is None or found[0] is None:
        return 0
    row = conn.execute(
        f'SELECT value FROM "{schema}".meta WHERE key = %s', ("schema_version",)
    ).fetchone()
    return int(row[0]) if row else 0


class Migrator:
    """``migrations.MigrationTarget`` for one PostgreSQL schema, over one connection."""

    def __init__(self, conn: psycopg.Connection[Any], schema: str, location: str) -> None:
        self.conn = conn
        self.schema = schema
        self.location = location

    def schema_version(self) -> int:
        return schema_version(self.conn, self.schema)

    @contextmanager
    def migration_lock(self) -> Iterator[None]:
        key = f"groundkb migrate {self.schema}"
        self.conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
        try:
            self._prepare()
            yield
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    def _prepare(self) -> None:
        """The schema and the vector extension, which every migration needs."""
        self.conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        if vector_extension(self.conn) is None:
            try:
                self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.errors.InsufficientPrivilege as exc:
                raise StoreError(
                    f"pgvector (extension `vector`) is not installed in the database at "
                    f"{self.location} and this user may not install it ({exc}): ask an "
                    "administrator to run `CREATE EXTENSION vector;` there, then run "
                    "`groundkb migrate` again"
                ) from None
            except (psycopg.errors.UndefinedFile, psycopg.errors.FeatureNotSupported) as exc:
                raise StoreError(
                    f"the PostgreSQL server at {self.location} has no pgvector ({exc}): "
                    "install the pgvector extension on the server, then run "
                    "`groundkb migrate` again"
                ) from None
        ext = vector_extension(self.conn)
        assert ext is not None
        self.conn.execute(search_path(self.schema, ext[0]))

    def apply(self, migration: Migration) -> None:
        with self.conn.transaction():
            self.conn.execute(migration.sql)
            self.conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', %s), ('tokenizer', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = CASE WHEN meta.key = 'tokenizer'"
                " THEN meta.value ELSE excluded.value END",
                (str(migration.version), TOKENIZER_VERSION),
            )
