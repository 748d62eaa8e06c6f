"""The acceptance cases of the phased doc-retrieval plan, on the example docs."""

from __future__ import annotations

from pathlib import Path

from groundkb import KnowledgeBase, Settings
from groundkb.models import Hit, SearchResult, Verdict
from groundkb.search.special import compared, compared_answer, intents


def test_explain_workspace_answers_with_the_workspace_doc_and_its_header_path(
    docs_kb: KnowledgeBase,
) -> None:
    r = docs_kb.search("explain workspace")
    assert r.verdict.kind == "answer"
    assert r.hits[0].doc_id == "concepts/workspace"
    assert r.hits[0].header_path == "Workspace"
    assert "workspace" in r.hits[0].matched_terms


def test_what_is_home_answers_with_the_home_doc(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("what is home")
    assert r.verdict.kind == "answer"
    assert r.hits[0].doc_id == "concepts/home"


def test_explain_calendar_is_no_match(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("explain calendar")
    assert r.verdict.kind == "no_match"
    assert r.hits == ()


def test_content_only_match_asks_for_clarification(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("tell me about panels")
    assert r.verdict.kind == "clarify"
    assert r.verdict.reason == "no_title_or_keyword_hit"
    assert r.hits and r.hits[0].doc_id == "concepts/widgets"


def test_a_word_naming_two_documents_asks_which_one(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("home")
    assert r.verdict.kind == "clarify"
    assert r.verdict.reason == "ambiguous"
    assert {"Home", "Dashboard"} <= set(r.suggestions)


def test_synonym_rewrite_finds_quick_links(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("shortcuts")
    assert r.verdict.kind == "answer"
    assert r.hits[0].doc_id == "widgets/quick-links"


def test_typo_is_corrected_against_the_index_vocabulary(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("wrkspace")
    assert r.corrected_query == "workspace"
    assert r.verdict.kind == "answer"
    assert r.hits[0].doc_id == "concepts/workspace"


def test_two_intents_return_both_documents(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("workspace and widgets")
    assert r.multi_intent
    assert r.verdict.kind == "answer"
    assert [h.doc_id for h in r.hits[:2]] == ["concepts/workspace", "concepts/widgets"]


def test_a_comparison_answers_from_each_thing_it_compares(docs_kb: KnowledgeBase) -> None:
    # "home" alone is the Home page or the Dashboard (whose alias is home); compared with
    # the dashboard it is the Home page
    for q in (
        "what's the difference between home and the dashboard",
        "How does home differ from the dashboard?",
        "compare home with the dashboard",
    ):
        r = docs_kb.search(q)
        assert r.multi_intent, q
        assert r.verdict.kind == "answer" and r.verdict.reason == "multi_intent", q
        assert r.verdict.message.startswith("Compared: Home; Dashboard."), q
        assert [h.doc_id for h in r.hits[:2]] == ["concepts/home", "concepts/dashboard"], q
        scores = [h.score for h in r.hits]
        assert scores == sorted(scores, reverse=True), q
        assert r.query == q
    # not compared, "home" stays a question of which one
    assert not docs_kb.search("home and dashboard").multi_intent


def test_the_words_that_compare_are_not_what_a_question_is_about(
    docs_kb: KnowledgeBase,
) -> None:
    r = docs_kb.search("what is the difference between a workspace and a project")
    assert r.verdict.kind == "no_match"
    assert "'project'" in r.verdict.message
    assert "difference" not in r.verdict.message and "between" not in r.verdict.message
    assert r.hits[0].doc_id == "concepts/workspace"


def test_two_commands_compared_are_each_looked_up(commands_kb: KnowledgeBase) -> None:
    r = commands_kb.search(
        "what's the difference between helios gw users list and helios gw users get"
    )
    assert r.multi_intent and r.verdict.reason == "multi_intent"
    assert [h.command for h in r.hits[:2]] == ["helios gw users list", "helios gw users get"]


def test_things_compared_are_not_one_title(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "boards.md").write_text("# Board view\n\nA board shows tasks in columns.\n")
    (docs / "views.md").write_text("# Saved views\n\nA view keeps a filter of tasks.\n")
    with KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="none")) as kb:
        kb.ingest(docs, source="docs")
        assert kb.search("board view").verdict.reason == "exact_title"
        r = kb.search("what's the difference between a board and a view")
        # "a board and a view" is not the page titled "Board view"
        assert r.verdict.reason != "exact_title"
        assert {h.doc_id for h in r.hits[:2]} == {"boards", "views"}


def test_an_answer_to_a_comparison_matches_every_thing_compared() -> None:
    hit = Hit("views", "views#0", "Saved views", "page", "concepts", "docs", "", 0.8,
              ("saved", "views"), "", "", "", "", ())  # fmt: skip
    result = SearchResult("q", Verdict("answer", 0.8, "strong_match", "Answer from it."), (hit,))
    asked = compared_answer(result, ["labels", "saved views"])
    assert asked.verdict.kind == "clarify" and asked.verdict.reason == "weak"
    assert asked.verdict.options[0].doc_id == "views"
    assert "labels and saved views" in asked.verdict.message
    # as sure of its clarify as the engine would be: P(scope) × (1 − P(answer))
    assert asked.verdict.confidence == 0.16
    assert compared_answer(result, ["views", "saved views"]) is result


def test_a_request_with_several_objects_is_one_topic() -> None:
    assert intents("get the current date and time") == ["get the current date and time"]
    assert intents("list users and groups") == ["list users and groups"]
    assert intents("workspace and widgets") == ["workspace", "widgets"]
    assert intents("pause a rule and mute a project") == ["pause a rule", "mute a project"]


def test_what_a_question_compares() -> None:
    assert compared("difference between archiving a task and archiving a project") == [
        "archiving a task",
        "archiving a project",
    ]
    assert compared("the main differences between git reset, git revert and git restore?") == [
        "git reset",
        "git revert",
        "git restore",
    ]
    assert compared("tokens compared to passwords") == ["tokens", "passwords"]
    for q in (
        "compare two commits",  # a request to compare, naming one thing
        "show the difference between two commits",
        "Venules have a thinner or absent smooth layer compared to arterioles.",  # a claim
        "difference between",
    ):
        assert compared(q) is None, q


def test_vague_questions_are_no_match(docs_kb: KnowledgeBase) -> None:
    for q in ("how do I do it", "the thing"):
        r = docs_kb.search(q)
        assert r.verdict.kind == "no_match", q
        assert r.hits == ()


def test_section_question_returns_the_section_with_its_header_path(
    docs_kb: KnowledgeBase,
) -> None:
    r = docs_kb.search("editing quick links")
    assert r.hits[0].doc_id == "widgets/quick-links"
    assert r.hits[0].header_path == "Quick Links > Editing"


def test_every_hit_carries_evidence(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("share a workspace with a team")
    assert r.hits
    for h in r.hits:
        assert 0 < h.score <= 1
        assert h.matched_terms and h.explanation
        assert h.content_hash and h.chunk_hash and h.citation.startswith("docs:")
        assert h.chunk_id.startswith(h.doc_id + "#")
        assert h.ranks["keyword"] >= 1


def test_at_most_two_chunks_per_document(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("workspace notes widgets home dashboard", limit=20)
    counts: dict[str, int] = {}
    for h in r.hits:
        counts[h.doc_id] = counts.get(h.doc_id, 0) + 1
    assert max(counts.values()) <= 2


def test_filters_restrict_type_category_and_source(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("links widget", type="feature")
    assert r.hits and all(h.type == "feature" for h in r.hits)
    r = docs_kb.search("widgets", category="concepts")
    assert r.hits and all(h.category == "concepts" for h in r.hits)
    assert docs_kb.search("widgets", source="nothing-here").hits == ()
