"""The MCP server through real MCP client sessions: in memory, as a stdio subprocess and
over streamable HTTP on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from groundkb import KnowledgeBase, bounds
from groundkb.serve.mcp import build_server

from .conftest import EXAMPLES
from .mcp_result import payload

pytestmark = pytest.mark.anyio


async def test_tools_are_typed_read_only_and_described(docs_kb: KnowledgeBase) -> None:
    async with Client(build_server(docs_kb)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"search_knowledge", "get_document"} <= set(tools)
        for tool in tools.values():
            assert tool.description and tool.annotations is not None
            assert tool.annotations.read_only_hint is True
            # one compact JSON text; the RAG tools' contract is structured content
            assert (tool.output_schema is not None) == tool.name.startswith("rag_")
        props = tools["search_knowledge"].input_schema["properties"]
        assert {"query", "type", "category", "source", "limit"} <= set(props)
        assert "search_knowledge" in (client.instructions or "")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_search_returns_verdict_hits_and_evidence(docs_kb: KnowledgeBase, mode: str) -> None:
    async with Client(build_server(docs_kb), mode=mode) as client:  # type: ignore[arg-type]
        res = await client.call_tool("search_knowledge", {"query": "explain workspace"})
        assert not res.is_error
        data = payload(res)
        assert data is not None
        assert data["verdict"]["kind"] == "answer"
        hit = data["hits"][0]
        assert hit["doc_id"] == "concepts/workspace"
        assert hit["title"] == "Workspace" and "header_path" not in hit  # it is the title
        assert hit["citation"] and "matched_terms" not in hit  # explain=true brings them
        miss = await client.call_tool("search_knowledge", {"query": "explain calendar"})
        assert payload(miss) is not None
        assert payload(miss)["verdict"]["kind"] == "no_match"
        assert payload(miss)["hits"] == []


async def test_search_hits_leave_out_what_repeats_unless_explain_is_asked(
    docs_kb: KnowledgeBase,
) -> None:
    async with Client(build_server(docs_kb)) as client:
        args = {"query": "explain workspace"}
        lean = payload(await client.call_tool("search_knowledge", args))
        full = await client.call_tool("search_knowledge", {**args, "explain": True})
        assert lean is not None and payload(full) is not None
    hit, explained = lean["hits"][0], payload(full)["hits"][0]
    assert not {"explanation", "ranks", "retriever", "command", "method"} & set(hit)
    assert hit["title"] == "Workspace"  # so its header path, the same, is left out
    assert "header_path" not in hit and "header_path" not in explained
    assert explained["explanation"] and explained["ranks"] == {"keyword": 1}
    assert "matched_terms" not in hit and explained["matched_terms"] == ["workspace"]
    # the query the caller sent is not sent back; explain keeps it
    assert "query" not in lean and payload(full)["query"] == "explain workspace"
    assert hit["snippet"] == explained["snippet"] and hit["citation"]
    assert "resource_uri" not in hit and "content_hash" not in hit  # kb://docs/ + doc_id
    assert explained["resource_uri"] == "kb://docs/" + hit["doc_id"] and explained["content_hash"]
    # a document's first passage goes without its chunk id (the id and #0), others keep it
    assert "chunk_id" not in hit and explained["chunk_id"] == hit["doc_id"] + "#0"
    later = [h["chunk_id"] for h in lean["hits"] if "chunk_id" in h]
    assert later and not any(c.endswith("#0") for c in later)
    # a source or type every hit has is said once; explain keeps it in every hit
    shared = lean["every_hit"]
    assert shared and "every_hit" not in payload(full)
    for key, value in shared.items():
        assert all(key not in h for h in lean["hits"])
        assert all(e[key] == value for e in payload(full)["hits"])
    # a later passage of a document shown above leaves out what that hit says
    seen: dict[str, dict[str, object]] = {}
    repeats = 0
    for h, e in zip(lean["hits"], payload(full)["hits"], strict=True):
        first = seen.setdefault(h["doc_id"], e)
        if first is e:
            assert h["title"] == e["title"]
            assert all(h.get(k, shared.get(k)) == e[k] for k in ("type", "source"))
            continue
        repeats += 1
        for key in ("title", "type", "source", "citation"):
            if key in shared:
                continue
            assert key not in h if e[key] == first[key] else h[key] == e[key]
    assert repeats
    async with Client(build_server(docs_kb)) as client:  # a clarification names its options once
        ask = payload(await client.call_tool("search_knowledge", {"query": "home"}))
        asked = payload(
            await client.call_tool("search_knowledge", {"query": "home", "explain": True})
        )
    assert ask is not None and asked is not None and ask["verdict"]["kind"] == "clarify"
    titles = [o["title"] for o in ask["verdict"]["options"]]
    assert len(titles) >= 2 and "suggestions" not in ask and asked["suggestions"] == titles
    assert len(json.dumps(lean)) < len(json.dumps(payload(full)))
    text = json.loads(full.content[0].text)  # type: ignore[union-attr]
    assert text == payload(full)


async def test_a_query_cut_to_its_searched_length_is_sent_back(docs_kb: KnowledgeBase) -> None:
    long = "explain workspace " + "and more words " * (bounds.MAX_QUERY_CHARS // 10)
    async with Client(build_server(docs_kb)) as client:
        data = payload(await client.call_tool("search_knowledge", {"query": long}))
    assert data is not None and long.startswith(data["query"])
    assert len(data["query"]) == bounds.MAX_QUERY_CHARS and "cut" in data["notice"]


async def test_every_lean_hit_still_meets_the_declared_output_schema(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.md").write_text("# Note\n\nA page with no category.\n")
    (tmp_path / "docs" / "memo.md").write_text("# Memo\n\nAnother page, no category.\n")
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        assert kb.ingest(tmp_path / "docs", source="docs").ok
        async with Client(build_server(kb)) as client:
            res = await client.call_tool("search_knowledge", {"query": "page category"})
        assert not res.is_error and "category" not in payload(res)["hits"][0]  # empty: left out
        kb.reload(kb.settings.replace(mcp_structured_output=True))
        async with Client(build_server(kb)) as client:  # the client checks the schema
            res = await client.call_tool("search_knowledge", {"query": "page category"})
    assert not res.is_error and res.structured_content is not None
    out = res.structured_content
    assert len(out["hits"]) == 2 and "category" not in out["hits"][0]
    assert out["every_hit"] == {"source": "docs", "type": "page"}  # declared in the schema


async def test_errors_carry_our_code_and_no_traceback(docs_kb: KnowledgeBase) -> None:
    async with Client(build_server(docs_kb)) as client:
        res = await client.call_tool("get_document", {"id": "no/such/doc"})
        assert res.is_error
        text = res.content[0].text  # type: ignore[union-attr]
        assert "[not_found]" in text and "Traceback" not in text
        bad = await client.call_tool("search_knowledge", {"query": "x", "limit": 500})
        assert bad.is_error
        blank = await client.call_tool("search_knowledge", {"query": "   "})
        assert blank.is_error and "[invalid_input]" in blank.content[0].text  # type: ignore[union-attr]


async def test_documents_are_resources(docs_kb: KnowledgeBase) -> None:
    async with Client(build_server(docs_kb)) as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert any(t.uri_template == "kb://docs/{+doc_id}" for t in templates)
        res = await client.read_resource("kb://docs/concepts%2Fnotes")
        text = res.contents[0].text  # type: ignore[union-attr]
        assert text.startswith("# Notes")


async def test_get_document_returns_the_full_entry(commands_kb: KnowledgeBase) -> None:
    async with Client(build_server(commands_kb)) as client:
        res = await client.call_tool("get_document", {"id": "cmd-gw-users-list#0"})
        assert not res.is_error and payload(res) is not None
        assert payload(res)["command"] == "helios gw users list"
        assert payload(res)["examples"][0]["code"] == "helios gw users list"


async def test_stdio_server_subprocess_answers_searches(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db) as kb:
        assert kb.ingest(EXAMPLES / "entries", source="commands").ok
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "groundkb", "--db", str(db), "serve"]
    )
    async with Client(params) as client:
        res = await client.call_tool("search_knowledge", {"query": "helios get-users"})
        assert payload(res) is not None
        assert payload(res)["hits"] == []
        assert payload(res)["verdict"]["reason"] == "unknown_command"
        assert "helios gw users list" in payload(res)["suggestions"]


@pytest.mark.anyio
async def test_streamable_http_server_answers_over_loopback(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        sys.executable,
        "-m",
        "groundkb",
        "--db",
        str(db),
        "serve",
        "--http",
        "--port",
        str(port),
    ]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        health = f"http://127.0.0.1:{port}/health"
        for _ in range(200):
            try:
                with urllib.request.urlopen(health, timeout=1) as r:
                    assert json.loads(r.read())["documents"] > 0
                    break
            except OSError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                await anyio.sleep(0.1)
        else:
            pytest.fail("the HTTP server did not come up")
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            res = await client.call_tool("search_knowledge", {"query": "explain workspace"})
            assert payload(res) is not None
            assert payload(res)["verdict"]["kind"] == "answer"
            assert payload(res)["hits"][0]["doc_id"] == "concepts/workspace"
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stderr:
            server.stderr.close()


async def test_a_hit_leaves_out_a_summary_that_is_its_own_opening(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lead.md").write_text(
        "# Rotation\n\nKeys rotate every ninety days by default.\n\n"
        "An operator can rotate them sooner from the console.\n"
    )
    (tmp_path / "docs" / "told.md").write_text(
        "---\nsummary: How retention of audit records works.\n---\n# Retention\n\n"
        "Audit records rotate out after a year unless kept on hold.\n"
    )
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        assert kb.ingest(tmp_path / "docs", source="docs").ok
        assert kb.get("lead").summary == "Keys rotate every ninety days by default."
        hits = {h.doc_id: h for h in kb.search("rotate", limit=5).hits}
        assert hits["lead"].summary == ""  # the snippet's own passage opens with it
        assert hits["told"].summary == "How retention of audit records works."
        async with Client(build_server(kb)) as client:
            data = payload(await client.call_tool("search_knowledge", {"query": "rotate"}))
    by_id = {h["doc_id"]: h for h in data["hits"]}
    assert "summary" not in by_id["lead"]
    assert by_id["told"]["summary"] == "How retention of audit records works."
