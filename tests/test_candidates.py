"""Which chunks the store is asked for: a long question's candidates come from its
rarest known words, while the ranking still counts every word."""

from __future__ import annotations

from pathlib import Path

from groundkb import KnowledgeBase, Settings
from groundkb.analyze.text import Analyzer
from groundkb.models import Filters
from groundkb.search.candidates import candidate_query

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
]


def test_a_long_question_finds_candidates_by_its_rarest_known_words() -> None:
    parsed = Analyzer().parse(" ".join([*WORDS, "zulu"]))
    df = {w: 10 * (i + 1) for i, w in enumerate(WORDS)}  # alpha rarest; zulu unknown
    query = candidate_query(parsed, df, 1000, {}, Filters(), 50, max_clauses=8)
    assert {p[0] for p in query.phrases} == set(WORDS[:8])  # unknown words do not count
    every = candidate_query(parsed, df, 1000, {}, Filters(), 50, max_clauses=0)
    assert {p[0] for p in every.phrases} == {*WORDS, "zulu"}
    short = Analyzer().parse("alpha bravo")
    assert candidate_query(short, df, 1000, {}, Filters(), 50, max_clauses=8).phrases == [
        ("alpha",),
        ("bravo",),
    ]


def test_words_left_out_of_the_candidates_still_count_in_the_ranking(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    # "juliet" is in every page, so it is the word a 10-word question leaves out of its
    # candidate query; the page holding every word must still match it and come first.
    (docs / "all.md").write_text("# All\n\n" + " ".join(WORDS) + "\n")
    for i in range(12):
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\njuliet {WORDS[i % 9]} filler text\n")
    for clauses in (8, 0):
        settings = Settings(db=str(tmp_path / f"kb{clauses}.db"), embedder="none")
        with KnowledgeBase.open(settings=settings.replace(candidate_clauses=clauses)) as kb:
            assert kb.ingest(docs, source="docs").ok
            top = kb.search(" ".join(WORDS)).hits[0]
            assert top.doc_id == "all"
            assert set(top.matched_terms) == set(WORDS)
