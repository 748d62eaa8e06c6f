"""SQL pieces of the SQLite store: filters as ``WHERE`` clauses, FTS5 phrases, the
columns of a keyword match, and the vocabulary loaded from ``chunks_vocab``."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from ..models import Filters
from .base import FIELDS, KeywordMatch, SimilarTerm, TermStats
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


def term_stats(query: Query, terms: Collection[str]) -> TermStats:
    """Chunk count, average length and the document frequency of each term, read in the
    caller's snapshot without loading the vocabulary."""
    chunks = int(query("SELECT count(*) FROM chunks", ())[0][0])
    tokens = _total_tokens(query, chunks)
    df = dict.fromkeys(terms, 0)
    wanted = list(df)
    for i in range(0, len(wanted), 500):
        part = wanted[i : i + 500]
        marks = ",".join("?" * len(part))
        df.update(query(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", part))
    return TermStats(chunks, tokens / chunks if chunks else 1.0, df)


def _total_tokens(query: Query, chunks: int) -> int:
    """Tokens in every chunk, all fields: FTS5 keeps the totals in its "averages" record
    (id 1 of the ``_data`` table: the row count, then one token count per column, as
    varints), so reading it is one row instead of a scan of the vocabulary. The scan is
    the fallback should the record not say what it should."""
    rows = query("SELECT block FROM chunks_fts_data WHERE id = 1", ())
    if rows and isinstance(rows[0][0], bytes):
        numbers = _varints(rows[0][0])
        if len(numbers) == 1 + len(FIELDS) and numbers[0] == chunks:
            return sum(numbers[1:])
    return int(query("SELECT coalesce(sum(cnt), 0) FROM chunks_vocab", ())[0][0])


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (big-endian, 7 bits a byte, the ninth byte whole), as FTS5 writes
    them."""
    out, i = [], 0
    while i < len(blob):
        value = 0
        for k in range(9):
            if i >= len(blob):  # cut short: not a record we know
                return []
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


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


def documents_holding(
    query: Query, terms: Collection[str], filters: Filters
) -> dict[str, dict[str, int]]:
    """Per term, per source: how many documents the filters allow have a chunk holding
    it, in any field (one indexed query per term: its chunks' document ids, counted once
    each)."""
    where, args = filter_sql(filters)
    sql = (
        "SELECT d.source, count(DISTINCT c.doc_id) FROM chunks_fts f"
        " JOIN chunks c ON c.rowid = f.rowid JOIN documents d ON d.id = c.doc_id"
        " WHERE chunks_fts MATCH ?" + (f" AND {where}" if where else "") + " GROUP BY d.source"
    )
    return {t: dict(query(sql, [fts_phrase((t,)), *args])) for t in terms}


def allowed_terms(query: Query, found: list[SimilarTerm], filters: Filters) -> list[SimilarTerm]:
    """The similar terms that a chunk the filters allow contains (FTS5 keeps one
    vocabulary for the whole index, so each term is looked up: one indexed query each)."""
    where, args = filter_sql(filters)
    sql = (
        "SELECT 1 FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid"
        f" JOIN documents d ON d.id = c.doc_id WHERE chunks_fts MATCH ? AND {where} LIMIT 1"
    )
    return [s for s in found if query(sql, [fts_phrase((s.term,)), *args])]
