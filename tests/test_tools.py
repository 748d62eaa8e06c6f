"""The structured tools over commands and APIs, `sync` and `validate`: through the core
API, the command line (in process) and a real in-memory MCP client session."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from mcp import Client

from groundkb import KnowledgeBase, load_settings
from groundkb.errors import ConfigError, InvalidInput, NotFound
from groundkb.serve.cli import cli
from groundkb.serve.mcp import build_server

from .conftest import EXAMPLES, FIXTURES
from .mcp_result import payload

SPECS = FIXTURES / "openapi"
CATALOGS = FIXTURES / "catalogs"
TLDR = FIXTURES / "tldr"

SHOP_MODULE = "groundkb_test_shop_cli"
SHOP_CLI = '''\
"""A small click program for the tests."""

import click


@click.group()
def cli():
    """Manage the shop."""


@cli.group()
def orders():
    """Orders placed by customers."""


@orders.command("list")
@click.option("--status", default="open", help="Only orders with this status.")
def list_orders(status):
    """List orders, newest first."""


@orders.command()
@click.argument("order_id")
def cancel(order_id):
    """Cancel an order that has not shipped yet."""
'''


@pytest.fixture
def api_kb(kb: KnowledgeBase) -> KnowledgeBase:
    """The three fixture specs: petstore (Swagger 2, basePath /v2), billing (/v1/...)
    and the split shop spec (/v1/orders...)."""
    report = kb.ingest(SPECS, source="apis")
    assert report.ok and report.inserted == 22, report.errors
    return kb


@pytest.fixture
def cli_kb(kb: KnowledgeBase) -> KnowledgeBase:
    """The two fixture catalogs: five commands (one broken entry is reported)."""
    report = kb.ingest(CATALOGS, source="cli")
    assert report.inserted == 5 and len(report.errors) == 2
    return kb


@pytest.fixture
def shop_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A click program importable as ``groundkb_test_shop_cli:cli``."""
    pkgs = tmp_path / "pkgs"
    pkgs.mkdir()
    (pkgs / f"{SHOP_MODULE}.py").write_text(SHOP_CLI)
    monkeypatch.syspath_prepend(str(pkgs))
    yield f"{SHOP_MODULE}:cli"
    sys.modules.pop(SHOP_MODULE, None)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


# ----------------------------------------------------------------------- commands


def test_get_command_finds_the_exact_name_in_any_case_and_spacing(cli_kb: KnowledgeBase) -> None:
    doc = cli_kb.get_command("helios gw users list")
    assert doc.id == "cmd:helios gw users list" and doc.type == "command"
    assert doc.command == "helios gw users list"
    assert doc.examples[0].code == "helios gw users list"
    assert cli_kb.get_command("  HELIOS gw   Users LIST ").id == doc.id
    assert cli_kb.get_command("kbtool serve").id == "cmd:kbtool serve"


def test_get_command_finds_a_command_by_an_alias_naming_the_program(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    (tmp_path / "cli.yaml").write_text(
        "program: helios\n"
        "commands:\n"
        "  - name: users list\n"
        "    description: Lists users.\n"
        "    aliases: [helios users ls, show every user]\n"
        "    examples: [helios users list]\n"
    )
    assert kb.ingest(tmp_path, source="cli").ok
    assert kb.get_command("helios users ls").id == "cmd:helios users list"
    # An alias that is a phrase rather than an invocation is not a command name.
    with pytest.raises(NotFound):
        kb.get_command("show every user")


@pytest.mark.parametrize(
    ("asked", "suggested"),
    [
        ("helios get-users", "helios gw users get"),
        ("helios gw users", "helios gw users list"),  # a group is not a command
        ("kbtool", "kbtool index"),
        ("helios gw users lst", "helios gw users list"),
    ],
)
def test_get_command_never_returns_a_near_miss(
    cli_kb: KnowledgeBase, asked: str, suggested: str
) -> None:
    with pytest.raises(NotFound, match="did you mean") as info:
        cli_kb.get_command(asked)
    assert info.value.message.startswith(f"no command {asked!r}")
    assert repr(suggested) in info.value.message


def test_list_commands_pages_by_id_and_counts_the_total(cli_kb: KnowledgeBase) -> None:
    everything, total = cli_kb.list_commands()
    assert total == 5
    assert [d.id for d in everything] == [
        "cmd-sync-run",
        "cmd:helios gw users get",
        "cmd:helios gw users list",
        "cmd:kbtool index",
        "cmd:kbtool serve",
    ]
    pages = [cli_kb.list_commands(limit=2, offset=n) for n in (0, 2, 4)]
    assert [d.id for page, _ in pages for d in page] == [d.id for d in everything]
    assert {t for _, t in pages} == {5}
    assert cli_kb.list_commands(limit=2, offset=10) == ([], 5)
    in_category, n = cli_kb.list_commands("google-workspace")
    assert n == 2 and {d.category for d in in_category} == {"google-workspace"}
    assert cli_kb.list_commands("no-such-category") == ([], 0)


def test_list_commands_lists_only_commands(cli_kb: KnowledgeBase) -> None:
    cli_kb.ingest(EXAMPLES / "docs", source="docs")
    docs, total = cli_kb.list_commands()
    assert total == 5 and {d.type for d in docs} == {"command"}


@pytest.mark.parametrize("page", [{"limit": 0}, {"limit": 501}, {"offset": -1}])
def test_list_commands_refuses_a_bad_page(cli_kb: KnowledgeBase, page: dict[str, int]) -> None:
    with pytest.raises(InvalidInput, match=r"limit|offset"):
        cli_kb.list_commands(**page)


# -------------------------------------------------------------------------- APIs


def test_get_api_endpoint_matches_the_exact_path(api_kb: KnowledgeBase) -> None:
    found = api_kb.get_api_endpoint("/v1/customers/{customer}", "get")
    assert found.match == "exact" and found.method == "GET"
    assert [e.doc_id for e in found.endpoints] == ["billing:GET /v1/customers/{customer}"]
    assert found.params == {}
    both = api_kb.get_api_endpoint("/pets")
    assert both.match == "exact"
    assert {e.method for e in both.endpoints} == {"GET", "POST"}


def test_get_api_endpoint_matches_a_concrete_path_to_its_template(api_kb: KnowledgeBase) -> None:
    found = api_kb.get_api_endpoint("/pets/123", "GET")
    assert found.match == "template"
    assert [e.doc_id for e in found.endpoints] == ["petstore:GET /pets/{petId}"]
    assert found.params == {"petId": "123"}
    # The neighbours: the collection, and the photos below each pet.
    assert {(e.method, e.path) for e in found.same_resource} >= {
        ("GET", "/pets"), ("POST", "/pets"), ("DELETE", "/pets/{petId}")
    }  # fmt: skip
    assert [e.path for e in found.children] == ["/pets/{petId}/photos"]
    action = api_kb.get_api_endpoint("/v1/orders/ord_7/cancel", "post")
    assert action.match == "template" and action.params == {"orderId": "ord_7"}
    assert [e.operation_kind for e in action.endpoints] == ["cancel"]


def test_get_api_endpoint_ignores_a_trailing_slash(api_kb: KnowledgeBase) -> None:
    assert api_kb.get_api_endpoint("/pets/", "POST").match == "exact"
    found = api_kb.get_api_endpoint("/v1/customers/cus_123/", "DELETE")
    assert found.match == "template" and found.params == {"customer": "cus_123"}
    assert [e.doc_id for e in found.endpoints] == ["billing:DELETE /v1/customers/{customer}"]


def test_get_api_endpoint_finds_a_path_without_its_version_prefix(api_kb: KnowledgeBase) -> None:
    found = api_kb.get_api_endpoint("/orders/ord_7", "PATCH")
    assert found.match == "loose"
    assert [e.doc_id for e in found.endpoints] == ["shop-api:PATCH /v1/orders/{orderId}"]
    assert found.params == {"orderId": "ord_7"}
    nested = api_kb.get_api_endpoint("/customers/cus_1/sources", "POST")
    assert [e.doc_id for e in nested.endpoints] == ["billing:POST /v1/customers/{customer}/sources"]
    assert "/v1/customers" in {e.path for e in nested.parents}
    # The spec's basePath (/v2) is not part of the stored path; the lookup still finds it.
    based = api_kb.get_api_endpoint("/v2/pets/9", "DELETE")
    assert based.match == "loose"
    assert [e.doc_id for e in based.endpoints] == ["petstore:DELETE /pets/{petId}"]


def test_get_api_endpoint_reports_an_unknown_path_or_method_as_no_endpoint(
    api_kb: KnowledgeBase,
) -> None:
    unknown = api_kb.get_api_endpoint("/invoices/in_1", "GET")
    assert unknown.match == "none" and unknown.endpoints == ()
    assert (unknown.same_resource, unknown.parents, unknown.children) == ((), (), ())
    wrong = api_kb.get_api_endpoint("/pets/123", "PUT")
    assert wrong.endpoints == () and wrong.other_methods == ("DELETE", "GET")
    with pytest.raises(InvalidInput, match="path"):
        api_kb.get_api_endpoint("  ")


@pytest.mark.parametrize(
    ("resource", "operation", "expected"),
    [
        ("pets", "create", [("POST", "/pets")]),
        ("Pet", "add", [("POST", "/pets")]),
        ("pet", "delete", [("DELETE", "/pets/{petId}")]),
        ("pet", "adopt", [("POST", "/pets/{petId}/adopt")]),
        ("customers", "list", [("GET", "/v1/customers")]),
        ("customer", "search", [("GET", "/v1/customers/search")]),
        ("orders", "cancel", [("POST", "/v1/orders/{orderId}/cancel")]),
        ("order", "edit", [("PATCH", "/v1/orders/{orderId}")]),
        ("invoice", None, []),
        ("pet", "frobnicate", []),
    ],
)
def test_find_endpoints_by_resource_and_operation(
    api_kb: KnowledgeBase,
    resource: str,
    operation: str | None,
    expected: list[tuple[str, str]],
) -> None:
    found = api_kb.find_endpoints(resource, operation)
    assert [(e.method, e.path) for e in found] == expected


def test_find_endpoints_without_an_operation_lists_all_in_crud_order(
    api_kb: KnowledgeBase,
) -> None:
    found = api_kb.find_endpoints("pets")
    assert [e.operation_kind for e in found] == ["create", "read", "list", "delete", "adopt"]
    assert {e.source for e in found} == {"apis"}
    with pytest.raises(InvalidInput, match="resource"):
        api_kb.find_endpoints(" ")


def test_the_api_graph_follows_the_index(kb: KnowledgeBase) -> None:
    kb.ingest(SPECS / "petstore.yaml", source="pets")
    assert kb.find_endpoints("order") == []
    kb.ingest(SPECS / "split", source="shop")
    assert len(kb.find_endpoints("order")) == 5
    kb.delete(source="pets")
    assert kb.get_api_endpoint("/pets").match == "none"


# -------------------------------------------------------------------------- sync


def _project(tmp_path: Path, sources: str) -> Path:
    """A project folder with docs, a spec and a groundkb.toml listing ``sources``."""
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES / "docs", project / "docs")
    (project / "specs").mkdir()
    shutil.copy(SPECS / "petstore.yaml", project / "specs" / "petstore.yaml")
    config = project / "groundkb.toml"
    config.write_text('db = "kb.db"\n' + sources)
    return config


SOURCES = """
[[sources]]
name = "docs"
path = "docs"

[[sources]]
name = "pets"
path = "specs/petstore.yaml"
loader = "openapi"

[[sources]]
name = "shop"
python = "groundkb_test_shop_cli:cli"
program = "shop"
"""


def test_sync_ingests_every_listed_source_relative_to_the_settings_file(
    tmp_path: Path, shop_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _project(tmp_path, SOURCES)
    monkeypatch.chdir(tmp_path)  # not the project folder
    settings = load_settings(config, env={})
    assert settings.db == str(config.parent / "kb.db")
    with KnowledgeBase.open(settings=settings) as kb:
        reports = kb.sync()
        assert [(r.source, r.inserted, r.ok) for r in reports] == [
            ("docs", 8, True),
            ("pets", 6, True),
            ("shop", 2, True),
        ]
        assert kb.get_command("shop orders list").metadata["syntax"].startswith("shop orders list")
        assert (
            kb.get_command("shop orders cancel").summary
            == "Cancel an order that has not shipped yet."
        )
        assert kb.get_api_endpoint("/pets/1", "GET").match == "template"
        again = kb.sync()
        assert [(r.inserted, r.updated, r.deleted) for r in again] == [(0, 0, 0)] * 3
        assert [r.unchanged for r in again] == [8, 6, 2]
        assert {s.source.name for s in kb.sources()} == {"docs", "pets", "shop"}


GOOD_TABLE = '[[sources]]\nname = "docs"\npath = "docs"\n'


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[[sources]]\npath = "specs"\n', "[[sources]] #2: 'name' is required"),
        (
            '[[sources]]\nname = "shop"\npath = "specs"\npython = "m:cli"\n',
            "[[sources]] #2 (shop): give exactly one of 'path', 'python' or 'url'",
        ),
        (
            '[[sources]]\nname = "shop"\n',
            "[[sources]] #2 (shop): give exactly one of 'path', 'python' or 'url'",
        ),
        (
            '[[sources]]\nname = "pets"\npath = "specs"\nglob = "*.yaml"\n',
            "[[sources]] #2 (pets): unknown key 'glob'",
        ),
        pytest.param(
            '[[sources]]\nname = "pets"\npath = "specs"\nloader = "rtf"\n',
            "[[sources]] #2 (pets): unknown loader 'rtf'",
            id="unknown-loader",
        ),
        pytest.param(
            '[[sources]]\nname = "pets"\npath = 5\n',
            "[[sources]] #2 (pets): 'path' must be a string",
            id="path-not-a-string",
        ),
    ],
)
def test_a_bad_sources_table_is_named_before_anything_is_ingested(
    tmp_path: Path, table: str, message: str
) -> None:
    config = _project(tmp_path, GOOD_TABLE + table)
    with KnowledgeBase.open(settings=load_settings(config, env={})) as kb:
        try:
            kb.sync()
        except ConfigError as exc:
            assert exc.message.startswith(message)
        else:
            pytest.fail("sync accepted a bad [[sources]] table")
        finally:
            assert kb.sources() == []


def test_sync_without_sources_is_a_config_error(tmp_path: Path) -> None:
    config = _project(tmp_path, "")
    with (
        KnowledgeBase.open(settings=load_settings(config, env={})) as kb,
        pytest.raises(ConfigError, match=r"no \[\[sources\]\]"),
    ):
        kb.sync()
    (tmp_path / "bad.toml").write_text('sources = "docs"\n')
    with pytest.raises(ConfigError, match="list of tables"):
        load_settings(tmp_path / "bad.toml", env={})


def test_sync_command_reports_each_source(tmp_path: Path, shop_module: str) -> None:
    config = _project(tmp_path, SOURCES)
    r = invoke("--config", str(config), "sync")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["source docs", "source pets", "source shop"]
    assert "8 inserted" in lines[0] and "2 inserted" in lines[2]
    r = invoke("--config", str(config), "sync", "--json")
    assert [rep["unchanged"] for rep in json.loads(r.stdout)] == [8, 6, 2]

    bare = _project(tmp_path / "other", "")
    r = invoke("--config", str(bare), "sync")
    assert r.exit_code == 2 and r.stderr.startswith("error [config_error]: no [[sources]]")


# ---------------------------------------------------------------------- validate


def _with_problems(kb: KnowledgeBase, tmp_path: Path) -> None:
    kb.ingest(CATALOGS, source="cli")
    kb.ingest(SPECS / "petstore.yaml", source="pets")
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "g.yaml").write_text(
        "entries:\n"
        "  - {id: g1, type: guide, title: Setup, category: c, content: x,"
        " relatedIds: [cmd-sync-run, g-missing]}\n"
    )
    kb.ingest(tmp_path / "guides", source="guides")


def test_validate_reports_dangling_ids_missing_examples_and_missing_summaries(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    _with_problems(kb, tmp_path)
    problems = kb.validate()
    assert [(p.severity, p.code, p.doc_id) for p in problems] == [
        ("error", "dangling_related", "g1"),
        ("warning", "no_examples", "cmd-sync-run"),
        ("warning", "no_examples", "cmd:kbtool serve"),
        ("warning", "no_summary", "petstore:DELETE /pets/{petId}"),
    ]
    assert "'g-missing'" in problems[0].message and "cmd-sync-run" not in problems[0].message
    assert str(problems[0]).startswith("error: guides:g.yaml [g1]:")
    assert [p.doc_id for p in kb.validate(["pets"])] == ["petstore:DELETE /pets/{petId}"]
    assert kb.validate(["nothing-here"]) == []


def test_validate_command_exits_1_on_errors_and_0_on_warnings(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    db = kb.settings.db
    kb.ingest(CATALOGS, source="cli")
    r = invoke("--db", db, "validate")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[-1] == "0 errors, 2 warnings"
    assert "command has no examples (no_examples)" in r.stdout

    _with_problems(kb, tmp_path)
    r = invoke("--db", db, "validate")
    assert r.exit_code == 1
    assert r.stdout.splitlines()[-1] == "1 errors, 3 warnings"
    assert r.stdout.startswith("error: guides:g.yaml [g1]: related id 'g-missing'")
    r = invoke("--db", db, "validate", "--json")
    assert r.exit_code == 1
    problems = json.loads(r.stdout)
    assert (problems[0]["severity"], problems[0]["code"]) == ("error", "dangling_related")
    assert len(problems) == 4
    assert invoke("--db", db, "validate", "-s", "pets").exit_code == 0


# ----------------------------------------------------------------------- the CLI


def test_command_and_commands_print_exact_commands(cli_kb: KnowledgeBase) -> None:
    db = cli_kb.settings.db
    r = invoke("--db", db, "command", "helios gw users list")
    assert r.exit_code == 0
    assert r.stdout.startswith("# List Google Workspace users\n")
    assert "command: helios gw users list" in r.stdout
    assert "helios gw users list [--format <table|json>] [--limit <n>]" in r.stdout
    r = invoke("--db", db, "command", "helios gw users get", "--json")
    data = json.loads(r.stdout)
    assert data["found"] and data["document"]["id"] == "cmd:helios gw users get"
    r = invoke("--db", db, "command", "helios get-users", "--json")
    data = json.loads(r.stdout)
    assert r.exit_code == 1 and data["found"] is False and data["document"] is None
    assert "helios gw users get" in data["suggestions"]

    r = invoke("--db", db, "command", "helios get-users")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("error [not_found]: no command 'helios get-users'; did you mean")

    r = invoke("--db", db, "commands")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0] == "helios sync run\tStarts a full directory sync now."
    assert len(r.stdout.splitlines()) == 5 and r.stderr.strip() == "1-5 of 5"
    r = invoke("--db", db, "commands", "-c", "google-workspace", "-n", "1", "--offset", "1")
    assert r.stdout.splitlines() == [
        "helios gw users list\tLists all users synced from Google Workspace."
    ]
    assert r.stderr.strip() == "2-2 of 2"
    assert invoke("--db", db, "commands", "-n", "0").exit_code == 2


def test_endpoint_and_endpoints_print_operations(api_kb: KnowledgeBase) -> None:
    db = api_kb.settings.db
    r = invoke("--db", db, "endpoint", "/pets/123", "-m", "delete")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("match: template\n# Deletes a pet\n")
    assert "same resource:\n  POST /pets\tAdd a pet to the store" in r.stdout
    r = invoke("--db", db, "endpoint", "/orders/ord_7", "--json")
    data = json.loads(r.stdout)
    assert data["match"] == "loose" and data["params"] == {"orderId": "ord_7"}
    assert {e["method"] for e in data["endpoints"]} == {"GET", "PATCH"}

    r = invoke("--db", db, "endpoint", "/pets/123", "-m", "PUT")
    assert r.exit_code == 1
    assert r.stderr.strip() == "no endpoint PUT /pets/123 (this path has DELETE, GET)"
    r = invoke("--db", db, "endpoint", "/invoices")
    assert r.exit_code == 1 and r.stderr.startswith("no endpoint /invoices; did you mean ")
    r = invoke("--db", db, "endpoint", "/invoices", "--json")
    data = json.loads(r.stdout)
    assert r.exit_code == 1 and data["found"] is False and data["endpoints"] == []
    assert data["suggestions"] and all(" /" in s for s in data["suggestions"])

    r = invoke("--db", db, "endpoints", "pets", "create")
    assert r.exit_code == 0
    assert r.stdout == "POST /pets\tcreate\tAdd a pet to the store\n"
    r = invoke("--db", db, "endpoints", "customer", "--json")
    assert len(json.loads(r.stdout)) == 6
    r = invoke("--db", db, "endpoints", "invoice", "create")
    assert r.exit_code == 1 and r.stderr.strip() == "no create operations on 'invoice'"


def test_ingest_python_cli_from_the_command_line(tmp_path: Path, shop_module: str) -> None:
    db = str(tmp_path / "kb.db")
    r = invoke("--db", db, "ingest", "--python", shop_module, "-s", "shop")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("source shop: 2 inserted")
    r = invoke("--db", db, "command", "cli orders cancel", "--json")
    assert (
        json.loads(r.stdout)["document"]["summary"] == "Cancel an order that has not shipped yet."
    )
    r = invoke("--db", db, "ingest", "--python", shop_module, "--program", "shop", "-s", "shop")
    assert r.stdout.startswith("source shop: 2 inserted, 0 updated, 0 unchanged, 2 deleted")
    assert invoke("--db", db, "command", "shop orders list").exit_code == 0

    r = invoke("--db", db, "ingest", "--python", "groundkb_no_such_module:cli", "-s", "x")
    assert r.exit_code == 2 and r.stderr.startswith("error [invalid_input]: cannot import")
    r = invoke("--db", db, "ingest", str(TLDR), "--python", shop_module, "-s", "x")
    assert r.exit_code == 2 and "one of them" in r.output


def test_ingest_with_a_forced_loader(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    r = invoke("--db", db, "ingest", str(TLDR / "common"), "-s", "pages", "--loader", "markdown")
    assert r.exit_code == 0, r.output
    with KnowledgeBase.open(db) as kb:
        assert {d.type for d in kb.list_documents()} == {"page"}
    r = invoke("--db", db, "ingest", str(TLDR / "common"), "-s", "pages", "--json")
    assert json.loads(r.stdout)["deleted"] == 2
    with KnowledgeBase.open(db) as kb:
        assert {d.type for d in kb.list_documents()} == {"command"}
    r = invoke("--db", db, "ingest", str(TLDR), "-s", "x", "--loader", "rtf")
    assert r.exit_code == 2 and "'rtf' is not one of" in r.output


# ------------------------------------------------------------------------- MCP


@pytest.fixture
def tools_kb(kb: KnowledgeBase) -> KnowledgeBase:
    assert kb.ingest(SPECS, source="apis").ok
    kb.ingest(CATALOGS, source="cli")
    return kb


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.anyio
async def test_mcp_tools_are_listed_read_only_with_output_schemas_on_request(
    tools_kb: KnowledgeBase,
) -> None:
    async with Client(build_server(tools_kb)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        wanted = {"get_command", "list_commands", "get_api_endpoint", "find_endpoints"}
        assert wanted <= set(tools)
        for name in wanted:
            tool = tools[name]
            assert tool.description and tool.output_schema is None  # one JSON text
            assert tool.annotations is not None and tool.annotations.read_only_hint is True
        instructions = client.instructions or ""
        assert all(name in instructions for name in wanted - {"list_commands"})
    tools_kb.reload(tools_kb.settings.replace(mcp_structured_output=True))
    async with Client(build_server(tools_kb)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert all(tools[name].output_schema is not None for name in wanted)


@pytest.mark.anyio
async def test_mcp_get_command_returns_the_command_or_not_found_with_suggestions(
    tools_kb: KnowledgeBase,
) -> None:
    async with Client(build_server(tools_kb)) as client:
        res = await client.call_tool("get_command", {"command": "helios gw users list"})
        assert not res.is_error
        found = payload(res)
        assert found is not None and found["found"] is True
        data = found["command"]
        assert (data["id"], data["type"]) == ("cmd:helios gw users list", "command")
        assert data["command"] == "helios gw users list"
        assert [e["code"] for e in data["examples"]] == [
            "helios gw users list",
            "helios gw users list --format json",
        ]
        miss = await client.call_tool("get_command", {"command": "helios get-users"})
        assert not miss.is_error
        assert payload(miss) == {
            "query": "helios get-users",
            "found": False,
            "command": None,
            "suggestions": ["helios gw users get", "helios gw users list", "helios sync run"],
            "alias_of": None,
        }
        other = await client.call_tool(
            "get_command", {"command": "helios gw users list", "source": "nothing-here"}
        )
        assert payload(other) is not None
        assert payload(other)["found"] is False


@pytest.mark.anyio
async def test_mcp_list_commands_pages_with_next_offset(tools_kb: KnowledgeBase) -> None:
    async with Client(build_server(tools_kb)) as client:
        first = payload(await client.call_tool("list_commands", {"limit": 2}))
        assert first is not None
        assert (first["total"], first["offset"], first["next_offset"]) == (5, 0, 2)
        assert [c["id"] for c in first["commands"]] == ["cmd-sync-run", "cmd:helios gw users get"]
        assert first["commands"][0]["command"] == "helios sync run"
        last = payload(await client.call_tool("list_commands", {"limit": 2, "offset": 4}))
        assert last is not None
        assert last["next_offset"] is None and [c["id"] for c in last["commands"]] == [
            "cmd:kbtool serve"
        ]
        cat = await client.call_tool("list_commands", {"category": "google-workspace"})
        assert payload(cat) is not None and payload(cat)["total"] == 2
        bad = await client.call_tool("list_commands", {"limit": 0})
        assert bad.is_error


@pytest.mark.anyio
async def test_mcp_get_api_endpoint_returns_the_operation_and_its_neighbours(
    tools_kb: KnowledgeBase,
) -> None:
    async with Client(build_server(tools_kb)) as client:
        res = await client.call_tool("get_api_endpoint", {"path": "/pets/123", "method": "DELETE"})
        assert not res.is_error
        data = payload(res)
        assert data is not None
        assert (data["match"], data["method"], data["params"]) == (
            "template", "DELETE", {"petId": "123"}
        )  # fmt: skip
        assert [e["doc_id"] for e in data["endpoints"]] == ["petstore:DELETE /pets/{petId}"]
        assert data["operation"]["id"] == "petstore:DELETE /pets/{petId}"
        assert "curl -X DELETE" in data["operation"]["content"]
        assert ("POST", "/pets") in {(e["method"], e["path"]) for e in data["same_resource"]}

        both = payload(await client.call_tool("get_api_endpoint", {"path": "/pets"}))
        assert both is not None and both["operation"] is None and len(both["endpoints"]) == 2

        none = await client.call_tool("get_api_endpoint", {"path": "/invoices/1"})
        assert not none.is_error and payload(none) is not None
        assert payload(none)["match"] == "none"
        assert payload(none)["endpoints"] == []
        assert payload(none)["operation"] is None

        blank = await client.call_tool("get_api_endpoint", {"path": "   "})
        assert blank.is_error and "[invalid_input] path: must not be empty" in _text(blank)


@pytest.mark.anyio
async def test_mcp_find_endpoints_by_resource_and_operation(tools_kb: KnowledgeBase) -> None:
    async with Client(build_server(tools_kb)) as client:
        res = await client.call_tool("find_endpoints", {"resource": "pets", "operation": "create"})
        data = payload(res)
        assert data is not None
        assert (data["resource"], data["operation"]) == ("pets", "create")
        assert [(e["method"], e["path"], e["operation_kind"]) for e in data["endpoints"]] == [
            ("POST", "/pets", "create")
        ]
        assert data["endpoints"][0]["operation_id"] == "addPet"
        assert data["endpoints"][0]["resources"] == ["pet"]
        every = payload(await client.call_tool("find_endpoints", {"resource": "customer"}))
        assert every is not None and len(every["endpoints"]) == 6
        nothing = payload(await client.call_tool("find_endpoints", {"resource": "invoice"}))
        assert nothing is not None and nothing["endpoints"] == []
