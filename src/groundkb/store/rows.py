"""Rows as every backend stores them: documents with JSON-encoded lists, summaries, and
FTS5's BM25 for backends that must reproduce its candidate order.

Both backends keep the same columns, so encoding lives here once and a document read
back from either is equal to the one written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from ..analyze.text import analyzed_fields
from ..models import Chunk, Document, Example
from .base import FIELDS, DocSummary, SimilarTerm

# Columns of the documents table, in the order doc_row() gives and document() reads.
DOC_COLUMNS: tuple[str, ...] = (
    "id",
    "source",
    "type",
    "category",
    "subcategory",
    "title",
    "summary",
    "keywords",
    "aliases",
    "examples",
    "related_ids",
    "content",
    "content_hash",
    "uri",
    "origin",
    "origin_hash",
    "command",
    "metadata",
    "updated_at",
)

# FTS5 bm25() constants (fts5_aux.c).
FTS5_K1 = 1.2
FTS5_B = 0.75


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def doc_row(doc: Document) -> tuple[Any, ...]:
    return (
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
        doc.updated_at or now(),
    )


def document(r: Sequence[Any]) -> Document:
    """A Document from a row in DOC_COLUMNS order."""
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
        metadata=json.loads(r[17]),
        updated_at=r[18],
    )


def summary(r: Sequence[Any]) -> DocSummary:
    """A DocSummary from (id, source, type, category, title, summary, keywords json,
    aliases json, command, uri, origin, operation_kind)."""
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
        r[11] or "",
    )


def analyzed(doc: Document, chunk: Chunk) -> tuple[str, str, str, str, str]:
    return analyzed_fields(doc.title, doc.aliases, doc.keywords, chunk.header_path, chunk.text)


def check_chunks(doc: Document, chunks: Sequence[Chunk]) -> None:
    from ..errors import InvalidInput

    for i, c in enumerate(chunks):
        if c.doc_id != doc.id or c.index != i:
            raise InvalidInput(f"chunk {c.id} does not belong at index {i} of {doc.id}")


def fts5_bm25(
    fields: Mapping[str, str],
    phrases: Sequence[tuple[str, ...]],
    idf: Mapping[tuple[str, ...], float],
    weights: Mapping[str, float],
    avg_length: float,
) -> float:
    """FTS5's ``bm25()`` of one row for an OR of phrases (higher is better).

    Σ over phrases of idf × f·(k1 + 1) / (f + k1·(1 − b + b·length / avg_length)),
    where f is the phrase's occurrences weighted by field and length counts the tokens
    of every field. Tokens are single-space separated: doubling the spaces makes every
    " t " occurrence distinct, so ``str.count`` counts terms and phrases exactly.
    """
    columns = []
    length = 0
    for f in FIELDS:
        text = fields.get(f, "")
        if text:
            length += text.count(" ") + 1
            columns.append((weights.get(f, 1.0), " " + text.replace(" ", "  ") + " "))
    norm = FTS5_K1 * (1 - FTS5_B + FTS5_B * length / (avg_length or 1.0))
    score = 0.0
    for phrase in phrases:
        needle = " " + "  ".join(phrase) + " "
        freq = sum(w * padded.count(needle) for w, padded in columns if needle in padded)
        if freq:
            score += idf[phrase] * freq * (FTS5_K1 + 1) / (freq + norm)
    return score


def fts5_idf(chunks: int, df: int) -> float:
    """FTS5's idf: log((N − n + 0.5) / (n + 0.5)), never below 1e-6."""
    idf = math.log((chunks - df + 0.5) / (df + 0.5))
    return idf if idf > 0 else 1e-6


def similar(
    word: str, max_edits: int, terms: Sequence[str], df: Mapping[str, int]
) -> list[SimilarTerm]:
    """Terms within ``max_edits`` edits of ``word``, nearest first, then in the order of
    ``terms`` (code-point order): ``Store.similar_terms`` over a loaded vocabulary."""
    found = process.extract(
        word, terms, scorer=Levenshtein.distance, score_cutoff=max_edits, limit=None
    )
    return [SimilarTerm(t, int(d), df[t]) for t, d, _ in found]
