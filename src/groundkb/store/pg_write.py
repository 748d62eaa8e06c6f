"""The write transaction of the PostgreSQL store.

One document per call, inside the caller's transaction, locking in one order so that
concurrent writers never deadlock: the document row, its chunks, the terms whose
document frequency changes (sorted), then the ``state`` row (the caller bumps its
version last). Term frequencies and token totals change by exactly what the changed,
new and deleted chunks add and take away, so they stay exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

import psycopg

from ..errors import Conflict, InvalidInput
from ..models import Chunk, Document
from .base import WriteResult
from .pg_text import tsvector
from .rows import DOC_COLUMNS, analyzed, doc_row

Cursor = psycopg.Cursor[Any]
HNSW_MAX_DIMENSION = 2000  # pgvector's HNSW limit for vector(n)


def clean(value: Any) -> Any:
    """PostgreSQL text cannot hold NUL: stored as U+FFFD."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


def drop_chunks(cur: Cursor, where: str, arg: Any) -> None:
    """Delete chunks, taking their terms and tokens out of the statistics."""
    cur.execute(
        f"WITH gone AS (DELETE FROM chunks WHERE {where} RETURNING tsv, length),"
        " t AS (INSERT INTO terms(term, df) SELECT u.lexeme, -count(*) FROM gone,"
        "  unnest(gone.tsv) u GROUP BY u.lexeme ORDER BY u.lexeme"
        "  ON CONFLICT (term) DO UPDATE SET df = terms.df + excluded.df)"
        " UPDATE state SET chunks = chunks - (SELECT count(*) FROM gone),"
        " tokens = tokens - (SELECT coalesce(sum(length), 0) FROM gone) WHERE id = 1",
        (arg,),
    )


def write_document(cur: Cursor, doc: Document, chunks: Sequence[Chunk]) -> WriteResult:
    """``Store.write`` inside the caller's transaction (see the module docstring)."""
    row = [clean(v) for v in doc_row(doc)] + [str(doc.metadata.get("operation_kind", ""))]
    cols = [*DOC_COLUMNS, "operation_kind"]
    updates = ", ".join(f"{c} = excluded.{c}" for c in cols[2:])
    upsert = (
        f"INSERT INTO documents({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})"
        f" ON CONFLICT (id) DO UPDATE SET {updates} WHERE documents.source = excluded.source"
        " RETURNING id"
    )
    old = cur.execute(
        "SELECT source, content_hash, type, category FROM documents WHERE id = %s FOR UPDATE",
        (doc.id,),
    ).fetchone()
    if old and old[0] != doc.source:
        raise Conflict(f"document id {doc.id!r} already belongs to source {old[0]!r}")
    try:
        if cur.execute(upsert, row).fetchone() is None:
            raise Conflict(f"document id {doc.id!r} already belongs to another source")
    except psycopg.errors.ForeignKeyViolation:
        raise InvalidInput(f"no source named {doc.source!r}: put the source first") from None
    existing = {
        idx: (h, n)
        for idx, h, n in cur.execute(
            "SELECT idx, chunk_hash, length FROM chunks WHERE doc_id = %s", (doc.id,)
        ).fetchall()
    }
    changed = [c for c in chunks if existing.get(c.index, ("",))[0] != c.chunk_hash]
    stale = [i for i in existing if i >= len(chunks)]
    replaced = [c.index for c in changed if c.index in existing] + stale
    delta: Counter[str] = Counter()
    tokens = 0
    if replaced:
        for (lexemes,) in cur.execute(
            "SELECT tsvector_to_array(tsv) FROM chunks WHERE doc_id = %s AND idx = ANY(%s)",
            (doc.id, replaced),
        ).fetchall():
            delta.subtract(lexemes)
        tokens -= sum(existing[i][1] for i in replaced)
    params = []
    for c in changed:
        fields = analyzed(doc, c)
        literal, length, lexemes = tsvector(fields)
        delta.update(lexemes)
        tokens += length
        params.append(
            (doc.id, c.index, doc.source, doc.type, doc.category, clean(c.header_path),
             clean(c.text), c.chunk_hash, list(fields), length, literal)
        )  # fmt: skip
    if params:
        cur.executemany(
            "INSERT INTO chunks(doc_id, idx, source, type, category, header_path, text,"
            " chunk_hash, fields, length, tsv) VALUES (%s, %s, %s, %s, %s, %s, %s, %s,"
            " %s, %s, %s::tsvector) ON CONFLICT (doc_id, idx) DO UPDATE SET"
            " type = excluded.type, category = excluded.category,"
            " header_path = excluded.header_path, text = excluded.text,"
            " chunk_hash = excluded.chunk_hash, fields = excluded.fields,"
            " length = excluded.length, tsv = excluded.tsv, embedding = NULL",
            params,
        )
    if stale:
        cur.execute("DELETE FROM chunks WHERE doc_id = %s AND idx = ANY(%s)", (doc.id, stale))
    if old and (old[2], old[3]) != (doc.type, doc.category):
        cur.execute(
            "UPDATE chunks SET type = %s, category = %s WHERE doc_id = %s",
            (doc.type, doc.category, doc.id),
        )
    terms = sorted((t, n) for t, n in delta.items() if n)
    if terms:
        cur.execute(
            "INSERT INTO terms(term, df) SELECT * FROM unnest(%s::text[], %s::int[])"
            " ORDER BY 1 ON CONFLICT (term) DO UPDATE SET df = terms.df + excluded.df",
            ([t for t, _ in terms], [n for _, n in terms]),
        )
    new_chunks = len([c for c in changed if c.index not in existing]) - len(stale)
    if new_chunks or tokens:
        cur.execute(
            "UPDATE state SET chunks = chunks + %s, tokens = tokens + %s WHERE id = 1",
            (new_chunks, tokens),
        )
    if old and old[1] == doc.content_hash and not changed and not stale:
        return WriteResult("unchanged", 0, 0)
    status: Literal["inserted", "updated"] = "updated" if old else "inserted"
    return WriteResult(status, len(changed), len(stale))


def set_embedder(cur: Cursor, schema: str, name: str, dimension: int) -> None:
    """Record the embedder; another one (or dimension) drops every vector and rebuilds the
    HNSW index for the new dimension. Serialized by an advisory lock per schema."""
    cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"groundkb {schema}",))
    meta = dict(cur.execute(
        "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_dimension')"
    ).fetchall())  # fmt: skip
    if meta.get("embedder") == name and meta.get("embedder_dimension") == str(dimension):
        return
    cur.execute("DROP INDEX IF EXISTS chunks_embedding")
    cur.execute("UPDATE chunks SET embedding = NULL WHERE embedding IS NOT NULL")
    cur.execute(
        f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({dimension})"
        f" USING NULL::vector({dimension})"
    )
    if dimension <= HNSW_MAX_DIMENSION:
        cur.execute("CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_ip_ops)")
    cur.execute(
        "INSERT INTO meta(key, value) VALUES ('embedder', %s), ('embedder_dimension', %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (name, str(dimension)),
    )
