"""What the engine asks a store for: the keyword candidate query and the typo correction
chosen among the terms a store finds similar.

**Common terms.** On a large index (``COMMON_MIN_CHUNKS``) a word found in more than
``COMMON_RATIO`` of the chunks would make the candidate query score most of the index.
Such single words are left out of the phrases sent to the store (unless nothing else is
left): the candidates are what the rarer words find, ordered by those words only — the
"common terms" strategy of Lucene. The engine then rescores every candidate with all
the query's words (``rescore.bm25f``), so a common word still counts in the ranking.

Alone, that strategy loses the chunks that hold the common words but not the rare ones:
"list only the deployments labelled team=payments" found its candidates by "payments"
and "team", never the operation that lists deployments. So two common words together
find candidates too: every pair of the ``TOGETHER_WORDS`` rarest common words, one word
a clause (a clause's synonyms are one thing asked, not two), for ``TOGETHER_SHARE`` of
``limit`` more candidates (a pair of common words is as selective as a rare word, and
FTS5 intersects their posting lists by skipping). Measured on a
28,676-chunk index of six development sets (docs/benchmarks.md, "Common words on a
large index"): keyword hit@1 on the API questions +0.04, on the Python docs +0.14, TF
Hub nDCG@10 +0.026, no set lower by more than 0.0003 (hybrid: smaller gains, tldr
−0.0025). At 100k chunks the median keyword search is as fast as before, p95 1.5 ms
slower.

**Long questions.** A question of many words ("ALDH1 expression is associated with
poorer prognosis for breast cancer primary tumors") would have the store score every
chunk that holds any of them: on a mid-size index often a third of it. Only the
``max_clauses`` rarest clauses the index knows (setting ``candidate_clauses``, 8; 0 or
less: all) find candidates; the rescoring still counts every clause. Measured on the
development sets (docs/benchmarks.md): nDCG@10 within 0.0007, SciFact claims p50 −10 %
and p95 −30 % (keyword).

**Typo correction.** Among the indexed terms within the allowed edits of an unknown
word (``Store.similar_terms``: optimal string alignment distance, so a swap of two
neighbouring letters is one edit), words shorter than three letters and numbers are
never a correction. Of the 25 nearest, those that keep the word's first letter (people
rarely mistype it) compete: the fewest edits win, then a known term (a name of the
index), then the more frequent. The engine allows one edit, from the word's index form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

from ..analyze.text import Alternative, Clause, ParsedQuery
from ..models import Filters
from ..store.base import KeywordQuery, SimilarTerm

COMMON_MIN_CHUNKS = 20_000
COMMON_RATIO = 0.01
TOGETHER_WORDS = 3
TOGETHER_SHARE = 0.5
CORRECTION_POOL = 25


def candidate_query(
    parsed: ParsedQuery,
    df: Mapping[str, int],
    chunks: int,
    weights: Mapping[str, float],
    filters: Filters,
    limit: int,
    max_clauses: int = 0,
) -> KeywordQuery:
    """Every alternative of the ``max_clauses`` rarest known clauses (0: of every clause)
    as a phrase, minus the common single words; pairs of the rarest common words as
    groups a chunk must hold together."""
    clauses = list(parsed.clauses)
    known = [(c, clause_df(c, df)) for c in clauses]
    known = [(c, n) for c, n in known if n > 0]
    if max_clauses > 0 and len(known) > max_clauses:
        clauses = [c for c, _ in sorted(known, key=lambda cn: cn[1])[:max_clauses]]
    finding = [_finding(c, df) for c in clauses]
    phrases = sorted({a.tokens for alts in finding for a in alts if a.tokens})
    common: set[str] = set()
    if chunks >= COMMON_MIN_CHUNKS:
        singles = [p[0] for p in phrases if len(p) == 1]
        common = {t for t in singles if df.get(t, 0) > COMMON_RATIO * chunks}
        if len(common) == len(phrases):
            common = set()
    if not common:
        return KeywordQuery(phrases, weights, filters, limit)
    rare = [p for p in phrases if not (len(p) == 1 and p[0] in common)]
    # One word a clause: a pair of synonyms of one clause would not be two of the
    # question's words. The word as asked, else the clause's rarest common alternative.
    words: dict[str, int] = {}
    for alts in finding:
        mine = [a for a in alts if len(a.tokens) == 1 and a.tokens[0] in common]
        if mine:
            best = min(mine, key=lambda a: (a.kind != "exact", df.get(a.tokens[0], 0)))
            words.setdefault(best.tokens[0], df.get(best.tokens[0], 0))
    rarest = sorted(words, key=lambda t: (words[t], t))[:TOGETHER_WORDS]
    pairs = [((a,), (b,)) for a, b in combinations(rarest, 2)]
    more = max(1, round(limit * TOGETHER_SHARE)) if pairs else 0
    return KeywordQuery(rare, weights, filters, limit, together=pairs, together_limit=more)


def _finding(clause: Clause, df: Mapping[str, int]) -> tuple[Alternative, ...]:
    """The alternatives of ``clause`` that find candidates. The other forms of a verb
    only when the index lacks the word as asked ("detecting" where only "detected" is
    indexed); otherwise they count in the rescoring but find nothing of their own: on
    the development sets that kept the gain in nDCG@10 without most of its cost
    (docs/benchmarks.md, "Verb forms")."""
    if not any(a.kind == "inflection" for a in clause.alternatives):
        return clause.alternatives
    if any(df.get(a.tokens[0], 0) > 0 for a in clause.alternatives if a.kind == "exact"):
        return tuple(a for a in clause.alternatives if a.kind != "inflection")
    return clause.alternatives


def clause_df(clause: Clause, df: Mapping[str, int]) -> int:
    """Chunks holding the clause's most frequent alternative the index has (0: none has
    any): how common the clause is, for choosing the rarest ones and for its idf."""
    return max(
        (min(df.get(t, 0) for t in a.tokens) for a in clause.alternatives if a.tokens), default=0
    )


def correction(
    word: str, similar: Sequence[SimilarTerm], known_terms: frozenset[str]
) -> str | None:
    """The best correction of ``word`` among similar terms (nearest first), or None."""
    pool = [s for s in similar if len(s.term) >= 3 and not s.term.isdigit()][:CORRECTION_POOL]
    pool = [s for s in pool if s.term[:1] == word[:1]]
    if not pool:
        return None
    best = min(pool, key=lambda s: (s.edits, s.term not in known_terms, -s.chunks))
    return best.term
