"""Keyword rescoring: the BM25F of a candidate with all the query's clauses, and whether
the query phrase is its title or an alias (see ``engine.py`` for the rank formula).

The store's candidates come ordered by FTS5's bm25(); here each is scored again with one
term per clause (its best alternative), so that synonym, stem, verb-form and typo alternatives
count ``MATCH_FACTOR`` of their score and a common word left out of the candidate query
(``candidates.py``) still counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..analyze.text import ParsedQuery, stem
from ..store.base import KeywordMatch
from .evidence import FIELD_FACTOR, MATCH_FACTOR, contains, stemmed_aliases

# rank, match, exact ("title"/"alias"/""), in title, BM25F (put into the match only for
# the candidates that are scored: copying a frozen match costs more than scoring it)
Ranked = tuple[float, KeywordMatch, str, bool, float]


@dataclass(frozen=True, slots=True)
class Prepared:
    """The per-query part of scoring: per clause its alternatives as (padded needle,
    idf × (k1 + 1) × match factor) in groups — the word and its synonyms, then the other
    forms of a verb, tried only when the first group matched nothing —, the field
    weights, the stemmed phrase, the average length and BM25's k1 and b."""

    clauses: tuple[tuple[tuple[tuple[str, float], ...], ...], ...]
    fields: tuple[tuple[str, float], ...]
    phrase: tuple[str, ...]
    avgdl: float
    k1: float
    b: float


def prepare(
    parsed: ParsedQuery,
    df: Mapping[str, int],
    n_chunks: int,
    avgdl: float,
    weights: Mapping[str, float],
    k1: float,
    b: float,
) -> Prepared:
    """What scoring a candidate for ``parsed`` needs that does not depend on the
    candidate (computed once per query)."""
    clauses: list[tuple[tuple[tuple[str, float], ...], ...]] = []
    for clause in parsed.clauses:
        alts: list[tuple[str, float]] = []
        # The other forms of a verb count at the document frequency of the most frequent
        # of the word and its forms (as one stemmed term would), so a rare form never
        # outscores the word asked for; the word keeps its own.
        shared = 0
        if any(a.kind == "inflection" for a in clause.alternatives):
            same = (a for a in clause.alternatives if a.kind in ("exact", "inflection"))
            shared = max(min(df.get(t, 0) for t in a.tokens) for a in same)
        forms: list[tuple[str, float]] = []
        for alt in clause.alternatives:
            n = min(df.get(t, 0) for t in alt.tokens)
            if alt.kind == "inflection":
                n = shared
            idf = max(math.log((n_chunks - n + 0.5) / (n + 0.5)), 1e-6)
            needle = " " + "  ".join(alt.tokens) + " "
            scored = (needle, idf * (k1 + 1) * MATCH_FACTOR[alt.kind])
            (forms if alt.kind == "inflection" else alts).append(scored)
        clauses.append((tuple(alts), tuple(forms)) if forms else (tuple(alts),))
    return Prepared(
        clauses=tuple(clauses),
        fields=tuple((f, weights.get(f, 1.0)) for f in FIELD_FACTOR),
        phrase=tuple(stem(t) for t in parsed.phrase),
        avgdl=avgdl,
        k1=k1,
        b=b,
    )


def bm25f(m: KeywordMatch, prep: Prepared) -> float:
    """BM25F of a candidate with one term per clause: the clause's best alternative.

    The same formula as FTS5's bm25() (column weights scale the term frequency, one
    length normalization over all columns; k1 and b from settings), except that a
    clause scores its best alternative rather than the sum of all (the other forms of a
    verb only where the word and its synonyms are absent), and synonym,
    stem-of-a-known-term, verb-form and typo alternatives count ``MATCH_FACTOR`` of their
    score: "delete" OR-ed with its synonyms must not outweigh "pod".
    """
    # Tokens are single-space separated; doubling the spaces makes every " t "
    # occurrence non-overlapping, so str.count counts terms and phrases exactly.
    columns = []
    length = 0
    fields = m.fields
    for f, weight in prep.fields:
        text = fields[f]
        if text:
            length += text.count(" ") + 1
            columns.append((weight, " " + text.replace(" ", "  ") + " "))
    norm = prep.k1 * (1 - prep.b + prep.b * length / prep.avgdl)
    total = 0.0
    for groups in prep.clauses:
        best = 0.0
        for alts in groups:
            if best:  # the other forms of a verb count where the word itself is absent
                break
            for needle, scale in alts:
                freq = 0.0
                for w, padded in columns:
                    if needle in padded:
                        freq += w * padded.count(needle)
                if freq:
                    score = scale * freq / (freq + norm)
                    if score > best:
                        best = score
        total += best
    return total


def title_match(
    m: KeywordMatch, phrase: tuple[str, ...], stop_words: frozenset[str]
) -> tuple[str, bool]:
    """(``"title"`` or ``"alias"`` when the stemmed query phrase is exactly the title or
    an alias, else ``""``; whether a phrase of two or more words is in one of them)."""
    if not phrase:
        return "", False
    aliases = stemmed_aliases(m)
    title = m.fields["title"]
    exact = ""
    if tuple(t for t in title.split() if t not in stop_words) == phrase:
        exact = "title"
    elif any(tuple(a.split()) == phrase for a in aliases):
        exact = "alias"
    in_title = len(phrase) > 1 and any(contains(t, phrase) for t in (title, *aliases))
    return exact, in_title


__all__ = ["Prepared", "Ranked", "bm25f", "prepare", "title_match"]
