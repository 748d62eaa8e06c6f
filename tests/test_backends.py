"""SQLite and PostgreSQL behind the same search: equal results, and copying a knowledge
base from one to the other and back without re-embedding."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundkb import KnowledgeBase, SearchResult, Settings
from groundkb.models import Filters
from groundkb.serve.cli import cli

from .conftest import EXAMPLES
from .docmaker import TLDR_ALIAS_PAGES, write_pages

QUERIES = [
    "explain workspace",
    "what is home",
    "explain calendar",
    "tell me about panels",
    "home",
    "shortcuts",
    "wrkspace",
    "workspace and widgets",
    "how do I list all users",
    "helios get-users",
    "helios gw users list",
    "delete a group",
    "add a widget to my dashboard",
    "quick links",
]


def _settings(db: str, embedder: str = "none", **more: Any) -> Settings:
    return Settings(
        db=db, embedder=embedder, synonyms=str(EXAMPLES / "synonyms.txt"), min_vector_hit=-1.0
    ).replace(**more)


def _ingest(kb: KnowledgeBase) -> None:
    assert kb.ingest(EXAMPLES / "docs", source="docs").ok
    assert kb.ingest(EXAMPLES / "entries", source="commands").ok


def _outcome(r: SearchResult) -> tuple[Any, ...]:
    """Everything a search decides: the calibrated verdict with its options, evidence
    and signals, and the hits with their scores."""
    return (
        r.verdict.kind,
        r.verdict.reason,
        round(r.verdict.confidence, 6),
        r.verdict.options,
        r.verdict.evidence,
        {k: round(v, 6) for k, v in r.signals.items()},
        [(h.chunk_id, round(h.score, 6), h.matched_terms) for h in r.hits],
        r.suggestions,
        r.corrected_query,
        r.mode,
    )


@pytest.fixture
def both(tmp_path: Path, pg_url: str) -> Iterator[tuple[KnowledgeBase, KnowledgeBase]]:
    with (
        KnowledgeBase.open(settings=_settings(str(tmp_path / "kb.db"), "hashing")) as lite,
        KnowledgeBase.open(settings=_settings(pg_url, "hashing")) as pg,
    ):
        _ingest(lite)
        _ingest(pg)
        yield lite, pg


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_searches_come_out_the_same_on_both_backends(
    both: tuple[KnowledgeBase, KnowledgeBase], mode: str
) -> None:
    lite, pg = both
    for kb in both:
        kb.searcher.settings = kb.settings = kb.settings.replace(retrieval=mode)
    for q in QUERIES:
        assert _outcome(pg.search(q)) == _outcome(lite.search(q)), q
    for kwargs in ({"type": "command"}, {"source": "docs"}, {"category": "concepts"}):
        a = lite.search("list", **kwargs)  # type: ignore[arg-type]
        b = pg.search("list", **kwargs)  # type: ignore[arg-type]
        assert _outcome(b) == _outcome(a), kwargs
    assert pg.list_commands(limit=500) == lite.list_commands(limit=500)
    assert pg.find_endpoints("users") == lite.find_endpoints("users")


def _everything(kb: KnowledgeBase) -> tuple[Any, ...]:
    store = kb.store
    ids = [d.id for d in store.list_documents(Filters(), limit=10**6)]
    chunks = store.chunks(ids)
    return (
        [(i.source, i.documents, i.chunks) for i in store.sources()],
        store.documents(ids),
        chunks,
        store.get_vectors([c.id for c in chunks]),
        store.embedder(),
    )


def test_copy_moves_a_knowledge_base_both_ways_without_re_embedding(
    tmp_path: Path, pg_url: str
) -> None:
    first = str(tmp_path / "first.db")
    with KnowledgeBase.open(settings=_settings(first, "hashing")) as kb:
        _ingest(kb)
        kb.set_source_enabled("commands", False)  # the switch travels with the sources
        original = _everything(kb)
        before = [_outcome(kb.search(q)) for q in QUERIES]
    assert original[3] and len(original[3]) == len(original[2])
    runner = CliRunner()
    result = runner.invoke(cli, ["copy", "--from", f"sqlite:///{first}", "--to", pg_url, "-q"])
    assert result.exit_code == 0, result.output
    assert f"{len(original[1])} documents" in result.output
    with KnowledgeBase.open(settings=_settings(pg_url, "hashing")) as pg:
        assert pg.store.count_chunks_to_embed() == 0
        assert _everything(pg) == original and pg.disabled_sources() == {"commands"}
        assert [_outcome(pg.search(q)) for q in QUERIES] == before
        pg.delete(["concepts/home"])
    back = str(tmp_path / "back.db")
    result = runner.invoke(cli, ["copy", "--from", pg_url, "--to", back, "-q"])
    assert result.exit_code == 0, result.output
    db = sqlite3.connect(back)  # the copy ends by merging the keyword index
    assert db.execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0] == 1
    db.close()
    with KnowledgeBase.open(settings=_settings(back, "hashing")) as kb:
        copied = _everything(kb)
        assert copied[4] == original[4] and kb.store.count_chunks_to_embed() == 0
        assert kb.disabled_sources() == {"commands"}
        assert [d.id for d in copied[1]] == [d.id for d in original[1] if d.id != "concepts/home"]
    # Copying again makes the target equal: the document deleted in PostgreSQL goes.
    result = runner.invoke(cli, ["copy", "--from", pg_url, "--to", first, "-q"])
    assert result.exit_code == 0 and "deleted 1" in result.output


def test_an_alias_page_leads_to_its_command_on_both_backends(tmp_path: Path, pg_url: str) -> None:
    """The alias a tldr page records (``metadata.alias_of``) is read back the same way
    from PostgreSQL: the look-up follows it there too."""
    docker = {k: v for k, v in TLDR_ALIAS_PAGES.items() if "docker" in k}
    pages = write_pages(tmp_path / "pages", docker)
    outcomes = []
    for db in (str(tmp_path / "kb.db"), pg_url):
        with KnowledgeBase.open(settings=_settings(db)) as kb:
            assert kb.ingest(pages, source="tldr").ok
            r = kb.search("docker commit")
            found = kb.lookup_command("docker commit")
            assert found.alias_of is not None
            outcomes.append((_outcome(r), r.verdict.message, found.alias_of.id))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][2] == "tldr:common/docker-container-commit"
