"""Which chunks the store is asked for: a long question's candidates come from its
rarest known words, a large index's common words find candidates only in pairs, and the
ranking still counts every word."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.analyze.text import Analyzer
from groundkb.models import Filters
from groundkb.search import candidates
from groundkb.search.candidates import candidate_query

from .docmaker import write_pages

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


def test_common_words_of_a_large_index_find_candidates_only_in_pairs() -> None:
    parsed = Analyzer().parse("alpha bravo charlie delta echo")
    chunks = 100_000  # common: in more than 1 % of the chunks
    df = {"alpha": 50, "bravo": 5_000, "charlie": 2_000, "delta": 9_000, "echo": 3_000}
    query = candidate_query(parsed, df, chunks, {}, Filters(), 10)
    assert query.phrases == [("alpha",)]
    assert query.limit == 10
    # the three rarest common words, two by two
    assert query.together == [
        (("charlie",), ("echo",)),
        (("charlie",), ("bravo",)),
        (("echo",), ("bravo",)),
    ]
    assert query.together_limit == 5
    small = candidate_query(parsed, df, candidates.COMMON_MIN_CHUNKS - 1, {}, Filters(), 10)
    assert len(small.phrases) == 5 and not small.together
    one = candidate_query(Analyzer().parse("alpha bravo"), df, chunks, {}, Filters(), 10)
    assert one.phrases == [("alpha",)] and not one.together and one.together_limit == 0
    every = candidate_query(Analyzer().parse("bravo delta"), df, chunks, {}, Filters(), 10)
    assert every.phrases == [("bravo",), ("delta",)] and not every.together
    # one word a clause: "create" and its synonyms are one thing asked, not a pair
    synonyms = {"create": 4_000, "add": 3_000, "new": 9_000, "make": 8_000, "user": 2_500}
    df = {**synonyms, "token": 40}
    query = candidate_query(Analyzer().parse("create a user token"), df, chunks, {}, Filters(), 10)
    assert query.phrases == [("token",)]
    assert query.together == [(("user",), ("create",))]


def test_a_page_holding_two_common_words_but_no_rare_one_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(candidates, "COMMON_MIN_CHUNKS", 10)
    monkeypatch.setattr(candidates, "COMMON_RATIO", 0.3)
    docs = tmp_path / "docs"
    docs.mkdir()
    # "list" and "deployment" are each on 7 of the 16 pages (common); "payments" and
    # "team" on 3 others.
    (docs / "deployments.md").write_text("# List deployments\n\nlist every deployment\n")
    for i in range(12):
        words = "list items" if i % 2 else "deployment status"
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\n{words} filler\n")
    for i in range(3):
        (docs / f"pay{i}.md").write_text(f"# Payments {i}\n\npayments team ledger\n")
    settings = Settings(db=str(tmp_path / "kb.db"), embedder="none", candidates=5)
    with KnowledgeBase.open(settings=settings) as kb:
        assert kb.ingest(docs, source="docs").ok
        hits = kb.search("list the deployments of the payments team", limit=5).hits
        assert "deployments" in [h.doc_id for h in hits]
        monkeypatch.setattr(candidates, "TOGETHER_WORDS", 0)  # the words one by one
        hits = kb.search("list the deployments of the payments team", limit=5).hits
        assert "deployments" not in [h.doc_id for h in hits]


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
    pages = {
        "asked.md": "# Probe\n\nThe probe runs when detecting a stalled worker.\n",
        "other.md": "# Watchdog\n\nA stalled worker is detected by the watchdog.\n",
        "noise.md": "# Pool\n\nThe pool keeps a worker per core.\n",
    }
    docs = write_pages(tmp_path / "docs", pages)
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

    parsed = Analyzer(inflections=inflections).parse("when detecting faults")
    held = {"detecting": 3, "detected": 5, "fault": 9}
    query = candidate_query(parsed, held, 1000, {}, Filters(), 50)
    assert ("detected",) not in query.phrases  # the word as asked finds; its forms rescore
    lacking = {"detected": 5, "fault": 9}
    query = candidate_query(parsed, lacking, 1000, {}, Filters(), 50)
    assert ("detected",) in query.phrases and ("detect",) in query.phrases


def test_the_term_frequency_cache_stays_bounded_and_changes_no_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundkb.search import engine

    examples = Path(__file__).resolve().parent.parent / "examples"
    questions = [
        "invite a user to a workspace",
        "how do I reset my password",
        "delete a team",
        "list every project",
        "export billing invoices",
        "invite a user to a workspace",  # again: its terms were dropped meanwhile
    ]
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder="none", retrieval="keyword") as kb:
        assert kb.ingest(examples / "docs", source="docs").ok
        expected = [kb.search(q) for q in questions]
        unbounded = len(kb.searcher.derived().df)
    monkeypatch.setattr(engine, "DF_CACHE_TERMS", 6)
    sizes = []
    with KnowledgeBase.open(db, embedder="none", retrieval="keyword") as kb:
        for question, before in zip(questions, expected, strict=True):
            after = kb.search(question)
            assert after.verdict == before.verdict
            assert [(h.chunk_id, h.score) for h in after.hits] == [
                (h.chunk_id, h.score) for h in before.hits
            ]
            sizes.append(len(kb.searcher.derived().df))
    assert unbounded > 2 * 6
    assert max(sizes) < unbounded and sizes[-1] <= 6  # the last question's terms alone
