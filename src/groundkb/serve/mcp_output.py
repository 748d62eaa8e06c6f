"""How MCP tools send their results.

By default a tool result is one text block of compact JSON and the tool declares no
output schema: every MCP host reads text, and each result crosses the wire once. Hosts
differ in what they pass to the model when a result carries structured content as well
(some pass only the structured copy, some only the text), so sending both buys nothing
for an agent and doubles the bytes, the client's schema validation and the server's.

With the ``mcp_structured_output`` setting the tools declare their output schemas (the
pydantic models of ``schemas.py``) and return structured content, with the same compact
JSON as its text copy, as the MCP specification recommends for older clients. The
setting is read when the server is built. The RAG tools (``mcp_rag.py``) always return
structured content: their contract is a JSON shape for applications, errors included.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from ..answer.tooloutput import compact_json


def tool_result(data: dict[str, Any], structured: bool) -> CallToolResult:
    """``data`` as compact JSON text, and as structured content when ``structured``."""
    return CallToolResult(
        content=[TextContent(type="text", text=compact_json(data))],
        structured_content=data if structured else None,
    )


def output_tool(
    mcp: MCPServer, *, structured: bool, annotations: ToolAnnotations, description: str
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Register an async tool that returns a pydantic model (sent as :func:`tool_result`
    says) or a ``CallToolResult`` it built with :func:`tool_result`; its output schema
    only when ``structured``."""

    def register(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(fn)  # the SDK reads the arguments off the wrapped signature
        async def sent(*args: Any, **kwargs: Any) -> Any:
            out = await fn(*args, **kwargs)
            if isinstance(out, BaseModel) and not isinstance(out, CallToolResult):
                return tool_result(out.model_dump(mode="json", by_alias=True), structured)
            return out

        mcp.tool(
            annotations=annotations,
            description=description,
            structured_output=None if structured else False,
        )(sent)
        return fn

    return register
