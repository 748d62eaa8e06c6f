"""Full-text pieces of the PostgreSQL store: tsvectors and tsqueries built from groundkb's
own analyzed tokens, and the candidate order.

The tokens come from :func:`groundkb.analyze.text.analyzed_fields`, as in SQLite, and go
into the ``tsvector`` as written (a ``::tsvector`` literal; no text-search
configuration re-parses them), so both backends index the same terms. Positions run
across the five fields with a one-position gap between fields, so a phrase (``<->``)
never spans two fields, just as an FTS5 phrase never spans two columns.

Candidates are chosen in two steps. PostgreSQL orders the chunks that match by an
approximation of BM25 it can compute from the tsvector alone (Σ over phrases of
idf × ``ts_rank`` with the field weights as A–D weights, over a length normalization)
and returns ``POOL_FACTOR`` times the wanted number (``POOL_FACTOR_LARGE`` when the query
has ``together`` groups, see below); groundkb then computes FTS5's exact
``bm25()`` over the fields of that pool (``rows.fts5_bm25``) and keeps the best. The
engine rescores whatever comes back, so what matters is that the pool holds the chunks
FTS5 would have ranked first; ``benchmarks/store_backends.py`` measures how often it does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import FIELDS
from .rows import FTS5_B

POOL_FACTOR = 2
# A query with ``together`` groups comes from a large index whose common words the
# engine left out: its rarer words match many chunks with close scores, and ts_rank's
# order strays further from FTS5's. On a 28,676-chunk index the same first ten chunks
# as SQLite came back for 55 % of 3,114 questions with a pool of 2×, 75 % with 4×
# (the same first chunk for 96 %). 8× reached 83 % but took 31 % longer and ranked no
# better (docs/benchmarks.md, "Common words on a large index").
POOL_FACTOR_LARGE = 4
MAX_LEXEME_BYTES = 2046  # PostgreSQL's limit; longer tokens are not indexed here
MAX_POSITION = 16383
MAX_POSITIONS = 255  # per lexeme
_LABELS = {"title": "A", "aliases": "B", "keywords": "C", "header": "D", "body": "D"}


def _quote(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(fields: Sequence[str]) -> tuple[str, int, set[str]]:
    """(tsvector literal, token count over all fields, distinct lexemes) of a chunk."""
    positions: dict[str, list[str]] = {}
    pos = 1
    length = 0
    for name, text in zip(FIELDS, fields, strict=True):
        tokens = text.split()
        length += len(tokens)
        label = _LABELS[name]
        for token in tokens:
            if len(token.encode("utf-8")) <= MAX_LEXEME_BYTES:
                slots = positions.setdefault(token, [])
                if len(slots) < MAX_POSITIONS:
                    slots.append(f"{min(pos, MAX_POSITION)}{label}")
            pos += 1
        if tokens:
            pos += 1
    literal = " ".join(f"{_quote(t)}:{','.join(p)}" for t, p in positions.items())
    return literal, length, set(positions)


def indexable(token: str) -> bool:
    return len(token.encode("utf-8")) <= MAX_LEXEME_BYTES


def _phrase(p: tuple[str, ...]) -> str:
    return "(" + " <-> ".join(_quote(t) for t in p) + ")" if len(p) > 1 else _quote(p[0])


def tsquery(phrases: Sequence[tuple[str, ...]]) -> str:
    """An OR of phrases as a ``::tsquery`` literal."""
    return " | ".join(_phrase(p) for p in phrases)


def tsquery_groups(groups: Sequence[tuple[tuple[str, ...], ...]]) -> str:
    """An OR of groups of phrases a chunk must all hold, as a ``::tsquery`` literal."""
    return " | ".join("(" + " & ".join(_phrase(p) for p in g) + ")" for g in groups)


def rank_weights(weights: Mapping[str, float]) -> list[float]:
    """ts_rank's {D, C, B, A} weights from the field weights (scaled to at most 1)."""
    w = {f: max(0.0, float(weights.get(f, 1.0))) for f in FIELDS}
    d = max(w["header"], w["body"])
    top = max(w["title"], w["aliases"], w["keywords"], d) or 1.0
    return [d / top, w["keywords"] / top, w["aliases"] / top, w["title"] / top]


def order_sql(
    phrases: Sequence[tuple[str, ...]],
    idf: Mapping[tuple[str, ...], float],
    weights: Mapping[str, float],
    avg_length: float,
) -> tuple[str, list[Any]]:
    """The approximate BM25 ``ORDER BY`` expression over ``c`` and its parameters."""
    terms = []
    args: list[Any] = []
    label_weights = rank_weights(weights)
    for p in phrases:
        terms.append("%s * ts_rank(%s::real[], c.tsv, %s::tsquery)")
        args += [idf[p], label_weights, tsquery([p])]
    norm = f"(1 - {FTS5_B} + {FTS5_B} * c.length / %s)"
    args.append(max(avg_length, 1.0))
    return f"({' + '.join(terms)}) / {norm}", args
