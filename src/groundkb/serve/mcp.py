"""The MCP server: typed, read-only tools over one KnowledgeBase. All MCP imports live here.

Tools return structured output (pydantic models below); errors come back as tool errors
that start with our error code, e.g. ``[not_found] no document with id 'x'``, never a
traceback.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from ..api import KnowledgeBase
from ..errors import GroundKBError, NotFound
from ..models import Document, SearchResult
from ..settings import Settings
from .render import document_text

log = logging.getLogger(__name__)
T = TypeVar("T")

INSTRUCTIONS = """\
This server is the single source of truth for the product's documentation, commands and APIs.
- Call search_knowledge BEFORE answering any question about how to do something, which command
  to run, which endpoint to call, or what a feature or setting does.
- verdict "answer": answer from the hits only, quote commands exactly, cite the citation field.
- verdict "clarify": ask the user the clarifying question in verdict.message; offer the
  suggestions. Do not pick one yourself.
- verdict "no_match": say you do not know. Never invent a command, endpoint or option; offer the
  did-you-mean suggestions if there are any.
- Use get_document for the full text of a hit before giving detailed steps.
"""

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

DocTypeFilter = Literal[
    "all", "command", "api", "guide", "feature", "troubleshooting", "setting", "page"
]


class VerdictOut(BaseModel):
    kind: Literal["answer", "clarify", "no_match"]
    confidence: float
    reason: str
    message: str


class HitOut(BaseModel):
    doc_id: str
    chunk_id: str
    title: str
    type: str
    category: str
    source: str
    snippet: str
    score: float = Field(description="Evidence score in [0, 1].")
    matched_terms: list[str]
    header_path: str
    citation: str
    content_hash: str
    explanation: list[str]
    command: str = ""
    summary: str = ""


class SearchOut(BaseModel):
    query: str
    verdict: VerdictOut
    hits: list[HitOut]
    suggestions: list[str] = Field(description="Did-you-mean or clarification candidates.")
    corrected_query: str = ""
    multi_intent: bool = False


class ExampleOut(BaseModel):
    code: str
    description: str = ""
    output: str = ""


class DocumentOut(BaseModel):
    id: str
    title: str
    type: str
    category: str
    source: str
    summary: str
    content: str
    command: str = ""
    keywords: list[str]
    aliases: list[str]
    examples: list[ExampleOut]
    related_ids: list[str]
    citation: str
    content_hash: str
    updated_at: str


def search_out(r: SearchResult) -> SearchOut:
    v = r.verdict
    return SearchOut(
        query=r.query,
        verdict=VerdictOut(
            kind=v.kind, confidence=v.confidence, reason=v.reason, message=v.message
        ),
        hits=[
            HitOut(
                doc_id=h.doc_id,
                chunk_id=h.chunk_id,
                title=h.title,
                type=h.type,
                category=h.category,
                source=h.source,
                snippet=h.snippet,
                score=h.score,
                matched_terms=list(h.matched_terms),
                header_path=h.header_path,
                citation=h.citation,
                content_hash=h.content_hash,
                explanation=list(h.explanation),
                command=h.command,
                summary=h.summary,
            )
            for h in r.hits
        ],
        suggestions=list(r.suggestions),
        corrected_query=r.corrected_query,
        multi_intent=r.multi_intent,
    )


def document_out(d: Document) -> DocumentOut:
    return DocumentOut(
        id=d.id,
        title=d.title,
        type=d.type,
        category=d.category,
        source=d.source,
        summary=d.summary,
        content=d.content,
        command=d.command,
        keywords=list(d.keywords),
        aliases=list(d.aliases),
        examples=[
            ExampleOut(code=e.code, description=e.description, output=e.output) for e in d.examples
        ],
        related_ids=list(d.related_ids),
        citation=d.uri or f"{d.source}:{d.origin or d.id}",
        content_hash=d.content_hash,
        updated_at=d.updated_at,
    )


async def _call(fn: Callable[[], T]) -> T:
    """Run a core call in a worker thread; map our errors to tool errors."""
    try:
        return await anyio.to_thread.run_sync(fn)
    except GroundKBError as exc:
        raise ToolError(f"[{exc.code}] {exc.message}") from None


def build_server(kb: KnowledgeBase, name: str = "groundkb") -> MCPServer:
    """An MCP server exposing ``kb``; the caller owns ``kb`` and closes it."""
    mcp: MCPServer = MCPServer(name, instructions=INSTRUCTIONS)

    @mcp.tool(annotations=READ_ONLY)
    async def search_knowledge(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=2000,
                description="What to find, e.g. 'list users command'.",
            ),
        ],
        type: Annotated[DocTypeFilter, Field(description="Only this type of entry.")] = "all",
        category: Annotated[str | None, Field(description="Only this category.")] = None,
        source: Annotated[str | None, Field(description="Only this source.")] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Most hits to return.")] = 5,
    ) -> SearchOut:
        """Search the knowledge base for commands, API endpoints, guides and docs.

        ALWAYS use this before answering how to do something. Returns a verdict
        (answer / clarify / no_match), hits with evidence and citations, and suggestions.
        """
        result = await _call(
            lambda: kb.search(query, type=type, category=category, source=source, limit=limit)
        )
        return search_out(result)

    @mcp.tool(annotations=READ_ONLY)
    async def get_document(
        id: Annotated[str, Field(min_length=1, description="Document id from a search hit.")],
    ) -> DocumentOut:
        """Get the full text of one document (page, entry, command or endpoint) by id."""
        return document_out(await _call(lambda: kb.get(id.split("#", 1)[0])))

    @mcp.resource(
        "kb://docs/{doc_id}",
        mime_type="text/markdown",
        description="A document of the knowledge base, as Markdown.",
    )
    async def document_resource(doc_id: str) -> str:
        try:
            doc = await anyio.to_thread.run_sync(lambda: kb.get(doc_id))
        except NotFound as exc:
            raise ResourceNotFoundError(exc.message) from None
        return document_text(doc)

    return mcp


@contextlib.contextmanager
def _opened(settings: Settings) -> Any:
    kb = KnowledgeBase.open(settings=settings)
    try:
        yield kb
    finally:
        kb.close()


def http_app(kb: KnowledgeBase) -> Any:
    """A Starlette app: MCP (streamable HTTP) at /mcp and a health check at /health."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Mount, Route

    mcp = build_server(kb)

    async def health(request: Request) -> JSONResponse:
        s = await anyio.to_thread.run_sync(kb.stats)
        return JSONResponse({"status": "ok", "documents": s.documents, "chunks": s.chunks})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    return Starlette(
        routes=[Route("/health", health), Mount("/", app=mcp.streamable_http_app())],
        lifespan=lifespan,
    )


def run(
    settings: Settings, *, http: bool = False, host: str = "127.0.0.1", port: int = 8765
) -> None:
    """Serve until interrupted. Logs go to stderr; stdout belongs to the stdio protocol."""
    logging.basicConfig(level=settings.log_level.upper(), stream=sys.stderr, force=True)
    with _opened(settings) as kb:
        if http:
            import uvicorn

            uvicorn.run(http_app(kb), host=host, port=port, log_level=settings.log_level.lower())
        else:
            build_server(kb).run("stdio")
