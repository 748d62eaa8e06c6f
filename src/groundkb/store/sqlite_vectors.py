"""Vectors in the SQLite store: one row per chunk in ``vectors`` (rowid = the chunk's),
valid while the chunk's hash is the one it was made for; searched exactly by a numpy
matrix of every vector (``exact.py``) that the store builds once per change token.

Functions over the store's connection (inside its transaction where they write) or its
locked query function, so that ``sqlite.py`` stays about documents and keywords.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import IndexMismatch, InvalidInput
from .base import chunk_key, embedding_text

if TYPE_CHECKING:
    from .exact import VectorMatrix

Query = Callable[[str, Sequence[Any]], list[Any]]


def set_embedder(db: sqlite3.Connection, name: str, dimension: int) -> None:
    """Record the model; another model or dimension drops every vector."""
    rows = dict(
        db.execute(
            "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_dimension')"
        ).fetchall()
    )
    if rows.get("embedder") != name or rows.get("embedder_dimension") != str(dimension):
        db.execute("DELETE FROM vectors")
    db.executemany(
        "INSERT INTO meta(key, value) VALUES(?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [("embedder", name), ("embedder_dimension", str(dimension))],
    )


def chunks_to_embed(query: Query, limit: int) -> list[tuple[str, str]]:
    rows = query(
        "SELECT c.doc_id, c.idx, d.title, c.header_path, c.text FROM chunks c"
        " JOIN documents d ON d.id = c.doc_id"
        " LEFT JOIN vectors v ON v.rowid = c.rowid AND v.chunk_hash = c.chunk_hash"
        " WHERE v.rowid IS NULL ORDER BY c.rowid LIMIT ?",
        (limit,),
    )
    return [(f"{r[0]}#{r[1]}", embedding_text(r[2], r[3], r[4])) for r in rows]


def count_chunks_to_embed(query: Query) -> int:
    return int(
        query(
            "SELECT count(*) FROM chunks c LEFT JOIN vectors v"
            " ON v.rowid = c.rowid AND v.chunk_hash = c.chunk_hash WHERE v.rowid IS NULL",
            (),
        )[0][0]
    )


def check_dimensions(embedder: tuple[str, int] | None, items: Sequence[tuple[str, bytes]]) -> None:
    if embedder is None:
        raise InvalidInput("no embedder recorded: set_embedder before put_vectors")
    for chunk_id, blob in items:
        if len(blob) != 4 * embedder[1]:
            raise IndexMismatch(
                f"vector of {chunk_id} has {len(blob) // 4} dimensions, "
                f"the index holds {embedder[1]} ({embedder[0]})"
            )


def put_vectors(db: sqlite3.Connection, items: Sequence[tuple[str, bytes]]) -> None:
    """One vector per chunk id, for the chunk's current hash; unknown chunks ignored."""
    for chunk_id, blob in items:
        doc_id, idx = chunk_key(chunk_id)
        row = db.execute(
            "SELECT rowid, chunk_hash FROM chunks WHERE doc_id = ? AND idx = ?", (doc_id, idx)
        ).fetchone()
        if row is not None:
            db.execute(
                "INSERT OR REPLACE INTO vectors(rowid, chunk_hash, vector) VALUES(?,?,?)",
                (row[0], row[1], blob),
            )


def load(
    query: Query, token: str, embedder: tuple[str, int] | None, int8: bool = True
) -> VectorMatrix:
    """The matrix of every current vector, with what filters need (``int8``: see
    ``exact.py``)."""
    from .exact import VectorMatrix

    rows = query(
        "SELECT c.doc_id || '#' || c.idx, d.type, d.category, d.source, v.vector"
        " FROM vectors v JOIN chunks c ON c.rowid = v.rowid AND c.chunk_hash = v.chunk_hash"
        " JOIN documents d ON d.id = c.doc_id ORDER BY c.rowid",
        (),
    )
    return VectorMatrix.build(token, rows, embedder[1] if embedder else 0, int8)


def get_vectors(query: Query, chunk_ids: Sequence[str]) -> dict[str, bytes]:
    keys = list(dict.fromkeys(chunk_key(c) for c in chunk_ids))
    out: dict[str, bytes] = {}
    for i in range(0, len(keys), 250):
        part = keys[i : i + 250]
        rows = query(
            f"SELECT c.doc_id, c.idx, v.vector FROM (VALUES {','.join('(?,?)' for _ in part)})"
            " k CROSS JOIN chunks c ON c.doc_id = k.column1 AND c.idx = k.column2"
            " JOIN vectors v ON v.rowid = c.rowid AND v.chunk_hash = c.chunk_hash",
            [v for pair in part for v in pair],
        )
        out.update({f"{d}#{n}": bytes(b) for d, n, b in rows})
    return out
