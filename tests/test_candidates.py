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


def test_a_verb_finds_its_other_forms_and_the_form_asked_for_ranks_first(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    pages = {
        "asked": "# Probe\n\nThe probe runs when detecting a stalled worker.\n",
        "other": "# Watchdog\n\nA stalled worker is detected by the watchdog.\n",
        "noise": "# Pool\n\nThe pool keeps a worker per core.\n",
    }
    for name, text in pages.items():
        (docs / f"{name}.md").write_text(text)
    with KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="none")) as kb:
        kb.ingest(docs, source="docs")
        hits = kb.search("detecting stalled workers", limit=5).hits
        assert [h.title for h in hits][:2] == ["Probe", "Watchdog"]
        assert "detecting" in hits[1].matched_terms
        assert any("detected (inflection)" in e for e in hits[1].explanation)
        assert hits[0].score > hits[1].score
        # "detecting", "detects" and a form no page has: the query keeps only "detected"
        parsed, _ = kb.searcher.parse("detecting")
        assert [a.tokens for a in parsed.clauses[0].alternatives] == [
            ("detecting",),
            ("detected",),
        ]
    with KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="none", verb_forms=False)) as kb:
        hits = kb.search("detecting stalled workers", limit=5).hits
        assert [h.title for h in hits][:2] == ["Probe", "Watchdog"]
        assert "detecting" not in hits[1].matched_terms


def test_the_forms_of_a_verb_find_candidates_only_for_a_word_the_index_lacks() -> None:
    from groundkb.analyze.lexicon import inflections

    parsed = Analyzer(inflections=inflections).parse("detecting faults")
    held = {"detecting": 3, "detected": 5, "fault": 9}
    query = candidate_query(parsed, held, 1000, {}, Filters(), 50)
    assert ("detected",) not in query.phrases  # the word as asked finds; its forms rescore
    lacking = {"detected": 5, "fault": 9}
    query = candidate_query(parsed, lacking, 1000, {}, Filters(), 50)
    assert ("detected",) in query.phrases and ("detect",) in query.phrases
