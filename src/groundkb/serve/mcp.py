"""The MCP server: typed, read-only tools over one KnowledgeBase. All MCP imports live here
and in the other ``mcp_*.py`` modules (prompts and ``build_prompt``, the RAG tools, how
results are sent).

Tools return compact JSON text shaped by the pydantic models of ``schemas.py`` (shared
with the REST API), or structured output too with ``mcp_structured_output``
(``mcp_output.py``). Errors come back as tool errors that start with our error code, e.g.
``[not_found] no document with id 'x'``, never a traceback. Invalid arguments too:
``[invalid_input] limit: must be at most 50`` (see ``errors.py`` in this package, the
one error mapper of every shell). Argument bounds come from ``bounds.py``.

Every document is the resource ``kb://docs/{+doc_id}`` (the ``+`` lets ids keep their
``/``); documents carry its URI, percent-encoded where an id holds ``#``, ``?``, ``%``
or spaces, so it works as given, and so do hits whose URI is more than ``kb://docs/``
and the id. ``resources/list`` pages through every
document (:data:`RESOURCE_PAGE` per page).
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from mcp import MCPError
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
    ToolAnnotations,
)
from pydantic import Field, ValidationError

from .. import __version__, bounds
from ..access.principal import Principal
from ..answer.tooloutput import compact_search, fit_document, fit_search
from ..api import KnowledgeBase
from ..errors import NotFound
from ..settings import Settings
from .errors import as_error, tool_text
from .gate import Gate
from .identity import local_principal
from .mcp_output import output_tool, tool_result
from .mcp_prompts import _prompt_tools
from .mcp_rag import register_rag_tools
from .render import document_text
from .schemas import (
    CommandLookupOut,
    CommandsOut,
    DocTypeFilter,
    DocumentOut,
    EndpointLookupOut,
    EndpointsOut,
    McpSearchOut,
    command_lookup_out,
    commands_out,
    document_out,
    endpoint_out,
    lookup_out,
    resource_uri,
    search_out,
)

if TYPE_CHECKING:
    from ..federation.aggregator import Aggregator

log = logging.getLogger(__name__)
T = TypeVar("T")

INSTRUCTIONS = """\
This server is the single source of truth for the product's documentation, commands and APIs.
- Call search_knowledge BEFORE answering any question about how to do something, which command
  to run, which endpoint to call, or what a feature or setting does.
- verdict "answer": answer from the hits only, quote commands exactly, cite the citation field.
- verdict "clarify": ask the user the clarifying question in verdict.message; offer the
  verdict.options. Do not pick one yourself.
- verdict "no_match": say you do not know. Never invent a command, endpoint or option; offer the
  did-you-mean suggestions if there are any.
- A later hit of a document already listed gives only what differs (same doc_id); a source
  or type that every hit has is given once, in every_hit.
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
RESOURCE_PAGE = 100  # documents per resources/list page
_MISSING_ARGS = re.compile(r"Missing required arguments: \{(.*)\}")


MaxTokens = Annotated[
    int | None,
    Field(
        ge=256,
        le=1_000_000,
        description="Most tokens (cl100k_base) the result may take; default from the server.",
    ),
]


def _mapped(kb: KnowledgeBase, operation: str) -> Callable[[BaseException], ToolError]:
    def to_tool_error(exc: BaseException) -> ToolError:
        err = as_error(exc)
        kb.ops.error(operation, err.code)
        return ToolError(tool_text(err))

    return to_tool_error


class _Server(MCPServer):
    """Reports invalid tool arguments in our words: ``[invalid_input] limit: must be at
    most 50``, not pydantic's text (the SDK validates before the tool runs); lists the
    documents as resources, a page at a time."""

    kb: KnowledgeBase | None = None
    gate: Gate | None = None

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        """Prompt arguments that are missing or invalid are ``[invalid_input]`` errors (the
        SDK reports them as internal errors)."""
        try:
            return await super().get_prompt(name, arguments, context)
        except MCPError:
            raise
        except ValueError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise MCPError(INVALID_PARAMS, tool_text(cause)) from None
            text = str(exc)
            missing = _MISSING_ARGS.search(text)
            if missing:
                names = ", ".join(sorted(n.strip(" '\"") for n in missing.group(1).split(",")))
                raise MCPError(INVALID_PARAMS, f"[invalid_input] {names}: is required") from None
            if text.startswith("Unknown prompt"):
                raise MCPError(INVALID_PARAMS, f"[not_found] no prompt named {name!r}") from None
            raise

    async def _handle_list_resources(  # the SDK's hook for resources/list (it has no paging)
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        gate = self.gate
        if gate is None:
            return await super()._handle_list_resources(ctx, params)
        cursor = params.cursor if params is not None else None
        if cursor is not None and not (cursor.isdigit() and int(cursor) <= bounds.MAX_OFFSET):
            raise MCPError(INVALID_PARAMS, "[invalid_input] cursor: not one this server gave")
        offset = int(cursor or 0)

        try:
            docs = await gate.run(
                "list_resources",
                lambda v: v.list_documents(limit=RESOURCE_PAGE + 1, offset=offset),
                offset=offset,
            )
        except Exception as exc:
            raise MCPError(INVALID_PARAMS, tool_text(exc)) from None
        more = len(docs) > RESOURCE_PAGE
        resources = [
            Resource(
                uri=resource_uri(d.id),
                name=d.id,
                title=d.title,
                description=d.summary or None,
                mime_type="text/markdown",
            )
            for d in docs[:RESOURCE_PAGE]
        ]
        return ListResourcesResult(
            resources=resources, next_cursor=str(offset + RESOURCE_PAGE) if more else None
        )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(tool_text(cause)) from cause


def build_server(
    kb: KnowledgeBase,
    name: str = "groundkb",
    *,
    principal: Callable[[], Principal] | None = None,
    auth: tuple[TokenVerifier, AuthSettings] | None = None,
    aggregator: Aggregator | None = None,
) -> MCPServer:
    """An MCP server exposing ``kb``; the caller owns ``kb`` and closes it.

    ``principal`` says who the current request is (default: the configured local user,
    as on stdio, read at each call so a reload applies); ``auth`` makes the HTTP endpoint
    a protected resource (``serve/identity.py``); ``aggregator`` adds the resources of
    remote knowledge servers to the RAG tools (``federation/``).
    """
    verifier, auth_settings = auth if auth is not None else (None, None)
    server = _Server(
        name,
        instructions=INSTRUCTIONS,
        version=__version__,
        token_verifier=verifier,
        auth=auth_settings,
    )
    gate = Gate(kb, "mcp", principal or (lambda: local_principal(kb.settings)))
    server.kb, server.gate = kb, gate
    mcp: MCPServer = server

    structured = kb.settings.mcp_structured_output

    def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
        """Register a read-only tool; its description is the docstring, dedented; its
        result sent as ``mcp_output.py`` says."""
        return output_tool(
            mcp,
            structured=structured,
            annotations=READ_ONLY,
            description=inspect.cleandoc(fn.__doc__ or ""),
        )(fn)

    def _compact(data: dict[str, Any]) -> CallToolResult:
        return tool_result(data, structured)

    async def _call(
        fn: Callable[[KnowledgeBase], T],
        operation: str,
        sources: Collection[str] = (),
        **details: Any,
    ) -> T:
        """Run a core call on the caller's view in a worker thread, audited; map every
        error to a tool error."""
        try:
            return await gate.run(operation, fn, sources=sources, **details)
        except Exception as exc:
            raise _mapped(kb, operation)(exc) from None

    @tool
    async def search_knowledge(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=bounds.MAX_QUERY_INPUT_CHARS,
                description="What to find, e.g. 'list users command'. Searched by its "
                f"first {bounds.MAX_QUERY_CHARS} characters.",
            ),
        ],
        type: Annotated[DocTypeFilter, Field(description="Only this type of entry.")] = "all",
        category: Annotated[
            str | None,
            Field(max_length=bounds.MAX_FILTER_CHARS, description="Only this category."),
        ] = None,
        source: Annotated[
            str | None, Field(max_length=bounds.MAX_FILTER_CHARS, description="Only this source.")
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=bounds.MCP_SEARCH_LIMIT, description="Most hits to return.")
        ] = 5,
        max_tokens: MaxTokens = None,
        explain: Annotated[
            bool, Field(description="Also return how each hit matched and ranked.")
        ] = False,
    ) -> Annotated[CallToolResult, McpSearchOut]:
        """Search the knowledge base for commands, API endpoints, guides and docs.

        ALWAYS use this before answering how to do something. Returns a verdict
        (answer / clarify / no_match), hits with evidence and citations, and suggestions.
        """
        cap = max_tokens or kb.settings.tool_max_tokens

        def run(v: KnowledgeBase) -> dict[str, Any]:
            found = v.search(query, type=type, category=category, source=source, limit=limit)
            data = compact_search(search_out(found).model_dump(mode="json"), explain, query)
            return fit_search(data, cap)

        return _compact(
            await _call(run, "search_knowledge", [source] if source else (), query=query)
        )

    @tool
    async def get_document(
        id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=bounds.MAX_ID_CHARS,
                description="Document id from a search hit (a chunk id works too).",
            ),
        ],
        max_tokens: MaxTokens = None,
        offset: Annotated[
            int,
            Field(
                ge=0,
                le=bounds.MAX_OFFSET,
                description="Read the content from here (a next_offset).",
            ),
        ] = 0,
    ) -> Annotated[CallToolResult, DocumentOut]:
        """Get the full text of one document (page, entry, command or endpoint) by id.

        Long content is cut to max_tokens; read on with offset = next_offset.
        """
        cap = max_tokens or kb.settings.tool_max_tokens

        def run(v: KnowledgeBase) -> dict[str, Any]:
            doc = document_out(v.get(id))
            return fit_document(doc.model_dump(mode="json"), cap, offset)

        return _compact(await _call(run, "get_document", doc_id=id))

    @tool
    async def get_command(
        command: Annotated[
            str,
            Field(
                min_length=1,
                max_length=bounds.MAX_NAME_CHARS,
                description="Exact command name, e.g. 'helios gw users list'.",
            ),
        ],
        source: Annotated[
            str | None, Field(max_length=bounds.MAX_FILTER_CHARS, description="Only this source.")
        ] = None,
    ) -> CommandLookupOut:
        """Get one CLI command by its exact name or alias: syntax, options and examples.

        found=false means no such command exists: never run or present a command this
        tool did not return; offer the did-you-mean suggestions instead. alias_of: the
        command this one is an alias of, with its examples.
        """
        found = await _call(
            lambda v: v.lookup_command(command, source=source),
            "get_command",
            [source] if source else (),
            command=command,
        )
        return command_lookup_out(found)

    @tool
    async def list_commands(
        category: Annotated[
            str | None,
            Field(max_length=bounds.MAX_FILTER_CHARS, description="Only this category."),
        ] = None,
        offset: Annotated[
            int, Field(ge=0, le=bounds.MAX_OFFSET, description="From a previous next_offset.")
        ] = 0,
        limit: Annotated[
            int, Field(ge=1, le=bounds.MCP_LIST_LIMIT, description="Commands per page.")
        ] = 50,
    ) -> CommandsOut:
        """List the documented CLI commands, a page at a time."""
        docs, total = await _call(
            lambda v: v.list_commands(category, limit=limit, offset=offset), "list_commands"
        )
        return commands_out(docs, total, offset)

    @tool
    async def get_api_endpoint(
        path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=bounds.MAX_NAME_CHARS,
                description="API path, e.g. '/v1/customers/cus_123'.",
            ),
        ],
        method: Annotated[
            str | None, Field(max_length=20, description="HTTP method, e.g. 'POST'.")
        ] = None,
    ) -> EndpointLookupOut:
        """Look up an API operation by path (exact, template such as /users/123 for
        /users/{id}, or without a version prefix), with its related operations."""

        def lookup(v: KnowledgeBase) -> tuple[Any, Any]:
            found = v.get_api_endpoint(path, method)
            op = v.get(found.endpoints[0].doc_id) if len(found.endpoints) == 1 else None
            return found, op

        found, op = await _call(lookup, "get_api_endpoint", path=path)
        return lookup_out(found, op)

    @tool
    async def find_endpoints(
        resource: Annotated[
            str,
            Field(
                min_length=1,
                max_length=bounds.MAX_NAME_CHARS,
                description="Resource name, e.g. 'location' or 'users'.",
            ),
        ],
        operation: Annotated[
            str | None,
            Field(
                max_length=bounds.MAX_NAME_CHARS,
                description="create, read, list, update, delete, an action like 'cancel', "
                "or a verb for one ('add', 'set up', 'evict').",
            ),
        ] = None,
    ) -> EndpointsOut:
        """Find the API operations on a resource, e.g. ('location', 'create') → POST /locations."""
        found = await _call(
            lambda v: v.find_endpoints(resource, operation), "find_endpoints", resource=resource
        )
        return EndpointsOut(
            resource=resource, operation=operation, endpoints=[endpoint_out(e) for e in found]
        )

    _prompt_tools(mcp, kb, gate)
    register_rag_tools(mcp, kb, gate, aggregator)

    @mcp.resource(
        "kb://docs/{+doc_id}",
        mime_type="text/markdown",
        description="A document of the knowledge base, as Markdown (the resource URI of a "
        "hit or document; `/` in an id is kept, `#`, `?` and `%` are percent-encoded).",
        # a document id is looked up in the index, never used as a file path
        security=ResourceSecurity(exempt_params={"doc_id"}),
    )
    async def document_resource(doc_id: str) -> str:
        try:
            doc = await gate.run("read_resource", lambda v: v.get(doc_id), doc_id=doc_id)
        except Exception as exc:
            err = as_error(exc)
            kb.ops.error("read_resource", err.code)
            if isinstance(err, NotFound):
                raise ResourceNotFoundError(tool_text(err)) from None
            raise ResourceError(tool_text(err)) from None
        return document_text(doc)

    return mcp


def run(
    settings: Settings, *, http: bool = False, host: str = "127.0.0.1", port: int = 8765
) -> None:
    """Serve until interrupted. Logs go to stderr; stdout belongs to the stdio protocol."""
    from .startup import bind, configure_logging, opened, print_banner, warm_in_background

    if http:
        from .http import serve_http

        serve_http(settings, host=host, sock=bind(host, port))
        return
    configure_logging(settings)
    from ..federation import aggregator_for

    with opened(settings) as kb:
        aggregator = aggregator_for(settings)
        urls = [("MCP", "stdio"), ("caller", local_principal(settings).describe())]
        if aggregator is not None:
            urls.append(("registry", ", ".join(str(f) for f in aggregator.registry.files)))
        backfill = kb.ops.start_backfill(kb)
        if backfill is not None:
            urls.append(("embedding", "chunks without vectors are embedded in the background"))
        print_banner(kb, urls=urls)
        warm_in_background(kb)
        try:
            build_server(kb, aggregator=aggregator).run("stdio")
        finally:
            kb.ops.stop_backfill()
