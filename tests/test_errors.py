"""One error mapper for every shell: the same code and message over REST (see
test_http.py), MCP tools, MCP resources and the CLI; never pydantic's raw text."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from mcp import Client, MCPError
from pydantic import BaseModel, Field, ValidationError

from groundkb import KnowledgeBase
from groundkb.errors import NotFound
from groundkb.serve.cli import cli
from groundkb.serve.errors import as_error, cli_line, http_body, tool_text, validation_message
from groundkb.serve.mcp import build_server


class _Args(BaseModel):
    query: str = Field(min_length=1)
    limit: int = Field(ge=1, le=50)


def test_validation_errors_become_one_readable_invalid_input_line() -> None:
    with pytest.raises(ValidationError) as info:
        _Args.model_validate({"query": "", "limit": 99})
    err = as_error(info.value)
    assert (err.code, err.status) == ("invalid_input", 400)
    assert err.message == "query: must not be empty; limit: must be at most 50"
    assert validation_message([{"loc": ("query", "limit"), "type": "missing"}]) == (
        "limit: is required"
    )


def test_each_shell_renders_the_same_error_its_own_way() -> None:
    err = NotFound("no document with id 'x'")
    assert http_body(err) == (404, {"error": {"code": "not_found", "message": err.message}})
    assert tool_text(err) == "[not_found] no document with id 'x'"
    assert cli_line(err) == "error [not_found]: no document with id 'x'"


def test_unexpected_exceptions_say_nothing_but_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    status, body = http_body(RuntimeError("secret detail /etc/passwd"))
    assert status == 500 and body["error"]["code"] == "internal_error"
    assert "secret" not in body["error"]["message"]
    assert "RuntimeError" in caplog.text  # the details stay in the server log


@pytest.mark.anyio
async def test_mcp_argument_errors_are_invalid_input_not_pydantic_text(
    docs_kb: KnowledgeBase,
) -> None:
    async with Client(build_server(docs_kb)) as client:
        bad = await client.call_tool("search_knowledge", {"query": "x", "limit": 500})
        assert bad.is_error
        text = bad.content[0].text  # type: ignore[union-attr]
        assert text == "[invalid_input] limit: must be at most 50"
        missing = await client.call_tool("get_document", {})
        assert missing.content[0].text == "[invalid_input] id: is required"  # type: ignore[union-attr]
        typed = await client.call_tool("search_knowledge", {"query": "x", "type": "nope"})
        assert typed.content[0].text.startswith("[invalid_input] type: must be one of")  # type: ignore[union-attr]
        assert "pydantic" not in typed.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_mcp_resource_errors_carry_our_code(docs_kb: KnowledgeBase) -> None:
    async with Client(build_server(docs_kb)) as client:
        with pytest.raises(MCPError, match=r"\[not_found\] no document with id 'no/such'"):
            await client.read_resource("kb://docs/no%2Fsuch")
    assert docs_kb.ops.series.summary(60)["errors"] == 1


def test_the_cli_prints_one_error_line_with_our_code(docs_kb: KnowledgeBase) -> None:
    r = CliRunner().invoke(cli, ["--db", docs_kb.settings.db, "get", "no/such"])
    assert r.exit_code == 2
    assert r.output.strip() == "error [not_found]: no document with id 'no/such'"
