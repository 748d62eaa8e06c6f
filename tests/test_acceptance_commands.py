"""The knowledge-MCP proposal's command tests, on the example entries file."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.errors import NotFound

from .conftest import EXAMPLES


def test_finds_command_by_exact_name(commands_kb: KnowledgeBase) -> None:
    r = commands_kb.search("helios gw users list")
    assert r.verdict.kind == "answer"
    assert r.hits[0].doc_id == "cmd-gw-users-list"
    assert r.hits[0].command == "helios gw users list"


def test_finds_command_by_description(commands_kb: KnowledgeBase) -> None:
    r = commands_kb.search("list all users")
    assert "cmd-gw-users-list" in [h.doc_id for h in r.hits]
    assert r.hits[0].doc_id == "cmd-gw-users-list"


def test_unknown_command_returns_nothing_but_suggestions(commands_kb: KnowledgeBase) -> None:
    r = commands_kb.search("helios get-users")
    assert r.hits == ()
    assert r.verdict.kind == "no_match"
    assert r.verdict.reason == "unknown_command"
    assert "helios gw users list" in r.suggestions


def test_get_command_provides_exact_syntax(commands_kb: KnowledgeBase) -> None:
    doc = commands_kb.get_command("helios gw users list")
    assert "helios gw users list" in doc.content
    assert doc.id == "cmd-gw-users-list"


def test_get_command_by_alias(commands_kb: KnowledgeBase) -> None:
    assert commands_kb.get_command("helios gw users get").id == "cmd-gw-users-get"


def test_get_command_never_returns_a_near_miss(commands_kb: KnowledgeBase) -> None:
    with pytest.raises(NotFound, match="did you mean"):
        commands_kb.get_command("helios get-users")


def test_command_with_arguments_resolves_to_the_command(commands_kb: KnowledgeBase) -> None:
    r = commands_kb.search("helios sync run --dry-run")
    assert r.verdict.kind == "answer"
    assert r.hits[0].doc_id == "cmd-sync-run"


def test_command_group_asks_which_command(commands_kb: KnowledgeBase) -> None:
    r = commands_kb.search("helios gw users")
    assert r.verdict.kind == "clarify"
    assert set(r.suggestions) == {"helios gw users get", "helios gw users list"}


def test_natural_question_about_a_setting(commands_kb: KnowledgeBase) -> None:
    r = commands_kb.search("how often does the directory sync", type="setting")
    assert r.hits[0].doc_id == "setting-sync-interval"


@pytest.mark.parametrize(
    "asking",
    [
        "",
        "is there a doc on",
        "which page explains",
        "what command do I run to",
        "is it possible to",
        "what's the best way to",
        "can you help me",
    ],
)
def test_words_asking_for_a_page_or_a_command_change_no_verdict(
    commands_kb: KnowledgeBase, asking: str
) -> None:
    def ask(request: str) -> str:
        return f"{asking} {request}".strip()

    invented = commands_kb.search(ask("helios get-users"))
    assert invented.hits == ()
    assert invented.verdict.reason == "unknown_command"
    assert "helios gw users list" in invented.suggestions
    exact = commands_kb.search(ask("helios gw users list"))
    assert exact.verdict.kind == "answer"
    assert exact.hits[0].doc_id == "cmd-gw-users-list"
    plain = commands_kb.search("list all users")
    asked = commands_kb.search(ask("list all users"))
    assert [h.doc_id for h in asked.hits] == [h.doc_id for h in plain.hits]
    assert asked.verdict.kind == plain.verdict.kind


@pytest.mark.parametrize("ending", ["from the command line", "with the CLI", "via the API"])
def test_words_asking_for_a_kind_of_answer_at_the_end_change_no_verdict(
    commands_kb: KnowledgeBase, ending: str
) -> None:
    plain = commands_kb.search("list all users")
    asked = commands_kb.search(f"list all users {ending}")
    assert [h.doc_id for h in asked.hits] == [h.doc_id for h in plain.hits]
    assert asked.verdict.kind == plain.verdict.kind
    invented = commands_kb.search(f"helios get-users {ending}")
    assert invented.hits == ()
    assert invented.verdict.reason == "unknown_command"


@pytest.mark.parametrize(
    "asking", ["is there a doc on", "search the docs for", "find the docs about"]
)
def test_a_program_named_like_the_product_still_names_its_command(
    tmp_path: Path, asking: str
) -> None:
    """On a product's own docs its name is in every document, so where it only sets the
    context it is no evidence ("how do I list users in Helios"); before a command it is
    the program's name: "is there a doc on helios get-users" asks about an invented
    command, as "helios get-users" does."""
    settings = Settings(embedder="none", ubiquitous_min_docs=1)
    with KnowledgeBase.open(tmp_path / "kb.db", settings) as kb:
        assert kb.ingest(EXAMPLES / "entries", source="commands").ok
        in_every_document = kb.search("list users in Helios")
        assert "helios" not in in_every_document.terms  # the name sets the context
        invented = kb.search(f"{asking} helios get-users")
        assert invented.hits == ()
        assert invented.verdict.reason == "unknown_command"
        exact = kb.search(f"{asking} helios gw users list, please")
        assert exact.verdict.reason == "exact_command"
