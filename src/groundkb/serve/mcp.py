"""The MCP server: typed, read-only tools over one KnowledgeBase. All MCP imports live here
and in ``mcp_prompts.py`` (prompts and the ``build_prompt`` tool).

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
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ..api import KnowledgeBase
from ..apigraph import Endpoint
from ..errors import GroundKBError, NotFound
from ..models import Document, SearchResult
from ..settings import Settings
from .mcp_prompts import _prompt_tools, compact_json, fit_document, fit_search
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
- To hand a model a ready prompt with the knowledge for a question (grounding level, token
  budget, citations and the ids of everything included), use build_prompt.
- For an exact CLI command use get_command (list_commands to browse); for an API operation use
  get_api_endpoint (by path) or find_endpoints (by resource and operation, e.g. "location",
  "create"). A not-found answer means the command or endpoint does not exist.
"""

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

DocTypeFilter = Literal[
    "all", "command", "api", "guide", "feature", "troubleshooting", "setting", "page"
]


class OptionOut(BaseModel):
    doc_id: str
    title: str
    category: str = ""
    type: str = ""
    command: str = ""


class VerdictOut(BaseModel):
    kind: Literal["answer", "clarify", "no_match"]
    confidence: float = Field(description="Probability behind the verdict, in [0, 1].")
    reason: str = Field(description="The evidence that decided.")
    message: str
    options: list[OptionOut] = Field(
        default=[], description="clarify: the distinct meanings to ask the user about."
    )
    evidence: list[str] = Field(default=[], description="The weighed signals, strongest first.")


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
    mode: str = Field(default="keyword", description="keyword, vector or hybrid: what ran.")
    notice: str = Field(default="", description="Why the search fell back to keyword, if so.")
    dropped_hits: int = Field(
        default=0, description="Lowest-scored hits left out to stay within max_tokens."
    )


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
    offset: int = Field(default=0, description="Character offset of content in the document.")
    truncated: bool = Field(default=False, description="The content was cut to max_tokens.")
    next_offset: int | None = Field(
        default=None, description="Pass as offset to read the rest of the content."
    )


def search_out(r: SearchResult) -> SearchOut:
    v = r.verdict
    return SearchOut(
        query=r.query,
        verdict=VerdictOut(
            kind=v.kind,
            confidence=v.confidence,
            reason=v.reason,
            message=v.message,
            options=[
                OptionOut(
                    doc_id=o.doc_id,
                    title=o.title,
                    category=o.category,
                    type=o.type,
                    command=o.command,
                )
                for o in v.options
            ],
            evidence=list(v.evidence),
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
        mode=r.mode,
        notice=r.notice,
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


class EndpointOut(BaseModel):
    doc_id: str
    method: str
    path: str
    title: str
    operation_kind: str = Field(description="create, read, list, update, delete or an action.")
    resources: list[str]
    operation_id: str = ""
    spec: str = ""


class EndpointLookupOut(BaseModel):
    path: str
    method: str
    match: str = Field(description="exact, template, loose or none.")
    endpoints: list[EndpointOut]
    operation: DocumentOut | None = Field(description="The full operation when one matched.")
    params: dict[str, str]
    same_resource: list[EndpointOut]
    parents: list[EndpointOut]
    children: list[EndpointOut]
    other_methods: list[str]
    found: bool = Field(description="False: no such operation exists; see suggestions.")
    suggestions: list[str] = Field(
        default=[], description="Did-you-mean operations ('METHOD /path') when not found."
    )


class EndpointsOut(BaseModel):
    resource: str
    operation: str | None
    endpoints: list[EndpointOut]


class CommandLookupOut(BaseModel):
    query: str
    found: bool = Field(description="False: no such command exists; see suggestions.")
    command: DocumentOut | None = Field(description="The command, when found.")
    suggestions: list[str] = Field(description="Did-you-mean command names when not found.")


class CommandSummaryOut(BaseModel):
    id: str
    command: str
    title: str
    category: str
    summary: str


class CommandsOut(BaseModel):
    total: int
    offset: int
    commands: list[CommandSummaryOut]
    next_offset: int | None = Field(description="Pass as offset for the next page.")


def endpoint_out(e: Endpoint) -> EndpointOut:
    return EndpointOut(
        doc_id=e.doc_id,
        method=e.method,
        path=e.path,
        title=e.title,
        operation_kind=e.operation_kind,
        resources=list(e.resources),
        operation_id=e.operation_id,
        spec=e.spec,
    )


MaxTokens = Annotated[
    int | None,
    Field(
        ge=256,
        le=1_000_000,
        description="Most tokens (cl100k_base) the result may take; default from the server.",
    ),
]


def _compact(data: dict[str, Any]) -> CallToolResult:
    """A structured result whose text copy is compact JSON (the SDK's is indented)."""
    return CallToolResult(
        content=[TextContent(type="text", text=compact_json(data))], structured_content=data
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
        max_tokens: MaxTokens = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        """Search the knowledge base for commands, API endpoints, guides and docs.

        ALWAYS use this before answering how to do something. Returns a verdict
        (answer / clarify / no_match), hits with evidence and citations, and suggestions.
        """
        cap = max_tokens or kb.settings.tool_max_tokens

        def run() -> dict[str, Any]:
            found = kb.search(query, type=type, category=category, source=source, limit=limit)
            return fit_search(search_out(found).model_dump(mode="json"), cap)

        return _compact(await _call(run))

    @mcp.tool(annotations=READ_ONLY)
    async def get_document(
        id: Annotated[str, Field(min_length=1, description="Document id from a search hit.")],
        max_tokens: MaxTokens = None,
        offset: Annotated[
            int, Field(ge=0, description="Read the content from here (a next_offset).")
        ] = 0,
    ) -> Annotated[CallToolResult, DocumentOut]:
        """Get the full text of one document (page, entry, command or endpoint) by id.

        Long content is cut to max_tokens; read on with offset = next_offset.
        """
        cap = max_tokens or kb.settings.tool_max_tokens

        def run() -> dict[str, Any]:
            doc = document_out(kb.get(id.split("#", 1)[0]))
            return fit_document(doc.model_dump(mode="json"), cap, offset)

        return _compact(await _call(run))

    @mcp.tool(annotations=READ_ONLY)
    async def get_command(
        command: Annotated[
            str, Field(min_length=1, description="Exact command name, e.g. 'helios gw users list'.")
        ],
        source: Annotated[str | None, Field(description="Only this source.")] = None,
    ) -> CommandLookupOut:
        """Get one CLI command by its exact name or alias: syntax, options and examples.

        found=false means no such command exists: never run or present a command this
        tool did not return; offer the did-you-mean suggestions instead.
        """
        found = await _call(lambda: kb.lookup_command(command, source=source))
        return CommandLookupOut(
            query=found.query,
            found=found.found,
            command=document_out(found.document) if found.document is not None else None,
            suggestions=list(found.suggestions),
        )

    @mcp.tool(annotations=READ_ONLY)
    async def list_commands(
        category: Annotated[str | None, Field(description="Only this category.")] = None,
        offset: Annotated[int, Field(ge=0, description="From a previous next_offset.")] = 0,
        limit: Annotated[int, Field(ge=1, le=200, description="Commands per page.")] = 50,
    ) -> CommandsOut:
        """List the documented CLI commands, a page at a time."""
        docs, total = await _call(lambda: kb.list_commands(category, limit=limit, offset=offset))
        nxt = offset + len(docs)
        return CommandsOut(
            total=total,
            offset=offset,
            commands=[
                CommandSummaryOut(
                    id=d.id,
                    command=d.command,
                    title=d.title,
                    category=d.category,
                    summary=d.summary,
                )
                for d in docs
            ],
            next_offset=nxt if nxt < total else None,
        )

    @mcp.tool(annotations=READ_ONLY)
    async def get_api_endpoint(
        path: Annotated[
            str, Field(min_length=1, description="API path, e.g. '/v1/customers/cus_123'.")
        ],
        method: Annotated[str | None, Field(description="HTTP method, e.g. 'POST'.")] = None,
    ) -> EndpointLookupOut:
        """Look up an API operation by path (exact, template such as /users/123 for
        /users/{id}, or without a version prefix), with its related operations."""

        def lookup() -> tuple[Any, Any]:
            found = kb.get_api_endpoint(path, method)
            op = kb.get(found.endpoints[0].doc_id) if len(found.endpoints) == 1 else None
            return found, op

        found, op = await _call(lookup)
        return EndpointLookupOut(
            path=found.path,
            method=found.method,
            match=found.match,
            endpoints=[endpoint_out(e) for e in found.endpoints],
            operation=document_out(op) if op is not None else None,
            params=dict(found.params),
            same_resource=[endpoint_out(e) for e in found.same_resource],
            parents=[endpoint_out(e) for e in found.parents],
            children=[endpoint_out(e) for e in found.children],
            other_methods=list(found.other_methods),
            found=found.found,
            suggestions=list(found.suggestions),
        )

    @mcp.tool(annotations=READ_ONLY)
    async def find_endpoints(
        resource: Annotated[
            str, Field(min_length=1, description="Resource name, e.g. 'location' or 'users'.")
        ],
        operation: Annotated[
            str | None,
            Field(
                description="create, read, list, update, delete, an action like 'cancel', "
                "or a verb for one ('add', 'set up', 'evict')."
            ),
        ] = None,
    ) -> EndpointsOut:
        """Find the API operations on a resource, e.g. ('location', 'create') → POST /locations."""
        found = await _call(lambda: kb.find_endpoints(resource, operation))
        return EndpointsOut(
            resource=resource, operation=operation, endpoints=[endpoint_out(e) for e in found]
        )

    _prompt_tools(mcp, kb)

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
