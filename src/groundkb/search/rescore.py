"""Keyword rescoring: the BM25F of a candidate with all the query's clauses, and whether
the query phrase is its title or an alias (see ``engine.py`` for the rank formula).

The store's candidates come ordered by FTS5's bm25(); here each is scored again with one
term per clause (its best alternative), so that synonym, stem, verb-form and typo alternatives
count ``MATCH_FACTOR`` of their score and a common word left out of the candidate query
(``candidates.py``) still counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ahocorasick_rs import AhoCorasick

from ..analyze.text import Clause, ParsedQuery, stem
from ..store.base import KeywordMatch
from .evidence import FIELD_FACTOR, MATCH_FACTOR, asked_terms, contains, stemmed_aliases

# needle number -> the fields holding it, as bits in FIELD_FACTOR's order
Located = dict[int, int]
# rank, match, exact ("title"/"alias"/""), in title, BM25F (put into the match only for
# the candidates that are scored: copying a frozen match costs more than scoring it)
Ranked = tuple[float, KeywordMatch, str, bool, float]


@dataclass(frozen=True, slots=True)
class Prepared:
    """The per-query part of scoring: per clause its alternatives as (needle number,
    idf × (k1 + 1) × match factor) in groups — the word and its synonyms, then the other
    forms of a verb, tried only when the first group matched nothing —, the needles (each
    alternative as `` t1 t2 ``) in one automaton and their numbers by tokens, the needles
    that can overlap themselves by more than a space, the field weights, the stemmed
    phrase, the average length and BM25's k1 and b; and, filled in by ``bm25f``, where
    each candidate scored so far holds each needle (``Located``)."""

    clauses: tuple[tuple[tuple[tuple[int, float], ...], ...], ...]
    needles: AhoCorasick
    numbers: Mapping[tuple[str, ...], int]
    bordered: frozenset[int]
    fields: tuple[tuple[str, float], ...]
    phrase: tuple[str, ...]
    avgdl: float
    k1: float
    b: float
    # per word of ``phrase``, its stemmed forms: the word and the other forms of a verb
    forms: tuple[frozenset[str], ...] = ()
    # what a title must hold to be the phrase: the start its last word's forms share
    needle: str = ""
    # per clause, the other forms of its verb as index terms (a one-word clause; else
    # none): a name that holds one names what the word asks for ("Archive Tasks" for
    # "archiving tasks"; ``evidence.score_evidence``)
    clause_forms: tuple[frozenset[str], ...] = ()
    # the question's index terms with those forms: what a name's words may be covered by
    # (``evidence.asked_terms``; None: gathered where needed)
    terms: frozenset[str] | None = None
    located: dict[str, Located] = field(default_factory=dict)

    def fields_holding(self, chunk_id: str) -> Callable[[tuple[str, ...]], int] | None:
        """For a candidate ``bm25f`` scored: the fields that hold an alternative's
        tokens, as bits in ``FIELD_FACTOR``'s order (None for one it did not score)."""
        located = self.located.get(chunk_id)
        if located is None:
            return None
        numbers = self.numbers
        return lambda tokens: located.get(numbers[tokens], 0)


def prepare(
    parsed: ParsedQuery,
    df: Mapping[str, int],
    n_chunks: int,
    avgdl: float,
    weights: Mapping[str, float],
    k1: float,
    b: float,
    verb_forms: Callable[[str], Sequence[str]] | None = None,
) -> Prepared:
    """What scoring a candidate for ``parsed`` needs that does not depend on the
    candidate (computed once per query)."""
    numbers: dict[tuple[str, ...], int] = {}
    clauses: list[tuple[tuple[tuple[int, float], ...], ...]] = []
    for clause in parsed.clauses:
        alts: list[tuple[int, float]] = []
        # The other forms of a verb count at the document frequency of the most frequent
        # of the word and its forms (as one stemmed term would), so a rare form never
        # outscores the word asked for; the word keeps its own.
        shared = 0
        if any(a.kind == "inflection" for a in clause.alternatives):
            same = (a for a in clause.alternatives if a.kind in ("exact", "inflection"))
            shared = max(min(df.get(t, 0) for t in a.tokens) for a in same)
        forms: list[tuple[int, float]] = []
        for alt in clause.alternatives:
            n = min(df.get(t, 0) for t in alt.tokens)
            if alt.kind == "inflection":
                n = shared
            idf = max(math.log((n_chunks - n + 0.5) / (n + 0.5)), 1e-6)
            number = numbers.setdefault(alt.tokens, len(numbers))
            scored = (number, idf * (k1 + 1) * MATCH_FACTOR[alt.kind])
            (forms if alt.kind == "inflection" else alts).append(scored)
        clauses.append((tuple(alts), tuple(forms)) if forms else (tuple(alts),))
    words = phrase_forms(parsed, verb_forms)
    other_forms = clause_forms(parsed, verb_forms)
    return Prepared(
        clauses=tuple(clauses),
        needles=AhoCorasick([" " + " ".join(tokens) + " " for tokens in numbers]),
        numbers=numbers,
        bordered=frozenset(n for tokens, n in numbers.items() if _bordered(tokens)),
        fields=tuple((f, weights.get(f, 1.0)) for f in FIELD_FACTOR),
        phrase=tuple(stem(t) for t in parsed.phrase),
        avgdl=avgdl,
        k1=k1,
        b=b,
        forms=words,
        needle=_shared_start(words[-1]) if words else "",
        clause_forms=other_forms,
        terms=asked_terms(parsed, other_forms),
    )


def phrase_forms(
    parsed: ParsedQuery, verb_forms: Callable[[str], Sequence[str]] | None = None
) -> tuple[frozenset[str], ...]:
    """Per word of the query's phrase, the stemmed forms it may take in a title: a
    one-word clause's other verb forms (those the query kept, else ``verb_forms`` of the
    word searched for, a typo's correction: "upload" is "uploading" in "Uploading
    Files"), else the word itself."""
    out: list[frozenset[str]] = []
    for clause in parsed.clauses:
        first = clause.alternatives[0].tokens
        if len(first) == 1:
            others = _other_forms(clause, first[0], verb_forms)
            out.append(frozenset({stem(first[0]), *(stem(t) for t in others)}))
        else:
            out.extend(frozenset({stem(t)}) for t in first)
    return tuple(out)


def clause_forms(
    parsed: ParsedQuery, verb_forms: Callable[[str], Sequence[str]] | None = None
) -> tuple[frozenset[str], ...]:
    """Per clause, the other forms of its verb as index terms: a one-word clause's
    ``inflection`` alternatives (keyword search keeps them), else ``verb_forms`` of the
    word as asked; none for a clause of several words or a typo's correction."""
    out: list[frozenset[str]] = []
    for clause in parsed.clauses:
        alts = clause.alternatives
        first = alts[0].tokens
        if len(first) != 1 or " " in clause.original or any(a.kind == "typo" for a in alts):
            out.append(frozenset())
            continue
        others = _other_forms(clause, clause.original, verb_forms)
        own = {t for a in alts if a.kind != "inflection" for t in a.tokens}
        out.append(frozenset(stem(t) for t in others) - own)
    return tuple(out)


def _other_forms(
    clause: Clause, word: str, verb_forms: Callable[[str], Sequence[str]] | None
) -> Sequence[str]:
    """The other forms of a one-word clause's verb: its ``inflection`` alternatives
    (keyword search keeps them), else ``verb_forms`` of ``word``."""
    others = [a.tokens[0] for a in clause.alternatives if a.kind == "inflection"]
    if not others and verb_forms is not None:
        return verb_forms(word)
    return others


def _bordered(tokens: tuple[str, ...]) -> bool:
    """Whether the phrase begins with words it ends with ("a a", "a b a"): two of its
    occurrences can then share words, not just the space between them."""
    return any(tokens[:j] == tokens[-j:] for j in range(1, len(tokens)))


def bm25f(m: KeywordMatch, prep: Prepared) -> float:
    """BM25F of a candidate with one term per clause: the clause's best alternative.

    The same formula as FTS5's bm25() (column weights scale the term frequency, one
    length normalization over all columns; k1 and b from settings), except that a
    clause scores its best alternative rather than the sum of all (the other forms of a
    verb only where the word and its synonyms are absent), and synonym,
    stem-of-a-known-term, verb-form and typo alternatives count ``MATCH_FACTOR`` of their
    score: "delete" OR-ed with its synonyms must not outweigh "pod".

    Records in ``prep.located`` which fields hold each alternative.
    """
    # Fields are tokens separated by single spaces. Joined as " f1 \n f2 \n ... ", every
    # needle (" t1 t2 ") is found in one overlapping pass of the automaton: two
    # occurrences may share the space between them, never a line break. A bordered
    # needle's occurrences are taken left to right, each sharing no word with the last.
    texts: list[str] = []
    starts: list[int] = []  # where each field begins in the joined text
    slots: list[int] = []  # and its place in prep.fields
    length = 0
    at = 0
    fields = m.fields
    for slot, (f, _) in enumerate(prep.fields):
        text = fields[f]
        if text:
            length += text.count(" ") + 1
            texts.append(text)
            starts.append(at)
            slots.append(slot)
            at += len(text) + 3
    found = prep.needles.find_matches_as_indexes(" " + " \n ".join(texts) + " ", overlapping=True)
    located: Located = {}
    prep.located[m.chunk_id] = located
    if not found:
        return 0.0
    counts: dict[int, int] = {}  # needle number × 8 + field slot -> occurrences
    bordered = prep.bordered
    ends: dict[int, int] = {}
    last = len(starts) - 1
    for number, start, end in found:
        if bordered and number in bordered:
            if start < ends.get(number, 0):
                continue
            ends[number] = end - 1  # the next may begin at this one's closing space
        i = last
        while starts[i] > start:
            i -= 1
        key = number << 3 | slots[i]  # five fields: a slot fits in three bits
        counts[key] = counts.get(key, 0) + 1
    # Matches come in text order, so each needle's fields come in prep.fields order: its
    # frequency adds up weight × occurrences field by field, as FTS5's does.
    frequencies: dict[int, float] = {}
    weights = prep.fields
    for key, n in counts.items():
        number, slot = key >> 3, key & 7
        frequencies[number] = frequencies.get(number, 0.0) + weights[slot][1] * n
        located[number] = located.get(number, 0) | 1 << slot
    norm = prep.k1 * (1 - prep.b + prep.b * length / prep.avgdl)
    total = 0.0
    for groups in prep.clauses:
        best = 0.0
        for alts in groups:
            if best:  # the other forms of a verb count where the word itself is absent
                break
            for number, scale in alts:
                freq = frequencies.get(number)
                if freq:
                    score = scale * freq / (freq + norm)
                    if score > best:
                        best = score
        total += best
    return total


def title_match(
    m: KeywordMatch,
    phrase: tuple[str, ...],
    stop_words: frozenset[str],
    forms: tuple[frozenset[str], ...] = (),
    needle: str = "",
) -> tuple[str, bool]:
    """(``"title"`` or ``"alias"`` when the stemmed query phrase is exactly the title or
    an alias, each word in one of its ``forms`` (per word; default: as written), else
    ``""``; whether a phrase of two or more words is in one of them). ``needle``: the
    start that every form of the last word shares (default: the last word)."""
    if not phrase:
        return "", False
    if len(forms) != len(phrase):
        forms, needle = tuple(frozenset({t}) for t in phrase), phrase[-1]
    elif not needle:
        needle = _shared_start(forms[-1])
    aliases = stemmed_aliases(m)
    title = m.fields["title"]
    exact = ""
    # a title that is the phrase holds the start of its last word's forms: most
    # candidates' titles do not
    if needle in title and _is_phrase([t for t in title.split() if t not in stop_words], forms):
        exact = "title"
    elif any(needle in a and _is_phrase(a.split(), forms) for a in aliases):
        exact = "alias"
    in_title = len(phrase) > 1 and any(contains(t, phrase) for t in (title, *aliases))
    return exact, in_title


def _shared_start(words: frozenset[str]) -> str:
    """The longest start every one of ``words`` has ("upload", "uploaded": "upload")."""
    first, last = min(words), max(words)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def _is_phrase(words: list[str], forms: tuple[frozenset[str], ...]) -> bool:
    return len(words) == len(forms) and all(w in f for w, f in zip(words, forms, strict=True))


__all__ = [
    "Prepared",
    "Ranked",
    "bm25f",
    "clause_forms",
    "phrase_forms",
    "prepare",
    "title_match",
]
