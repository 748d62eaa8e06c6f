"""Rows as every backend stores them: documents with JSON-encoded lists, summaries, and
FTS5's BM25 for backends that must reproduce its candidate order.

Both backends keep the same columns, so encoding lives here once and a document read
back from either is equal to the one written.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from ..analyze.text import analyzed_fields
from ..errors import InvalidInput
from ..models import Chunk, Document, Example
from .base import FIELDS, RESERVED_META, DocSummary, SimilarTerm

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


def _strings(text: str | list[str]) -> tuple[str, ...]:
    """A JSON list of strings (SQLite's text; PostgreSQL's driver gives a list already);
    most are empty, which needs no parser (listing every document at start-up)."""
    if isinstance(text, list):
        return tuple(text)
    return () if text == "[]" else _parsed_strings(text)


@lru_cache(maxsize=4096)
def _parsed_strings(text: str) -> tuple[str, ...]:
    # the aliases and keywords of every candidate row, again for every question
    return tuple(json.loads(text))


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
        _strings(r[6]),
        _strings(r[7]),
        r[8],
        r[9],
        r[10],
        r[11] or "",
    )


def analyzed(doc: Document, chunk: Chunk) -> tuple[str, str, str, str, str]:
    return analyzed_fields(doc.title, doc.aliases, doc.keywords, chunk.header_path, chunk.text)


def check_chunks(doc: Document, chunks: Sequence[Chunk]) -> None:

    for i, c in enumerate(chunks):
        if c.doc_id != doc.id or c.index != i:
            raise InvalidInput(f"chunk {c.id} does not belong at index {i} of {doc.id}")


class Fts5Scorer:
    """FTS5's ``bm25()`` of rows for one OR of phrases (higher is better), computed in
    the same order of operations as ``fts5_aux.c``, so equal rows score equal bits:

        Σ over phrases, in query order, of idf × (f·(k1 + 1) / (f + k1·(1 − b + b·D / avgdl)))

    where f is the phrase's occurrences weighted by field and D counts the tokens of every
    field. Single terms are counted from the field's tokens; for longer phrases, doubling
    the spaces makes every " t " occurrence distinct, so ``str.count`` counts them.
    """

    def __init__(
        self,
        phrases: Sequence[tuple[str, ...]],
        idf: Mapping[tuple[str, ...], float],
        weights: Mapping[str, float],
        avg_length: float,
    ) -> None:
        self.phrases = list(phrases)
        self.idf = [idf[p] for p in self.phrases]
        self.singles = {p[0]: i for i, p in enumerate(self.phrases) if len(p) == 1}
        self.multi = [
            (i, " " + "  ".join(p) + " ") for i, p in enumerate(self.phrases) if len(p) > 1
        ]
        self.weights = [(f, weights.get(f, 1.0)) for f in FIELDS]
        self.avg_length = avg_length or 1.0

    def score(self, fields: Mapping[str, str]) -> float:
        freq = [0.0] * len(self.phrases)
        length = 0
        singles = self.singles
        for name, weight in self.weights:
            text = fields.get(name, "")
            if not text:
                continue
            tokens = text.split()
            length += len(tokens)
            for i in [singles[t] for t in tokens if t in singles]:
                freq[i] += weight
            if self.multi:
                padded = " " + text.replace(" ", "  ") + " "
                for i, needle in self.multi:
                    if needle in padded:
                        freq[i] += weight * padded.count(needle)
        norm = FTS5_K1 * (1 - FTS5_B + FTS5_B * length / self.avg_length)
        score = 0.0
        for idf, f in zip(self.idf, freq, strict=True):
            if f:
                score += idf * ((f * (FTS5_K1 + 1.0)) / (f + norm))
        return score


def fts5_idf(chunks: int, df: int) -> float:
    """FTS5's idf: log((N − n + 0.5) / (n + 0.5)), never below 1e-6."""
    idf = math.log((chunks - df + 0.5) / (df + 0.5))
    return idf if idf > 0 else 1e-6


def starting_with(terms: Sequence[str], prefix: str) -> Sequence[str]:
    """The terms that begin with ``prefix``, from ``terms`` in code-point order (as both
    backends keep their vocabularies)."""
    if not prefix:
        return terms
    lo = bisect.bisect_left(terms, prefix)
    hi = bisect.bisect_left(terms, prefix[:-1] + chr(ord(prefix[-1]) + 1), lo)
    return terms[lo:hi]


def similar(
    word: str, max_edits: int, terms: Sequence[str], df: Mapping[str, int]
) -> list[SimilarTerm]:
    """Terms within ``max_edits`` edits (optimal string alignment) of ``word``, nearest
    first, then in the order of ``terms`` (code-point order): ``Store.similar_terms``
    over a loaded vocabulary."""
    from rapidfuzz import process  # only a word the index lacks needs it
    from rapidfuzz.distance import OSA

    found = process.extract(word, terms, scorer=OSA.distance, score_cutoff=max_edits, limit=None)
    return [SimilarTerm(t, int(d), df[t]) for t, d, _ in found]


def check_meta_key(key: str) -> None:
    """``Store.set_meta``'s rule: no blank key, none the store keeps for itself."""
    if not key or not key.strip():
        raise InvalidInput("a meta key must not be blank")
    if key in RESERVED_META:
        raise InvalidInput(f"meta key {key!r} belongs to the store and cannot be set")
