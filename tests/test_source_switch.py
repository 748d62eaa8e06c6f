"""Enabling and disabling sources: a disabled source is left out of every read (search,
look-ups, listings, suggestions, did-you-mean, prompts) until it is enabled again; its
index is kept. Every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.errors import NotFound
from groundkb.ops.visible import DISABLED_KEY

from .conftest import EXAMPLES, FIXTURES


@pytest.fixture(params=["sqlite", "postgresql"])
def kb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeBase]:
    db = str(tmp_path / "kb.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    settings = Settings(db=db, embedder="hashing", min_vector_hit=-1.0)
    with KnowledgeBase.open(settings=settings) as k:
        for path, name in (
            (EXAMPLES / "docs", "docs"),
            (EXAMPLES / "entries", "commands"),
            (FIXTURES / "openapi" / "petstore.yaml", "pets"),
        ):
            assert k.ingest(path, source=name).ok
        yield k


def sources_of(kb: KnowledgeBase, query: str, **kw: str) -> set[str]:
    return {h.source for h in kb.search(query, limit=20, **kw).hits}


def test_a_disabled_source_is_left_out_of_keyword_and_vector_search(kb: KnowledgeBase) -> None:
    assert "docs" in sources_of(kb, "explain workspace")
    assert kb.set_source_enabled("docs", False) is True
    for mode in ("keyword", "vector", "hybrid"):
        assert "docs" not in sources_of(kb, "explain workspace", mode=mode)
    assert kb.search("explain workspace", source="docs").hits == ()
    assert kb.search("explain workspace", source="docs").verdict.kind == "no_match"
    assert kb.set_source_enabled("docs", True) is True
    assert "docs" in sources_of(kb, "explain workspace")


def test_a_disabled_source_is_left_out_of_lookups_and_listings(kb: KnowledgeBase) -> None:
    kb.get("concepts/workspace")
    kb.get_command("helios gw users list")
    assert kb.get_api_endpoint("/pets", "GET").endpoints
    kb.set_source_enabled("docs", False)
    kb.set_source_enabled("commands", False)
    kb.set_source_enabled("pets", False)
    with pytest.raises(NotFound):
        kb.get("concepts/workspace")
    with pytest.raises(NotFound):
        kb.get_command("helios gw users list")
    assert kb.search("helios gw users list").verdict.reason != "exact_command"
    assert kb.list_commands() == ([], 0)
    assert kb.get_api_endpoint("/pets", "GET").endpoints == ()
    assert kb.find_endpoints("pet") == []
    assert kb.list_documents() == []
    # the index is kept: counts and the source list still show everything
    assert kb.stats().documents > 0
    assert {i.source.name for i in kb.sources()} == {"docs", "commands", "pets"}
    assert kb.disabled_sources() == {"docs", "commands", "pets"}


def test_the_switch_is_stored_in_the_index_for_every_process(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    kb.set_source_enabled("pets", False)
    assert kb.store.get_meta(DISABLED_KEY) == '["pets"]'
    with KnowledgeBase.open(kb.settings.db, Settings(embedder="none")) as other:
        assert other.disabled_sources() == {"pets"}
        assert other.find_endpoints("pet") == []
        other.set_source_enabled("pets", True)
    assert kb.find_endpoints("pet")  # this process sees the change (generation moved)


def test_a_disabled_source_gives_no_suggestions_corrections_or_counts(kb: KnowledgeBase) -> None:
    typo = kb.search("widgte")  # "widget" is a word of the docs source only
    assert typo.corrected_query == "widget" and {h.source for h in typo.hits} == {"docs"}
    assert kb.lookup_command("helios gw users lst").suggestions
    assert kb.get_api_endpoint("/petz", "GET").suggestions
    listed = kb.list_commands()[1]
    kb.set_source_enabled("docs", False)
    after = kb.search("widgte")
    assert after.corrected_query == "" and all(h.source != "docs" for h in after.hits)
    assert not any("widget" in s.lower() for s in after.suggestions)
    for q in ("widgets", "explain widgets and workspace", "add a widget to my dashboard"):
        r = kb.search(q)
        assert all(h.source != "docs" for h in r.hits), q
        assert all(not o.doc_id.startswith(("concepts/", "widgets/")) for o in r.verdict.options)
    assert kb.list_documents(source="docs") == [] and kb.list_commands()[1] == listed
    kb.set_source_enabled("commands", False)
    kb.set_source_enabled("pets", False)
    assert kb.lookup_command("helios gw users lst").suggestions == ()
    assert kb.search("helios gw users lst").suggestions == ()
    assert kb.get_api_endpoint("/petz", "GET").suggestions == ()
    assert kb.list_commands() == ([], 0)
    assert kb.search("pets").hits == () and kb.search("list users").hits == ()


def test_switching_twice_changes_nothing_and_unknown_sources_are_not_found(
    kb: KnowledgeBase,
) -> None:
    assert kb.set_source_enabled("docs", True) is False
    kb.set_source_enabled("docs", False)
    assert kb.set_source_enabled("docs", False) is False
    with pytest.raises(NotFound, match="no source named 'nope'"):
        kb.set_source_enabled("nope", False)


def test_deleting_a_disabled_source_forgets_the_switch(kb: KnowledgeBase) -> None:
    kb.set_source_enabled("pets", False)
    kb.delete(source="pets")
    assert kb.disabled_sources() == frozenset()
    assert kb.ingest(FIXTURES / "openapi" / "petstore.yaml", source="pets").ok
    assert kb.find_endpoints("pet")  # a new source of the same name starts enabled


def test_prompts_carry_no_knowledge_of_a_disabled_source(kb: KnowledgeBase) -> None:
    before = kb.build_prompt("explain workspace")
    assert any(i.startswith("concepts/") for i in (*before.hit_ids, *before.glossary_ids))
    kb.set_source_enabled("docs", False)
    after = kb.build_prompt("explain workspace")
    assert not any(i.startswith("concepts/") for i in (*after.hit_ids, *after.glossary_ids))
    assert "A workspace is where your notes live" not in after.user


def test_the_cli_disables_and_enables_sources_and_lists_them(kb: KnowledgeBase) -> None:
    from click.testing import CliRunner

    from groundkb.serve.cli import cli

    db = ["--db", kb.settings.db]
    runner = CliRunner(env={"GROUNDKB_EMBEDDER": "none"})
    assert runner.invoke(cli, [*db, "disable", "docs"]).output == "source docs disabled\n"
    listed = runner.invoke(cli, [*db, "sources"]).output
    assert "disabled (left out of searches): docs" in listed
    miss = runner.invoke(cli, [*db, "get", "concepts/workspace"])
    assert miss.exit_code == 2 and "[not_found]" in miss.output
    assert runner.invoke(cli, [*db, "enable", "docs"]).output == "source docs enabled\n"
    again = runner.invoke(cli, [*db, "enable", "docs"]).output
    assert again == "source docs enabled (it already was)\n"


def test_the_cli_never_prints_the_admin_token() -> None:
    from click.testing import CliRunner

    from groundkb.serve.cli import cli

    r = CliRunner(env={"GROUNDKB_ADMIN_TOKEN": "tok-123456"}).invoke(cli, ["settings"])
    assert "admin_token = '(set, hidden)'" in r.output and "tok-123456" not in r.output
