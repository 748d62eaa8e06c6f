"""``groundkb serve --http``: one ASGI app with the REST API, MCP, metrics and the console.

    /               the web console (static files of ``console/``, no build step)
    /api/...        the REST API (``http_routes.py``); OpenAPI at /openapi.json
    /docs           interactive API docs (Swagger UI, served from an installed package)
    /mcp            MCP over streamable HTTP (the same tools as stdio)
    /health         status, counts and the retrieval mode (also /api/health)
    /metrics        Prometheus metrics (``ops/metrics.py``)

Why FastAPI rather than Starlette and pydantic by hand: the REST API's OpenAPI document,
request validation and the bearer-token security scheme come from the same pydantic
models the MCP tools use (``schemas.py``), with no generator of our own to keep right.
FastAPI is Starlette underneath (already here for MCP), so it adds one small package;
it costs about half a second when ``serve --http`` starts and nothing anywhere else:
``import groundkb`` and the CLI never import this module. The docs page's Swagger UI
files come from the ``fastapi-offline`` package, so no page loads anything from a CDN.

One error handler renders every failure (``errors.py``): our code, our status, never a
traceback; invalid parameters are ``400 [invalid_input]``, not FastAPI's 422 with
pydantic's text, and the OpenAPI document says so.

Bound to loopback (the default), the app answers only requests addressed to a loopback
name, like the MCP endpoint (DNS-rebinding protection).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.resources
import logging
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import __version__
from ..access import audit
from ..access.principal import ANONYMOUS, Principal
from ..errors import Forbidden, GroundKBError, NotFound, Unauthorized
from ..ops import Caller
from . import schemas_ops as o
from .errors import as_error, http_body
from .http_routes import RequestContext, context, mode_of, router, settings_context
from .identity import HttpIdentity, http_identity
from .startup import url_host

if TYPE_CHECKING:
    from ..api import KnowledgeBase
    from ..settings import Settings

log = logging.getLogger(__name__)
CONSOLE = Path(__file__).parent / "console"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
UNAUTHENTICATED = Principal("(no valid token)", via="none")
_HOST_NAMES = {"127.0.0.1", "localhost", "[::1]", "::1"}


class LoopbackOnly:
    """Refuse requests whose Host header is not a loopback name (DNS rebinding)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = ""
            for key, value in scope.get("headers", ()):
                if key == b"host":
                    host = value.decode("latin-1")
                    break
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name not in _HOST_NAMES:
                status, body = http_body(
                    Forbidden("this server answers only requests addressed to localhost")
                )
                await JSONResponse(body, status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    kb: KnowledgeBase,
    *,
    host: str = "127.0.0.1",
    overrides: dict[str, Any] | None = None,
    mcp: bool = True,
    base_url: str | None = None,
) -> FastAPI:
    """The whole HTTP app over ``kb`` (the caller owns ``kb`` and closes it).

    ``base_url`` is where clients reach the server (the ``public_url`` setting wins); it
    names the protected resource tokens must be issued for (``identity.py``).
    """
    identity = http_identity(kb.settings, base_url or f"http://{url_host(host)}:8765")
    server = None
    aggregator = None
    if mcp:
        from mcp.server.auth.middleware.auth_context import get_access_token
        from mcp.server.auth.settings import AuthSettings

        from .mcp import build_server

        auth = None
        if identity.verifier is not None:
            issuer = kb.settings.auth_jwt_issuer.strip() or identity.base_url
            auth = (
                identity.verifier,
                AuthSettings(
                    issuer_url=issuer,  # type: ignore[arg-type]
                    resource_server_url=identity.resource,  # type: ignore[arg-type]
                    validate_token_resource=True,
                    required_scopes=[identity.scope] if identity.scope else None,
                ),
            )
        from ..federation import aggregator_for

        aggregator = aggregator_for(kb.settings)
        server = build_server(
            kb,
            principal=lambda: identity.principal(get_access_token()),
            auth=auth,
            aggregator=aggregator,
        )
        mcp_app = server.streamable_http_app(host=host)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        kb.ops.start_backfill(kb)  # embeds chunks without vectors, in the background
        try:
            if server is None:
                yield
                return
            async with server.session_manager.run():
                yield
        finally:
            await anyio.to_thread.run_sync(kb.ops.stop_backfill)

    app = FastAPI(
        title="groundkb",
        version=__version__,
        summary="A grounded knowledge base: search with evidence and a verdict.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.kb = kb
    app.state.identity = identity
    app.state.aggregator = aggregator if mcp else None
    app.state.overrides = dict(overrides or {})
    kb.ops.enable_metrics(kb)
    app.include_router(router)
    _pages(app)
    _error_handlers(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    if server is not None:
        app.router.routes.extend(mcp_app.routes)  # /mcp, with its own host checks
    if identity.verifier is not None:
        # as the SDK's own app does: every request's bearer token checked once (for the
        # resource this server is), the caller kept for the MCP tools and the REST routes
        from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
        from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
        from pydantic import AnyHttpUrl
        from starlette.middleware.authentication import AuthenticationMiddleware

        app.add_middleware(AuthContextMiddleware)
        backend = BearerAuthBackend(
            identity.verifier, resource_server_url=AnyHttpUrl(identity.resource)
        )
        app.add_middleware(AuthenticationMiddleware, backend=backend)
    if host in LOOPBACK:
        app.add_middleware(LoopbackOnly)
    return app


def _pages(app: FastAPI) -> None:
    static = importlib.resources.files("fastapi_offline") / "static"

    @app.get("/", include_in_schema=False)
    async def console() -> FileResponse:
        return FileResponse(CONSOLE / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/console", StaticFiles(directory=CONSOLE), name="console")
    app.mount("/docs-static", StaticFiles(directory=str(static)), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="groundkb API",
            swagger_js_url="/docs-static/swagger-ui-bundle.js",
            swagger_css_url="/docs-static/swagger-ui.css",
            swagger_favicon_url="/docs-static/favicon.png",
        )

    @app.get("/health", tags=["operations"], summary="Status, counts and retrieval mode")
    @app.get("/api/health", tags=["operations"], include_in_schema=False)
    async def health(request: Request) -> o.HealthOut:
        """Counts as the caller sees them; without a valid token, as an anonymous caller
        (so a load balancer needs no token)."""
        try:
            ctx = await anyio.to_thread.run_sync(context, request)
        except Unauthorized:
            kb: KnowledgeBase = request.app.state.kb
            view = await anyio.to_thread.run_sync(kb.reader, ANONYMOUS)
            ctx = RequestContext(view, Caller(shell="rest"), ANONYMOUS, "health")

        def run() -> o.HealthOut:
            st = ctx.kb.stats()
            backfill = ctx.kb.ops.backfill
            embedding = o.EmbeddingOut.model_validate(
                dataclasses.asdict(backfill.state()) if backfill is not None else {}
            )
            return o.HealthOut(
                status="ok",
                documents=st.documents,
                chunks=st.chunks,
                retrieval=mode_of(ctx.kb),
                embedding=embedding if backfill is not None else None,
            )

        return await ctx.run(run)

    @app.get("/api/metrics", tags=["operations"], summary="Recent searches over time")
    async def series(
        request: Request, since_s: Annotated[float, Query(gt=0, le=86_400)] = 3600.0
    ) -> o.SeriesOut:
        """Per time bucket: searches, p50/p95 latency, no-match and clarify rates, errors
        and fallbacks; with a summary over the mode controller's window. With a token
        verifier, for admins (the numbers cover every caller)."""
        ctx = await anyio.to_thread.run_sync(settings_context, request)
        ops = ctx.kb.ops

        def run() -> o.SeriesOut:
            return o.SeriesOut(
                bucket_s=ops.series.bucket_s,
                now=ops.series.clock(),
                summary=ops.series.summary(ops.mode.window_s),
                points=o.points_out(ops.series.points(since_s)),
                retrieval=mode_of(ctx.kb),
            )

        return await ctx.run(run)

    @app.get("/metrics", tags=["operations"], summary="Prometheus metrics", response_class=Response)
    async def metrics(request: Request) -> Response:
        """With a token verifier, for admins (the admin token suits a scraper): the
        counts cover the whole index, sources callers may not read included."""
        await anyio.to_thread.run_sync(settings_context, request)
        kb: KnowledgeBase = request.app.state.kb
        assert kb.ops.metrics is not None
        body, content_type = await anyio.to_thread.run_sync(kb.ops.metrics.exposition)
        return Response(body, media_type=content_type)


def _error_handlers(app: FastAPI) -> None:
    def respond(request: Request, exc: BaseException) -> JSONResponse:
        err = as_error(exc)
        route = request.scope.get("route")
        operation = getattr(route, "name", "") or "http"
        request.app.state.kb.ops.error(operation, err.code)
        if isinstance(err, Unauthorized | Forbidden):  # refused before any read: audited here
            query = f"?{request.url.query}" if request.url.query else ""
            audit.record(
                operation,
                UNAUTHENTICATED if isinstance(err, Unauthorized) else ANONYMOUS,
                shell="rest",
                allowed=frozenset(),
                outcome=err.code,
                request=f"{request.method} {request.url.path}{query}",
            )
        status, body = http_body(err)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse(body, status_code=status, headers=headers)

    async def ours(request: Request, exc: Exception) -> JSONResponse:
        return respond(request, exc)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404:
            return respond(request, NotFound(f"no route {request.url.path}"))
        body = {"error": {"code": _HTTP_CODES.get(exc.status_code, "http_error"),
                          "message": str(exc.detail)}}  # fmt: skip
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    app.add_exception_handler(GroundKBError, ours)
    app.add_exception_handler(RequestValidationError, ours)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, ours)


_HTTP_CODES = {405: "method_not_allowed", 406: "not_acceptable", 415: "unsupported_media_type"}


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, saying what we answer to invalid input (400, not 422)."""
    if app.openapi_schema:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    doc = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description='REST API of groundkb. Errors are `{"error": {"code", "message"}}` '
        "(and `suggestions`: a command that does not exist, the names it may have meant); "
        "admin routes need `Authorization: Bearer <admin_token>`. MCP is served at `/mcp`.",
        routes=app.routes,
    )
    for path in doc.get("paths", {}).values():
        for op in path.values():
            responses = op.get("responses", {})
            if responses.pop("422", None) is not None and "400" not in responses:
                responses["400"] = {
                    "description": "Invalid input ([invalid_input] ...).",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}
                    },
                }
    schemas = doc.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    app.openapi_schema = doc
    return doc


def serve_http(settings: Settings, *, host: str, sock: socket.socket) -> None:
    """Print the banner and serve on ``sock`` (see ``startup.bind``) until interrupted."""
    import uvicorn

    from .startup import configure_logging, opened, print_banner, warm_in_background

    configure_logging(settings)
    try:
        with opened(settings) as kb:
            base = f"http://{url_host(host)}:{sock.getsockname()[1]}"
            app = create_app(kb, host=host, overrides=_overrides(settings), base_url=base)
            admin = "on (Bearer admin_token)" if settings.admin_token else "off (no admin_token)"
            identity: HttpIdentity = app.state.identity
            callers = (
                f"bearer tokens ({identity.resource})"
                if identity.verifier is not None
                else "anonymous (no token verifier: sources without groups only)"
            )
            urls = [
                ("console", f"{base}/"),
                ("REST API", f"{base}/api  (docs {base}/docs)"),
                ("MCP", f"{base}/mcp"),
                ("metrics", f"{base}/metrics"),
                ("admin", admin),
                ("callers", callers),
                ("audit", settings.audit_log),
            ]
            print_banner(kb, urls)
            warm_in_background(kb)
            config = uvicorn.Config(
                app, log_level=settings.log_level.lower(), access_log=False, lifespan="on"
            )
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _overrides(settings: Settings) -> dict[str, Any]:
    """The values a reload must keep: those the command line gave (db, log level)."""
    return {"db": settings.db, "log_level": settings.log_level}
