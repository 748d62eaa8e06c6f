"""The REST API's routes: thin calls into one KnowledgeBase, shared schemas out.

Every route takes a :class:`RequestContext` (the knowledge base and who is calling),
runs one core call in a worker thread (the core is synchronous) and returns a model of
``schemas.py``. Errors are raised as they are and rendered by the app's one error
handler (``http.py``).

Who calls is decided by the server (``identity.py``): with a token verifier configured
every route but health needs ``Authorization: Bearer <token>``, and a caller reads only
the sources their groups allow (``KnowledgeBase.reader``); without one, callers are
anonymous and read the sources that have no groups. Admin routes (sync, delete,
enable/disable a source, reload, the keyword kill switch) need the ``admin_token`` or a
caller in the ``admin_group``; with neither configured they are refused (403). Every
request is one line of the audit log.
"""

from __future__ import annotations

import dataclasses
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.security import HTTPBearer

from .. import bounds
from ..access import audit
from ..access.principal import Principal
from ..access.sources import access_rules
from ..errors import Forbidden, GroundKBError, NotFound, Unauthorized
from ..ops import Caller, calling
from ..settings import SECRET_SETTINGS, SETTINGS, load_settings
from . import schemas as s
from . import schemas_ops as o
from .identity import HttpIdentity
from .startup import retrieval_state

if TYPE_CHECKING:
    from ..api import KnowledgeBase

T = TypeVar("T")
_bearer = HTTPBearer(
    auto_error=False,
    description="A caller's token (with a token verifier), or the server's admin_token.",
)
_TOKEN_PARAMS = {"access_token", "token", "bearer", "api_key", "apikey", "auth"}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": o.ErrorBody, "description": "Invalid input ([invalid_input] ...)."},
    404: {"model": o.ErrorBody, "description": "Not found."},
}
ADMIN_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    401: {"model": o.ErrorBody, "description": "No or a wrong admin token."},
    403: {"model": o.ErrorBody, "description": "Admin actions are off (no admin_token)."},
}


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One request: the caller, and the knowledge base as that caller may read it
    (``kb``, their view; the operator's whole index for admin routes)."""

    kb: KnowledgeBase
    caller: Caller
    principal: Principal
    action: str = "http"
    request: str = ""  # method, path and query, for the audit line (redacted there)
    admin: bool = False

    async def run(self, fn: Callable[[], T]) -> T:
        """Run a core call in a worker thread, as this caller, audited."""
        return await anyio.to_thread.run_sync(self.call, fn)

    def call(self, fn: Callable[[], T]) -> T:
        outcome = "ok"
        try:
            with calling(self.caller):
                return fn()
        except BaseException as exc:
            outcome = exc.code if isinstance(exc, GroundKBError) else "internal_error"
            raise
        finally:
            audit.record(
                self.action,
                self.principal,
                shell="rest",
                allowed=self.kb.readable,
                outcome=outcome,
                request=self.request,
            )


def caller_of(request: Request) -> Principal:
    """Who sent ``request``: its bearer token checked by the server's verifier
    (``identity.py``); Unauthorized when a verifier is configured and the token is
    missing or not valid here."""
    identity: HttpIdentity = request.app.state.identity
    in_url = any(k.lower() in _TOKEN_PARAMS for k in request.query_params)
    verified = getattr(request.scope.get("user"), "access_token", None)  # the middleware's
    if verified is not None and not in_url:
        return identity.principal(verified)
    return identity.from_header(request.headers.get("authorization"), in_url)


def _describe(request: Request) -> tuple[str, str]:
    route = request.scope.get("route")
    query = f"?{request.url.query}" if request.url.query else ""
    return getattr(route, "name", "") or "http", f"{request.method} {request.url.path}{query}"


def context(request: Request) -> RequestContext:
    kb: KnowledgeBase = request.app.state.kb
    admin = _admin_token(request, kb)
    principal = admin or caller_of(request)
    action, line = _describe(request)
    return RequestContext(
        kb.reader(principal), Caller(shell="rest", user=principal.user), principal, action, line
    )


def admin_context(request: Request) -> RequestContext:
    """The operator's context for admin routes: the ``admin_token``, or (with a token
    verifier) a caller in the ``admin_group``."""
    kb: KnowledgeBase = request.app.state.kb
    identity: HttpIdentity = request.app.state.identity
    action, line = _describe(request)
    given = (request.headers.get("authorization") or "").partition(" ")[2]
    token = kb.settings.admin_token
    if admin := _admin_token(request, kb):
        return RequestContext(kb, Caller(shell="rest", user="admin"), admin, action, line, True)
    if identity.verifier is not None and given:
        principal = caller_of(request)
        if kb.settings.admin_group in principal.groups:
            admin = dataclasses.replace(principal, operator=True)
            return RequestContext(
                kb, Caller(shell="rest", user=principal.user), admin, action, line, True
            )
        raise Forbidden(f"admin actions need the {kb.settings.admin_group!r} group")
    if not token and identity.verifier is None:
        raise Forbidden(
            "admin actions are off: set admin_token (or GROUNDKB_ADMIN_TOKEN) and restart"
        )
    raise Unauthorized("admin actions need the header Authorization: Bearer <admin token>")


def _admin_token(request: Request, kb: KnowledgeBase) -> Principal | None:
    """The operator, when the request carries the configured ``admin_token``."""
    scheme, _, given = (request.headers.get("authorization") or "").partition(" ")
    token = kb.settings.admin_token
    if token and scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode()):
        return Principal("admin", frozenset({kb.settings.admin_group}), operator=True, via="admin")
    return None


def settings_context(request: Request) -> RequestContext:
    """Settings name files and URLs of the deployment: with a token verifier, for
    admins only."""
    identity: HttpIdentity = request.app.state.identity
    return admin_context(request) if identity.verifier is not None else context(request)


Ctx = Annotated[RequestContext, Depends(context)]
Admin = Annotated[RequestContext, Depends(admin_context)]
SettingsCtx = Annotated[RequestContext, Depends(settings_context)]
SourceName = Annotated[str, Path(min_length=1, max_length=200, description="Source name.")]
# the bearer scheme in the OpenAPI document (the contexts above read the header)
router = APIRouter(prefix="/api", responses=ERRORS, dependencies=[Depends(_bearer)])


# ------------------------------------------------------------------ search
@router.get("/search", tags=["search"], summary="Search with evidence and a verdict")
async def search_get(ctx: Ctx, req: Annotated[s.SearchRequest, Query()]) -> s.SearchOut:
    """The verdict (answer, clarify, no_match) with its reason and options, and every
    hit's evidence: snippet, matched terms, header path, per-retriever ranks, citation."""
    return await _search(ctx, req)


@router.post("/search", tags=["search"], summary="Search (the same, with a JSON body)")
async def search_post(ctx: Ctx, req: s.SearchRequest) -> s.SearchOut:
    return await _search(ctx, req)


async def _search(ctx: RequestContext, req: s.SearchRequest) -> s.SearchOut:
    def run() -> s.SearchOut:
        found = ctx.kb.search(
            req.query,
            type=req.type,
            category=req.category,
            source=req.source,
            limit=req.limit,
            mode=req.mode,
        )
        return s.search_out(found)

    return await ctx.run(run)


# --------------------------------------------------------------- documents
@router.get("/documents", tags=["documents"], summary="List documents (without content)")
async def list_documents(
    ctx: Ctx,
    type: Annotated[str | None, Query(description="Only these types (comma list).")] = None,
    category: Annotated[str | None, Query(description="Only these categories.")] = None,
    source: Annotated[str | None, Query(description="Only these sources.")] = None,
    limit: Annotated[int, Query(ge=bounds.LIST_LIMIT[0], le=bounds.LIST_LIMIT[1])] = 100,
    offset: Annotated[int, Query(ge=0, le=bounds.MAX_OFFSET)] = 0,
) -> s.DocumentsOut:
    docs = await ctx.run(
        lambda: ctx.kb.list_documents(
            type=type, category=category, source=source, limit=limit, offset=offset
        )
    )
    summaries = [s.doc_summary_out(d) for d in docs]
    return s.DocumentsOut(offset=offset, documents=summaries)


@router.get("/documents/{doc_id:path}", tags=["documents"], summary="Get one document")
async def get_document(
    ctx: Ctx,
    doc_id: Annotated[str, Path(description="Document id (a chunk id works too).")],
    max_tokens: Annotated[int | None, Query(ge=256, le=1_000_000)] = None,
    offset: Annotated[
        int, Query(ge=0, le=bounds.MAX_OFFSET, description="Read the content from here.")
    ] = 0,
) -> s.DocumentOut:
    """The whole document; with ``max_tokens``, its content cut to fit (read on with
    ``offset = next_offset``)."""

    def run() -> s.DocumentOut:
        doc = s.document_out(ctx.kb.get(doc_id))
        if max_tokens is None and not offset:
            return doc
        from ..answer.tooloutput import fit_document

        cap = max_tokens or 10**9
        return s.DocumentOut.model_validate(fit_document(doc.model_dump(), cap, offset))

    return await ctx.run(run)


# ------------------------------------------------------- commands and APIs
@router.get("/commands", tags=["commands"], summary="List CLI commands, a page at a time")
async def list_commands(
    ctx: Ctx,
    category: Annotated[str | None, Query()] = None,
    offset: Annotated[int, Query(ge=0, le=bounds.MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=bounds.LIST_LIMIT[0], le=bounds.LIST_LIMIT[1])] = 50,
) -> s.CommandsOut:
    docs, total = await ctx.run(lambda: ctx.kb.list_commands(category, limit=limit, offset=offset))
    return s.commands_out(docs, total, offset)


@router.get("/commands/{name:path}", tags=["commands"], summary="One command by exact name")
async def get_command(
    ctx: Ctx, name: Annotated[str, Path(description="e.g. 'helios gw users list'.")]
) -> s.DocumentOut:
    """Exact name or alias only; anything else is 404 with did-you-mean names in the
    error's ``suggestions``."""
    return s.document_out(await ctx.run(lambda: ctx.kb.get_command(name)))


@router.get("/endpoint", tags=["apis"], summary="One API operation by path")
async def get_endpoint(
    ctx: Ctx,
    path: Annotated[
        str,
        Query(
            min_length=1, max_length=bounds.MAX_NAME_CHARS, description="e.g. /v1/customers/cus_123"
        ),
    ],
    method: Annotated[
        str | None, Query(max_length=20, description="HTTP method, e.g. POST.")
    ] = None,
) -> s.EndpointLookupOut:
    """Exact path, a template (/users/123 for /users/{id}) or without a version prefix,
    with the operations on the same resource, its parents and children."""

    def run() -> s.EndpointLookupOut:
        found = ctx.kb.get_api_endpoint(path, method)
        op = ctx.kb.get(found.endpoints[0].doc_id) if len(found.endpoints) == 1 else None
        return s.lookup_out(found, op)

    return await ctx.run(run)


@router.get("/endpoints", tags=["apis"], summary="API operations on a resource")
async def find_endpoints(
    ctx: Ctx,
    resource: Annotated[
        str,
        Query(min_length=1, max_length=bounds.MAX_NAME_CHARS, description="e.g. location, users"),
    ],
    operation: Annotated[
        str | None,
        Query(
            max_length=bounds.MAX_NAME_CHARS,
            description="create, read, list, update, delete, or a verb.",
        ),
    ] = None,
) -> s.EndpointsOut:
    found = await ctx.run(lambda: ctx.kb.find_endpoints(resource, operation))
    return s.EndpointsOut(
        resource=resource, operation=operation, endpoints=[s.endpoint_out(e) for e in found]
    )


# ----------------------------------------------------------------- prompts
@router.get("/prompts/templates", tags=["prompts"], summary="Prompt templates")
async def prompt_templates(ctx: Ctx) -> s.TemplatesOut:
    def run() -> s.TemplatesOut:
        from ..answer import load_registry

        registry = load_registry(ctx.kb.settings.prompt_templates)
        return s.templates_out(registry.list(), registry.problems)

    return await ctx.run(run)


@router.post("/prompts", tags=["prompts"], summary="Build a knowledge-aware prompt")
async def build_prompt(ctx: Ctx, req: s.PromptRequest) -> s.PromptOut:
    """System and user prompt with the knowledge found for the question, each part
    within its token budget, at a grounding level; lists every id included."""

    def run() -> s.PromptOut:
        built = ctx.kb.build_prompt(
            req.question,
            template=req.template,
            grounding=req.grounding,
            format=req.format,
            budget=req.part_budgets or req.budget,
            state=req.state,
            messages=[m.model_dump() for m in req.messages],
            instructions=req.instructions,
            type=req.type,
            category=req.category,
            source=req.source,
        )
        return s.prompt_out(built)

    return await ctx.run(run)


# ------------------------------------------------------ sources and settings
@router.get("/sources", tags=["sources"], summary="Sources with counts and state")
async def sources(ctx: Ctx) -> o.SourcesOut:
    def run() -> o.SourcesOut:
        off = ctx.kb.disabled_sources()
        last = ctx.kb.ops.last_ingest
        infos = ctx.kb.sources()
        rules = access_rules(infos, ctx.kb.settings)
        operator = ctx.kb.readable is None
        return o.SourcesOut(
            sources=[
                o.source_out(
                    i,
                    i.source.name not in off,
                    last.get(i.source.name),
                    rules[i.source.name].groups,
                    location=operator,
                )
                for i in infos
            ]
        )

    return await ctx.run(run)


@router.get("/whoami", tags=["sources"], summary="Who the server says you are")
async def whoami(ctx: Ctx) -> dict[str, Any]:
    """The caller this request runs as (from its bearer token, or anonymous) and the
    sources it may read."""
    who = ctx.principal
    names = await ctx.run(lambda: [i.source.name for i in ctx.kb.sources()])
    return {"user": who.user, "groups": sorted(who.groups), "via": who.via, "sources": names}


@router.get("/stats", tags=["sources"], summary="Index size and counts")
async def stats(ctx: Ctx) -> o.StatsOut:
    return o.stats_out(await ctx.run(ctx.kb.stats))


@router.get("/settings", tags=["operations"], summary="The effective settings (read-only)")
async def settings(ctx: SettingsCtx) -> o.SettingsOut:
    """Every setting with its value and default; secrets show only whether they are set."""
    current = ctx.kb.settings
    out = []
    for spec in SETTINGS:
        value: Any = getattr(current, spec.name)
        if spec.name in SECRET_SETTINGS:
            value = "(set)" if value else ""
        out.append(
            o.SettingOut(
                name=spec.name,
                value=value,
                default=spec.default,
                help=spec.help,
                secret=spec.secret,
            )
        )
    return o.SettingsOut(config_path=current.config_path, settings=out)


# ------------------------------------------------------------------- admin
@router.post(
    "/sources/{name}/sync",
    tags=["admin"],
    summary="Re-ingest a source",
    responses=ADMIN_ERRORS,
)
async def sync_source(ctx: Admin, name: SourceName) -> o.IngestReportOut:
    """From its ``[[sources]]`` table in groundkb.toml, else from the path it was last
    ingested from. Answers when done, with the ingest report."""
    return o.report_out(await ctx.run(lambda: ctx.kb.refresh_source(name)))


@router.post("/sources/{name}/enable", tags=["admin"], responses=ADMIN_ERRORS)
async def enable_source(ctx: Admin, name: SourceName) -> o.ChangedOut:
    """Searches, look-ups and listings see the source again."""
    changed = await ctx.run(lambda: ctx.kb.set_source_enabled(name, True))
    return o.ChangedOut(source=name, enabled=True, changed=changed)


@router.post("/sources/{name}/disable", tags=["admin"], responses=ADMIN_ERRORS)
async def disable_source(ctx: Admin, name: SourceName) -> o.ChangedOut:
    """Hide the source from searches, look-ups and listings; its index is kept."""
    changed = await ctx.run(lambda: ctx.kb.set_source_enabled(name, False))
    return o.ChangedOut(source=name, enabled=False, changed=changed)


@router.delete("/sources/{name}", tags=["admin"], responses=ADMIN_ERRORS)
async def delete_source(ctx: Admin, name: SourceName) -> o.DeletedOut:
    """Delete the source and every document of it."""
    n = await ctx.run(lambda: ctx.kb.delete(source=name))
    return o.DeletedOut(source=name, deleted_documents=n)


@router.post("/admin/reload", tags=["admin"], responses=ADMIN_ERRORS)
async def reload(ctx: Admin, request: Request) -> o.ReloadOut:
    """Re-read groundkb.toml and the environment (thresholds, synonyms, sources, admin
    token, ...). The index location and the embedder need a restart."""
    overrides: dict[str, Any] = request.app.state.overrides

    def run() -> o.ReloadOut:
        kb = ctx.kb
        before = kb.settings
        fresh = load_settings(
            before.config_path or None, overrides=overrides, trusted=before.config_trusted
        )
        kb.reload(fresh)
        old, new = dataclasses.asdict(before), dataclasses.asdict(fresh)
        changed = [k for k in new if k in {x.name for x in SETTINGS} and old[k] != new[k]]
        return o.ReloadOut(config_path=fresh.config_path, changed=changed)

    return await ctx.run(run)


@router.post("/admin/registry/reload", tags=["admin"], responses=ADMIN_ERRORS)
async def reload_registry(ctx: Admin, request: Request) -> dict[str, list[str]]:
    """Re-read the registry of remote knowledge servers (``rag-mcp.json``) now; it is
    also re-read by itself when the file changes. Returns the servers added, removed and
    changed."""
    aggregator = request.app.state.aggregator
    if aggregator is None:
        raise NotFound("no registry of remote knowledge servers (rag-mcp.json) is in use")
    changes: dict[str, list[str]] = await ctx.run(aggregator.registry.reload)
    return changes


@router.put("/admin/mode", tags=["admin"], responses=ADMIN_ERRORS, summary="Kill switch")
async def set_mode(ctx: Admin, req: o.ModeIn) -> o.ModeOut:
    """``{"keyword": true}`` runs every search by keyword (no embedder) until set back
    to false; the ``retrieval`` setting is the permanent switch."""
    ctx.kb.ops.mode.force(req.keyword)
    return await ctx.run(lambda: mode_of(ctx.kb))


def mode_of(kb: KnowledgeBase) -> o.ModeOut:
    """The retrieval mode searches run in now, and why (for /health, the console)."""
    state = kb.ops.state()
    configured, mode, reason, detail = retrieval_state(kb)
    return o.ModeOut(
        configured=configured,
        mode=mode,
        reason=reason,
        detail=detail,
        retry_in_s=state.retry_in_s,
        window=o.WindowOut.model_validate(state.window),
    )
