"""Whatever a caller passes, the answer is a result or our error: the Python API, the
command line and MCP (a real in-memory client session). Bounds come from bounds.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client

from groundkb import KnowledgeBase
from groundkb import bounds as b
from groundkb.errors import InvalidInput
from groundkb.serve.cli import cli
from groundkb.serve.mcp import build_server
from groundkb.serve.schemas import resource_uri

from .conftest import EXAMPLES
from .mcp_result import payload

BIG = "x" * 1_000_000


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda kb: kb.search("x", category="\udcff"), "category is not valid text"),
        (lambda kb: kb.search("x", source=["ok", "\udcff"]), "source is not valid text"),
        (lambda kb: kb.get("\udcff"), "id is not valid text"),
        (lambda kb: kb.get_command("get \udcff"), "command is not valid text"),
        (lambda kb: kb.list_commands(offset=2**63), "offset must be from 0 to"),
        (lambda kb: kb.list_commands(limit="5"), "limit must be a whole number, not '5'"),
        (lambda kb: kb.list_commands(limit=float("nan")), "limit must be a whole number"),
        (lambda kb: kb.search("x", limit="5"), "limit must be a whole number"),
        (lambda kb: kb.search("x", limit=True), "limit must be a whole number"),
        (lambda kb: kb.list_documents(offset=-1), "offset must be from 0 to"),
        (lambda kb: kb.search(["x"]), "query must be text, not list"),
        (lambda kb: kb.search("x", type=5), "type must be text or a list of text"),
        (lambda kb: kb.get_command(BIG), "command is longer than 500 characters"),
        (lambda kb: kb.get_api_endpoint(BIG), "path is longer than 500 characters"),
        (lambda kb: kb.find_endpoints(BIG), "resource is longer than 500 characters"),
        (lambda kb: kb.delete(["\udcff"]), "id is not valid text"),
    ],
)
def test_the_python_api_answers_bad_arguments_with_invalid_input(
    commands_kb: KnowledgeBase, call: Any, message: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        call(commands_kb)
    assert err.value.message.startswith(message)
    assert len(err.value.message) < 300  # never the value echoed back in full


def test_an_empty_and_a_blank_query_get_the_same_message(commands_kb: KnowledgeBase) -> None:
    messages = set()
    for query in ("", "   "):
        with pytest.raises(InvalidInput) as err:
            commands_kb.search(query)
        messages.add(err.value.message)
    assert messages == {"query: must not be empty"}


def test_a_query_over_the_limit_is_cut_with_a_notice(commands_kb: KnowledgeBase) -> None:
    result = commands_kb.search("list google workspace users " * 200)
    assert len(result.query) <= b.MAX_QUERY_CHARS
    assert f"query cut to its first {b.MAX_QUERY_CHARS} characters" in result.notice


def test_a_source_filter_naming_no_source_says_so(commands_kb: KnowledgeBase) -> None:
    result = commands_kb.search("list users", source="nothing-here")
    assert result.hits == ()
    assert result.notice == "no source named 'nothing-here' (sources: commands)"


def test_eval_goes_on_past_a_long_and_a_blank_query(tmp_path: Path) -> None:
    from groundkb.evaluate import evaluate

    data = tmp_path / "set"
    data.mkdir()
    corpus = [{"_id": "d1", "title": "Workspaces", "text": "Share a workspace with a team."}]
    (data / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus))
    queries = [
        {"_id": "q1", "text": "share a workspace " * 300},
        {"_id": "q2", "text": "   "},
        {"_id": "q3", "text": "share a workspace"},
    ]
    (data / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    (data / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td1\t1\nq3\td1\t1\n")
    from groundkb import Settings

    report = evaluate(str(data), Settings(embedder="none"), mode="keyword")
    assert report.queries == 3 and report.outcomes.get("failed") == 1
    assert report.hit_at_1 == pytest.approx(2 / 3, abs=1e-3)


# -------------------------------------------------------------------- the CLI
@pytest.mark.parametrize(
    "args",
    [
        ["search", "x", "--category", "\udcff"],
        ["search", "\udcff"],
        ["get", "\udcff"],
        ["command", "\udcff"],
        ["endpoint", "/\udcff"],
        ["endpoints", "\udcff"],
    ],
)
def test_the_cli_answers_undecodable_arguments_with_one_line(
    commands_kb: KnowledgeBase, args: list[str]
) -> None:
    result = CliRunner().invoke(cli, ["--db", commands_kb.settings.db, *args])
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output


def test_an_argument_of_raw_bytes_gives_our_error_in_a_real_process(
    commands_kb: KnowledgeBase,
) -> None:
    run = subprocess.run(
        [sys.executable.encode(), b"-m", b"groundkb", b"--db", commands_kb.settings.db.encode(),
         b"search", b"x", b"--category", b"\xff"],
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.decode() == (
        "error [invalid_input]: category is not valid text: it holds bytes that are not "
        "UTF-8 (a lone surrogate)\n"
    )


def test_a_bug_in_a_command_is_one_line_not_a_traceback(
    commands_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: KnowledgeBase) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(KnowledgeBase, "stats", broken)
    result = CliRunner().invoke(cli, ["--db", commands_kb.settings.db, "stats"])
    assert result.exit_code == 2
    assert result.output.startswith("error [internal_error]: ZeroDivisionError")
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------- MCP
@pytest.fixture
def mixed_kb(tmp_path: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(tmp_path / "kb.db")
    assert kb.ingest(EXAMPLES / "docs", source="docs").ok
    assert kb.ingest(EXAMPLES / "entries", source="commands").ok
    entries = tmp_path / "odd.yaml"
    entries.write_text(
        "- {id: 'faq#1', type: guide, title: Hash id, category: faq, content: An odd id.}\n"
        "- {id: 'a?b%20c', type: guide, title: Query id, category: faq, content: Odder.}\n"
    )
    assert kb.ingest(entries, source="odd").ok
    return kb


@pytest.mark.anyio
async def test_mcp_bounds_and_our_errors(mixed_kb: KnowledgeBase) -> None:
    async with Client(build_server(mixed_kb)) as client:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("list_commands", {"offset": 2**63}, "offset: must be at most 1000000000"),
            ("list_commands", {"limit": "5x"}, "limit:"),
            ("search_knowledge", {"query": "x", "category": "\udcff"}, "category:"),
            ("get_document", {"id": "\udcff"}, "id:"),
            ("get_command", {"command": BIG}, "command: must be at most 500 characters"),
            ("get_api_endpoint", {"path": BIG}, "path: must be at most 500 characters"),
            ("find_endpoints", {"resource": BIG}, "resource: must be at most 500 characters"),
            ("search_knowledge", {"query": ""}, "query: must not be empty"),
            ("search_knowledge", {"query": "  "}, "query: must not be empty"),
        ]
        for tool, args, expected in cases:
            res = await client.call_tool(tool, args)
            text = res.content[0].text  # type: ignore[union-attr]
            assert res.is_error and "[invalid_input]" in text and expected in text, text
            assert len(text) < 400 and "pydantic" not in text
        long = await client.call_tool("search_knowledge", {"query": "list users " * 300})
        assert not long.is_error and payload(long) is not None
        assert "query cut to its first 2000 characters" in payload(long)["notice"]


@pytest.mark.anyio
async def test_mcp_server_names_its_version_and_tools_have_dedented_descriptions(
    mixed_kb: KnowledgeBase,
) -> None:
    from groundkb import __version__

    async with Client(build_server(mixed_kb)) as client:
        assert client.server_info.version == __version__  # type: ignore[union-attr]
        for tool in (await client.list_tools()).tools:
            lines = (tool.description or "").splitlines()
            assert lines and not any(line.startswith("    ") for line in lines), tool.name


@pytest.mark.anyio
async def test_every_hit_and_document_carries_a_resource_uri_that_reads_as_given(
    mixed_kb: KnowledgeBase,
) -> None:
    async with Client(build_server(mixed_kb)) as client:
        for raw in ("kb://docs/concepts/workspace", resource_uri("concepts/workspace")):
            text = (await client.read_resource(raw)).contents[0].text  # type: ignore[union-attr]
            assert text.startswith("# Workspace")
        found = await client.call_tool("search_knowledge", {"query": "explain workspace"})
        assert payload(found) is not None
        for hit in payload(found)["hits"]:  # left out when it is kb://docs/ and the id
            uri = hit.get("resource_uri", "kb://docs/" + hit["doc_id"])
            assert uri == resource_uri(hit["doc_id"])
            res = await client.read_resource(uri)
            assert f"id: {hit['doc_id']}" in res.contents[0].text  # type: ignore[union-attr]
        odd = payload(await client.call_tool("search_knowledge", {"query": "query id"}))
        uris = {h["doc_id"]: h.get("resource_uri") for h in odd["hits"]}
        assert uris.get("a?b%20c") == resource_uri("a?b%20c") != "kb://docs/a?b%20c"
        res = await client.read_resource(uris["a?b%20c"])
        assert "id: a?b%20c" in res.contents[0].text  # type: ignore[union-attr]
        for doc_id in ("faq#1", "a?b%20c"):
            doc = await client.call_tool("get_document", {"id": doc_id})
            assert payload(doc) is not None, doc.content
            assert payload(doc)["id"] == doc_id  # '#' kept, not cut
            res = await client.read_resource(payload(doc)["resource_uri"])
            assert f"id: {doc_id}" in res.contents[0].text  # type: ignore[union-attr]
        chunk = await client.call_tool("get_document", {"id": "concepts/workspace#0"})
        assert payload(chunk) is not None
        assert payload(chunk)["id"] == "concepts/workspace"  # a chunk id works


@pytest.mark.anyio
async def test_resources_list_pages_through_every_document(
    mixed_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundkb.serve import mcp as served

    monkeypatch.setattr(served, "RESOURCE_PAGE", 5)
    async with Client(build_server(mixed_kb)) as client:
        seen: list[str] = []
        cursor = None
        for _ in range(10):
            page = await client.list_resources(cursor=cursor)
            seen += [r.name for r in page.resources]
            assert all(str(r.uri) == resource_uri(r.name) for r in page.resources)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == [d.id for d in mixed_kb.list_documents(limit=1000)]
        assert len(seen) == 15


def test_bounds_are_what_the_schemas_declare() -> None:
    from groundkb.serve.schemas import SearchRequest

    fields = SearchRequest.model_json_schema()["properties"]
    assert fields["query"]["maxLength"] == b.MAX_QUERY_INPUT_CHARS
    assert fields["limit"]["anyOf"][0]["maximum"] == b.SEARCH_LIMIT[1]


@pytest.mark.anyio
async def test_mcp_prompt_arguments_missing_or_unknown_are_our_errors(
    mixed_kb: KnowledgeBase,
) -> None:
    from mcp import MCPError

    async with Client(build_server(mixed_kb)) as client:
        for name, args, expected in (
            ("strict", {}, "[invalid_input] question: is required"),
            ("no-such-template", {"question": "x"}, "[not_found] no prompt named"),
        ):
            with pytest.raises(MCPError) as err:
                await client.get_prompt(name, args)
            assert str(err.value).startswith(expected)
        with pytest.raises(MCPError, match=r"\[invalid_input\] cursor"):
            await client.list_resources(cursor="not-a-cursor")
