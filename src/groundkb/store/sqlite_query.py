"""SQL pieces of the SQLite store: filters as ``WHERE`` clauses, FTS5 phrases, the
columns of a keyword match, and the vocabulary loaded from ``chunks_vocab``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..models import Filters
from .base import FIELDS, KeywordMatch, SimilarTerm
from .rows import summary

Query = Callable[[str, Sequence[Any]], list[Any]]


def fts_phrase(tokens: tuple[str, ...]) -> str:
    return '"' + " ".join(t.replace('"', '""') for t in tokens) + '"'


def filter_sql(filters: Filters, alias: str = "d") -> tuple[str, list[Any]]:
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


def where_clause(filters: Filters) -> tuple[str, list[Any]]:
    where, args = filter_sql(filters)
    return (f" WHERE {where}" if where else ""), args


SUMMARY_COLS = (
    "d.id, d.source, d.type, d.category, d.title, d.summary, d.keywords, d.aliases,"
    " d.command, d.uri, d.origin, coalesce(json_extract(d.metadata, '$.operation_kind'), '')"
)
MATCH_COLS = (
    "c.rowid, c.doc_id, c.idx, c.header_path, c.text, c.chunk_hash,"
    f" f.title, f.aliases, f.keywords, f.header, f.body, d.content_hash, {SUMMARY_COLS}"
)


def match_row(r: Sequence[Any], score: float) -> KeywordMatch:
    return KeywordMatch(
        chunk_id=f"{r[1]}#{r[2]}",
        doc_id=r[1],
        index=r[2],
        score=score,
        fields=dict(zip(FIELDS, r[6:11], strict=True)),
        text=r[4],
        header_path=r[3],
        chunk_hash=r[5],
        doc=summary(r[12:]),
        content_hash=r[11],
    )


class Vocabulary:
    """Every term of the FTS5 index with its document frequency, for one change token."""

    @classmethod
    def load(cls, query: Query, token: str) -> Vocabulary:
        """Read inside one snapshot (the caller's read transaction)."""
        rows = query("SELECT term, doc FROM chunks_vocab", ())
        tokens = query("SELECT coalesce(sum(cnt), 0) FROM chunks_vocab", ())[0][0]
        chunks = query("SELECT count(*) FROM chunks", ())[0][0]
        return cls(token, rows, int(chunks), int(tokens))

    def __init__(self, token: str, rows: list[tuple[str, int]], chunks: int, tokens: int):
        self.token = token
        self.df = dict(rows)
        self.terms = [t for t, _ in rows]  # code-point order, as FTS5 keeps them
        self.chunks = chunks
        self.avg_length = tokens / chunks if chunks else 1.0


def allowed_terms(query: Query, found: list[SimilarTerm], filters: Filters) -> list[SimilarTerm]:
    """The similar terms that a chunk the filters allow contains (FTS5 keeps one
    vocabulary for the whole index, so each term is looked up: one indexed query each)."""
    where, args = filter_sql(filters)
    sql = (
        "SELECT 1 FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid"
        f" JOIN documents d ON d.id = c.doc_id WHERE chunks_fts MATCH ? AND {where} LIMIT 1"
    )
    return [s for s in found if query(sql, [fts_phrase((s.term,)), *args])]
