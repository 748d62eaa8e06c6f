"""SQL pieces of the PostgreSQL store: filters as ``WHERE`` conditions, the columns of
a keyword match, and chunk ids as the (document, index) arrays queries join on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import Filters
from .base import FIELDS, KeywordMatch, chunk_key
from .rows import summary

SUMMARY = (
    "d.id, d.source, d.type, d.category, d.title, d.summary, d.keywords, d.aliases,"
    " d.command, d.uri, d.origin, d.operation_kind"
)
MATCH = "c.doc_id, c.idx, c.header_path, c.text, c.chunk_hash, c.fields, d.content_hash, " + SUMMARY


def filters_sql(filters: Filters, alias: str) -> tuple[str, list[Any]]:
    parts, args = [], []
    for column, values in (
        ("type", filters.types),
        ("category", filters.categories),
        ("source", filters.sources),
    ):
        if values:
            parts.append(f" AND {alias}.{column} = ANY(%s)")
            args.append(list(values))
    return "".join(parts), args


def match_row(r: Sequence[Any], score: float) -> KeywordMatch:
    return KeywordMatch(
        chunk_id=f"{r[0]}#{r[1]}",
        doc_id=r[0],
        index=r[1],
        score=score,
        fields=dict(zip(FIELDS, r[5], strict=True)),
        text=r[3],
        header_path=r[2],
        chunk_hash=r[4],
        doc=summary(r[7:]),
        content_hash=r[6],
    )


def chunk_keys(chunk_ids: Sequence[str]) -> tuple[list[str], list[int]]:
    pairs = list(dict.fromkeys(chunk_key(c) for c in chunk_ids))
    return [d for d, _ in pairs], [i for _, i in pairs]
