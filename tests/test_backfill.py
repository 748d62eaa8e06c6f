"""Embedding in the background (``ops/backfill.py``): an ingest that leaves embedding
for later is keyword-searchable at once, and a server embeds what it finds pending,
whoever ingested it, with its progress in /health."""

from __future__ import annotations

import time
from pathlib import Path

import httpx2

from groundkb import KnowledgeBase
from groundkb.ops.backfill import Backfill
from groundkb.serve.http import create_app
from groundkb.settings import Settings

from .conftest import EXAMPLES
from .serving import running


def settings(tmp_path: Path, **more: object) -> Settings:
    return Settings(db=str(tmp_path / "kb.db"), embedder="hashing", **more)  # type: ignore[arg-type]


def wait_until(check: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_an_ingest_without_embedding_is_searchable_and_a_server_embeds_it(
    tmp_path: Path,
) -> None:
    with KnowledgeBase.open(settings=settings(tmp_path, embed_on_ingest=False)) as kb:
        report = kb.ingest(EXAMPLES / "docs", "docs")
        pending = kb.store.count_chunks_to_embed()
        assert pending > 0 and report.chunks_embedded == 0
        assert f"{pending} chunks wait for their vectors" in report.notice
        found = kb.search("explain workspace", mode="keyword")
        assert found.hits[0].doc_id == "concepts/workspace"  # at once, by keyword
        backfill = Backfill(kb, poll_s=0.05).start()
        try:
            wait_until(lambda: kb.store.count_chunks_to_embed() == 0)
            wait_until(lambda: backfill.state().state == "idle")
            state = backfill.state()
            assert state.embedded == pending and state.pending == 0 and state.chunks_per_s > 0
            hybrid = kb.search("explain workspace", mode="hybrid")
            assert hybrid.mode == "hybrid" and "vector" in hybrid.hits[0].ranks
            # another process ingests more without embedding: picked up too
            with KnowledgeBase.open(settings=settings(tmp_path, embed_on_ingest=False)) as other:
                other.ingest(EXAMPLES / "entries", "commands")
            wait_until(lambda: kb.store.count_chunks_to_embed() == 0)
            wait_until(lambda: backfill.state().embedded > pending)
        finally:
            backfill.stop()


def test_health_shows_the_background_embedding(tmp_path: Path) -> None:
    with KnowledgeBase.open(settings=settings(tmp_path, embed_on_ingest=False)) as kb:
        kb.ingest(EXAMPLES / "docs", "docs")
        with running(create_app(kb)) as base:
            wait_until(lambda: kb.store.count_chunks_to_embed() == 0)
            wait_until(lambda: httpx2.get(base + "/health").json()["embedding"]["state"] == "idle")
            embedding = httpx2.get(base + "/health").json()["embedding"]
            assert embedding["pending"] == 0 and embedding["embedded"] > 0
        assert kb.ops.backfill is None  # stopped with the server


def test_keyword_only_servers_do_not_embed(tmp_path: Path) -> None:
    with KnowledgeBase.open(
        settings=settings(tmp_path, embed_on_ingest=False, retrieval="keyword")
    ) as kb:
        kb.ingest(EXAMPLES / "docs", "docs")
        with running(create_app(kb)) as base:
            assert httpx2.get(base + "/health").json()["embedding"] is None
        assert kb.store.count_chunks_to_embed() > 0


def test_the_cli_can_leave_embedding_to_the_server(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from groundkb.serve.cli import cli

    db = str(tmp_path / "kb.db")
    out = CliRunner().invoke(
        cli,
        ["--db", db, "ingest", str(EXAMPLES / "docs"), "-s", "docs", "--no-embed", "-q"],
        env={"GROUNDKB_EMBEDDER": "hashing"},
    )
    assert out.exit_code == 0, out.output
    assert "wait for their vectors" in out.output
    with KnowledgeBase.open(settings=settings(tmp_path)) as kb:
        assert kb.store.count_chunks_to_embed() > 0
