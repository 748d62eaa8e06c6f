"""The store contract on PostgreSQL + pgvector, and what only a database server does:
migrations, connection errors, outages, several processes."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from mcp import Client

from groundkb import KnowledgeBase, Settings, load_settings
from groundkb.errors import IndexMismatch, StoreError, StoreUnavailable
from groundkb.serve.cli import cli
from groundkb.serve.mcp import build_server
from groundkb.store import open_store
from groundkb.testing.conformance import StoreConformance
from groundkb.testing.postgres import free_port

from .conftest import EXAMPLES, Postgres
from .mcp_result import payload


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def location(self, pg_url: str) -> str:
        return pg_url


def test_an_unmigrated_schema_is_refused_until_migrate_runs(postgres: Postgres) -> None:
    url = postgres.schema_url(migrate=False)
    with pytest.raises(IndexMismatch, match="run `groundkb migrate`"):
        open_store(url)
    first = CliRunner().invoke(cli, ["--db", url, "migrate"])
    assert first.exit_code == 0, first.output
    assert "from version 0 to 1" in first.output
    again = CliRunner().invoke(cli, ["--db", url, "migrate"])
    assert "current (version 1)" in again.output
    open_store(url).close()


def test_a_newer_schema_is_refused(pg_url: str) -> None:
    schema = pg_url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg_url.split("?")[0], autocommit=True) as conn:
        conn.execute(f"UPDATE {schema}.meta SET value = '7' WHERE key = 'schema_version'")
    with pytest.raises(IndexMismatch, match=r"schema version 7.*Upgrade groundkb"):
        open_store(pg_url)
    result = CliRunner().invoke(cli, ["--db", pg_url, "migrate"])
    assert result.exit_code == 2 and "Upgrade groundkb" in result.output


def test_a_database_without_pgvector_gets_instructions(postgres: Postgres) -> None:
    server = postgres.need_local()
    server.execute("DROP DATABASE IF EXISTS novector")
    server.execute("DROP ROLE IF EXISTS app")
    server.execute("CREATE ROLE app LOGIN PASSWORD 'app-pw'")
    server.execute("CREATE DATABASE novector OWNER app")
    as_admin = server.database_url("novector")
    with pytest.raises(StoreError, match=r"pgvector.*groundkb migrate"):
        open_store(as_admin)
    as_app = server.database_url("novector", user="app", password="app-pw")
    result = CliRunner().invoke(cli, ["--db", as_app, "migrate"])
    assert result.exit_code == 2
    assert "CREATE EXTENSION vector" in result.output and "app-pw" not in result.output
    assert "Traceback" not in result.output


def test_wrong_credentials_and_unreachable_servers_give_clear_errors(postgres: Postgres) -> None:
    server = postgres.need_local()
    wrong = server.database_url("postgres", password="not-the-password")
    with pytest.raises(StoreError, match="refused the credentials") as err:
        open_store(wrong)
    assert "not-the-password" not in err.value.message
    nowhere = f"postgresql://postgres:secret@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(StoreUnavailable, match="cannot reach PostgreSQL"):
        open_store(nowhere, timeout=2)
    result = CliRunner().invoke(cli, ["--db", nowhere, "stats"])
    assert result.exit_code == 2 and "error [store_unavailable]" in result.output
    assert "secret" not in result.output and "Traceback" not in result.output
    missing = server.database_url("no_such_database")
    with pytest.raises(StoreError, match="no_such_database"):
        open_store(missing)


@pytest.mark.anyio
async def test_an_outage_fails_searches_and_the_store_recovers_by_itself(
    postgres: Postgres,
) -> None:
    server = postgres.need_local()
    url = postgres.schema_url()
    with KnowledgeBase.open(settings=Settings(db=url, db_timeout=3)) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
        assert kb.search("explain workspace").hits[0].doc_id == "concepts/workspace"
        async with Client(build_server(kb)) as client:
            server.stop()
            try:
                with pytest.raises(StoreUnavailable):
                    kb.search("explain workspace")
                with pytest.raises(StoreUnavailable):  # fails at once while it stays down
                    kb.search("what is home")
                res = await client.call_tool("search_knowledge", {"query": "what is home"})
                assert res.is_error
                assert "[store_unavailable]" in str(res.content[0])
            finally:
                server.start()
            res = await client.call_tool("search_knowledge", {"query": "explain workspace"})
            assert not res.is_error and payload(res) is not None
            assert payload(res)["hits"][0]["doc_id"] == "concepts/workspace"
        r = kb.search("explain workspace")
        assert r.verdict.kind == "answer" and r.hits[0].doc_id == "concepts/workspace"


def test_a_database_url_comes_from_the_settings_file_the_environment_or_the_flag(
    tmp_path: Path, pg_url: str
) -> None:
    config = tmp_path / "groundkb.toml"
    config.write_text(f'db = "{pg_url}"\n')
    assert load_settings(config, env={}).db == pg_url  # a URL is not a path to resolve
    assert load_settings(env={"GROUNDKB_DATABASE_URL": pg_url}).db == pg_url
    both = {"GROUNDKB_DATABASE_URL": pg_url, "GROUNDKB_DB": "other.db"}
    assert load_settings(env=both).db == "other.db"
    result = CliRunner().invoke(cli, ["--db", pg_url, "stats", "--json"])
    assert result.exit_code == 0, result.output
    assert '"backend": "postgresql"' in result.output and "groundkb-test" not in result.output


def test_urls_keep_libpq_options_and_never_show_the_password() -> None:
    from groundkb.errors import ConfigError
    from groundkb.store.pg_connect import parse_url

    t = parse_url("postgres://kb:s3cret@db:5433/app?sslmode=require&schema=team_a")
    assert t.schema == "team_a" and t.conninfo.startswith("postgresql://kb:s3cret@db:5433/")
    assert "sslmode=require" in t.conninfo and "schema" not in t.conninfo
    assert "s3cret" not in t.display and "kb:***@db:5433" in t.display
    assert parse_url("postgresql:///app").schema == "groundkb"
    with pytest.raises(ConfigError, match="schema"):
        parse_url("postgresql://db/app?schema=Robert');DROP")
