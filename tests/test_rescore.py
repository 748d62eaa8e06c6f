"""Keyword rescoring (``search/rescore.py``): BM25F counts every alternative of every
clause in a candidate's fields as whole runs of words."""

from __future__ import annotations

import math
import random

import pytest

from groundkb.analyze.text import Alternative, Clause, ParsedQuery
from groundkb.search.evidence import score_evidence
from groundkb.search.rescore import Prepared, bm25f, prepare
from groundkb.store.base import DocSummary, KeywordMatch

WEIGHTS = {"title": 3.0, "aliases": 2.0, "keywords": 1.7, "header": 1.3, "body": 0.7}
K1, B, AVGDL, N_CHUNKS = 1.2, 0.75, 12.0, 1000


def _match(**fields: str) -> KeywordMatch:
    every = {f: fields.get(f, "") for f in ("title", "aliases", "keywords", "header", "body")}
    doc = DocSummary("d", "s", "doc", "", "t", "", (), (), "", "")
    return KeywordMatch("d#0", "d", 0, 1.0, every, "", "", "", doc, "")


def _query(*clauses: tuple[tuple[str, str], ...]) -> ParsedQuery:
    built = tuple(
        Clause(alts[0][0], tuple(Alternative(tuple(t.split()), kind) for t, kind in alts))  # type: ignore[arg-type]
        for alts in clauses
    )
    return ParsedQuery(" ".join(c.original for c in built), (), built)


def _prepared(parsed: ParsedQuery, df: dict[str, int]) -> Prepared:
    return prepare(parsed, df, N_CHUNKS, AVGDL, WEIGHTS, K1, B)


def _counted(field: str, phrase: str) -> int:
    """Occurrences of the words ``phrase`` in ``field``, taken left to right, two of them
    sharing no word (the definition ``bm25f`` keeps)."""
    words, wanted = field.split(), phrase.split()
    n = i = 0
    while i + len(wanted) <= len(words):
        if words[i : i + len(wanted)] == wanted:
            n += 1
            i += len(wanted)
        else:
            i += 1
    return n


def _reference(m: KeywordMatch, parsed: ParsedQuery, prep: Prepared) -> float:
    """BM25F as its docstring defines it, computed the plain way."""
    length = sum(len(t.split()) for t in m.fields.values() if t)
    norm = K1 * (1 - B + B * length / AVGDL)
    total = 0.0
    for clause, groups in zip(parsed.clauses, prep.clauses, strict=True):
        plain = [a for a in clause.alternatives if a.kind != "inflection"]
        forms = [a for a in clause.alternatives if a.kind == "inflection"]
        best = 0.0
        for alts, scored in zip((plain, forms), groups, strict=False):
            if best:
                break
            for alt, (_, scale) in zip(alts, scored, strict=True):
                freq = 0.0
                for f, w in prep.fields:
                    if m.fields[f]:
                        n = _counted(m.fields[f], " ".join(alt.tokens))
                        if n:
                            freq += w * n
                if freq:
                    best = max(best, scale * freq / (freq + norm))
        total += best
    return total


@pytest.mark.parametrize(
    ("field", "phrase", "expected"),
    [
        ("a a a a", "a a", 2),
        ("a a a", "a a", 1),
        ("x a b a b a y", "a b a", 1),
        ("a b a b a b a", "a b a", 2),
        ("go go", "go", 2),
        ("going go gone", "go", 1),
        ("pod pods pod", "pod", 2),
    ],
)
def test_a_phrase_is_counted_as_whole_words_that_no_two_occurrences_share(
    field: str, phrase: str, expected: int
) -> None:
    assert _counted(field, phrase) == expected
    parsed = _query(((phrase, "exact"),))
    prep = _prepared(parsed, {t: 10 for t in phrase.split()})
    score = bm25f(_match(body=field), prep)
    freq = WEIGHTS["body"] * expected
    length = len(field.split())
    idf = math.log((N_CHUNKS - 10 + 0.5) / (10 + 0.5))
    want = idf * (K1 + 1) * freq / (freq + K1 * (1 - B + B * length / AVGDL))
    assert score == pytest.approx(want)


def test_bm25f_counts_every_alternative_as_the_plain_definition_does() -> None:
    """Random fields and questions over a small vocabulary, so that words repeat, phrases
    overlap one another and themselves, and alternatives share words."""
    rng = random.Random(7)
    vocab = ["a", "b", "pod", "pods", "get", "list", "delete", "user", "3", "dimensional"]
    kinds = ["exact", "synonym", "plural", "typo", "inflection"]
    for _ in range(400):
        fields = {
            f: " ".join(rng.choices(vocab, k=rng.randint(0, 12)))
            for f in WEIGHTS
            if rng.random() < 0.7
        }
        clauses = []
        for _ in range(rng.randint(1, 4)):
            alts = [(" ".join(rng.choices(vocab, k=rng.randint(1, 3))), "exact")]
            alts += [
                (" ".join(rng.choices(vocab, k=rng.randint(1, 3))), rng.choice(kinds))
                for _ in range(rng.randint(0, 3))
            ]
            clauses.append(tuple(alts))
        parsed = _query(*clauses)
        prep = _prepared(parsed, {w: rng.randint(0, 50) for w in vocab})
        m = _match(**fields)
        assert bm25f(m, prep) == pytest.approx(_reference(m, parsed, prep), rel=1e-12, abs=0)


def test_a_candidate_without_a_word_of_the_question_scores_zero() -> None:
    prep = _prepared(_query((("pod", "exact"),)), {"pod": 3})
    assert bm25f(_match(title="podcast", body="the pods of a podium"), prep) == 0.0


def test_evidence_from_what_rescoring_found_equals_evidence_from_the_fields() -> None:
    """``score_evidence`` reads where rescoring found each alternative (a candidate only
    vector search found looks at its fields instead): both ways agree."""
    rng = random.Random(11)
    vocab = ["a", "b", "pod", "pods", "get", "list", "user", "3", "dimensional"]
    kinds = ["exact", "synonym", "plural", "typo", "inflection"]
    for _ in range(300):
        fields = {f: " ".join(rng.choices(vocab, k=rng.randint(0, 8))) for f in WEIGHTS}
        clauses = [
            tuple(
                (" ".join(rng.choices(vocab, k=rng.randint(1, 2))), kind)
                for kind in ["exact", *rng.choices(kinds, k=rng.randint(0, 3))]
            )
            for _ in range(rng.randint(1, 4))
        ]
        parsed = _query(*clauses)
        prep = _prepared(parsed, {w: rng.randint(0, 50) for w in vocab})
        m = _match(**fields)
        bm25f(m, prep)
        holding = prep.fields_holding(m.chunk_id)
        assert holding is not None
        weights = [rng.random() for _ in parsed.clauses]
        args = (1.0, m, "", False, parsed, weights, frozenset({"the"}))
        assert score_evidence(*args, holding) == score_evidence(*args)
    assert prep.fields_holding("another#0") is None
