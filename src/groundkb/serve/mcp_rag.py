"""The RAG tool contract (reference 003): discover resources, raw results, synthesized
results — for chat applications that aggregate several knowledge servers.

Every result is ``{"results": {...}, "meta_data": {...}}`` with ``contract_version``,
the caller and timings in ``meta_data``. A resource is a source of this knowledge base
(id = the source name) or, with a registry of remote knowledge servers
(``federation/``), a source of one of them (id = ``server/source``).

The ``username`` argument exists because the contract has it; it is never trusted. The
caller is who the transport says (``serve/gate.py``), and ``meta_data.user`` names them.

Errors come back as a tool error whose text starts with the code and whose structured
content is ``{"results": {"error": {"code", "message"}}, "meta_data": ...}``:
``invalid_source`` (no such source, or one the caller may not see: the two look the
same), ``unauthorized_source`` (a low-trust source without a valid ``capability_token``),
``rate_limited``, ``backend_unavailable``, ``invalid_input``. When some requested
sources fail and others do not, the results carry ``source_errors`` beside the hits.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from .. import __version__, bounds
from ..access import audit
from ..access.principal import Principal
from ..access.sources import access_rules, capability_valid, may_see
from ..answer.synthesis import Passage, extractive, passages_from, with_model
from ..answer.tooloutput import compact_json
from ..chatmodel import ModelEndpoint
from ..errors import GroundKBError, StoreError
from ..ops.querylog import redact_credentials
from .schemas import resource_uri

if TYPE_CHECKING:
    from ..api import KnowledgeBase
    from ..federation.aggregator import Aggregator
    from ..models import SearchResult
    from .gate import Gate

CONTRACT_VERSION = "1.0"
PROVIDER = "groundkb"
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
Username = Annotated[
    str,
    Field(max_length=200, description="Ignored: the server knows who is calling."),
]
CapabilityToken = Annotated[
    str | None,
    Field(
        max_length=4096,
        description="Per-call credential for low-trust sources (authMode capability); "
        "used for this call only, never stored or logged.",
    ),
]


class DiscoverFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")
    types: list[str] | None = Field(None, description="Only these sourceTypes.")
    tags: list[str] | None = Field(None, description="Only resources with one of these groups.")
    search: str | None = Field(None, max_length=200, description="Text in the id or name.")
    page: int = Field(1, ge=1, le=10_000)
    page_size: int = Field(50, ge=1, le=500)


class RawFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tags: list[str] | None = Field(None, description="Only documents of these categories.")
    types: list[str] | None = Field(None, description="Only these document types.")
    date_from: str | None = Field(None, description="Not supported: reported as ignored.")
    date_to: str | None = Field(None, description="Not supported: reported as ignored.")
    owners: list[str] | None = Field(None, description="Not supported: reported as ignored.")


class SynthesisParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = Field(None, description="Ignored: the server's configured model.")
    style: str | None = Field(None, max_length=200)
    max_chars: int = Field(800, ge=100, le=20_000)


class ProvidedContext(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hits: list[dict[str, Any]] = Field(default_factory=list, max_length=100)


class RagOut(BaseModel):
    """Every RAG tool's result (reference 003): the results and their meta data."""

    results: dict[str, Any] = Field(description="The tool's results, or {error: {code, message}}.")
    meta_data: dict[str, Any] = Field(
        description="provider, version, contract_version, user, elapsed_ms and more."
    )


class RagError(GroundKBError):
    """An error of the contract, with one of its codes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RateLimit:
    """At most ``per_minute`` calls per user in any 60 seconds (0: no limit)."""

    def __init__(self, per_minute: Callable[[], int]) -> None:
        self._per_minute = per_minute
        self._calls: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, user: str) -> None:
        limit = self._per_minute()
        if limit <= 0:
            return
        now = time.monotonic()
        with self._lock:
            calls = self._calls.setdefault(user, deque())
            while calls and calls[0] <= now - 60:
                calls.popleft()
            if len(calls) >= limit:
                wait = 60 - (now - calls[0])
                raise RagError(
                    "rate_limited", f"more than {limit} calls a minute; retry in {wait:.0f} s"
                )
            calls.append(now)


def _result(
    data: dict[str, Any], meta: dict[str, Any], error: RagError | None = None
) -> CallToolResult:
    body = {"results": data, "meta_data": meta}
    text = compact_json(body)
    if error is not None:
        text = f"[{error.code}] {redact_credentials(error.message)}"
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=body,
        is_error=error is not None,
    )


def register_rag_tools(
    mcp: MCPServer, kb: KnowledgeBase, gate: Gate, aggregator: Aggregator | None = None
) -> None:
    """Register the three RAG tools on ``mcp`` (module doc)."""
    limiter = RateLimit(lambda: kb.settings.rag_rate_per_minute)

    def meta(who: Principal, started: float, **more: Any) -> dict[str, Any]:
        return {
            "provider": PROVIDER,
            "version": __version__,
            "contract_version": CONTRACT_VERSION,
            "user": who.user,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 2),
            **more,
        }

    def fail(exc: BaseException, who: Principal, started: float) -> CallToolResult:
        if isinstance(exc, RagError):
            err = exc
        elif isinstance(exc, StoreError):
            err = RagError("backend_unavailable", exc.message)
        elif isinstance(exc, GroundKBError):
            err = RagError(exc.code, exc.message)
        else:
            err = RagError("backend_unavailable", "the knowledge base could not answer")
        message = redact_credentials(err.message)
        return _result({"error": {"code": err.code, "message": message}}, meta(who, started), err)

    def local_resources(who: Principal) -> list[dict[str, Any]]:
        infos = kb.sources()
        rules = access_rules(infos, kb.settings)
        off = kb.disabled_sources()
        out = []
        for info in infos:
            rule = rules[info.source.name]
            if info.source.name in off or not may_see(who, rule, kb.settings):
                continue
            out.append(
                {
                    "id": info.source.name,
                    "name": info.source.name,
                    "sourceType": info.source.kind,
                    "authRequired": rule.auth_mode != "none",
                    "authMode": rule.auth_mode,
                    "groups": list(rule.groups),
                    "scopes": ["read"],
                    "lastIndexed": info.updated_at,
                    "counts": {"docs": info.documents, "chunks": info.chunks},
                }
            )
        return out

    def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
        doc = inspect.cleandoc(fn.__doc__ or "")
        return mcp.tool(annotations=READ_ONLY, description=doc)(fn)

    @tool
    async def rag_discover_resources(
        username: Username = "", filters: DiscoverFilters | None = None
    ) -> Annotated[CallToolResult, RagOut]:
        """List the knowledge resources (sources) you may search, with their auth mode
        and counts. Pass their ids as `sources` to rag_get_raw_results."""
        started = time.perf_counter()
        who = gate.principal()
        f = filters or DiscoverFilters.model_validate({})
        try:
            limiter.check(who.user)
            resources = await gate.run(
                "rag_discover_resources", lambda _v: local_resources(who), principal=who
            )
            errors: list[dict[str, Any]] = []
            if aggregator is not None:
                remote, errors = await aggregator.discover(who)
                resources += remote
        except Exception as exc:
            return fail(exc, who, started)
        if f.types:
            resources = [r for r in resources if r["sourceType"] in f.types]
        if f.tags:
            resources = [r for r in resources if set(r.get("groups") or ()) & set(f.tags)]
        if f.search:
            needle = f.search.lower()
            resources = [r for r in resources if needle in f"{r['id']} {r['name']}".lower()]
        total = len(resources)
        page = resources[(f.page - 1) * f.page_size : f.page * f.page_size]
        data: dict[str, Any] = {
            "resources": page,
            "paging": {"page": f.page, "page_size": f.page_size, "total": total},
        }
        if errors:
            data["server_errors"] = errors
        return _result(data, meta(who, started))

    def open_sources(
        who: Principal, wanted: Sequence[str], credential: str | None
    ) -> tuple[Principal, list[str], list[dict[str, str]]]:
        """The caller with the capability sources ``credential`` opens, the local sources
        to search, and an error for each source that cannot be searched."""
        infos = kb.sources()
        rules = access_rules(infos, kb.settings)
        off = kb.disabled_sources()
        ok: list[str] = []
        errors: list[dict[str, str]] = []
        unlocked: set[str] = set()
        for name in wanted:
            rule = rules.get(name)
            if rule is None or name in off or not may_see(who, rule, kb.settings):
                errors.append(_source_error(name, "invalid_source", f"no source {name!r}"))
            elif rule.capability_env and not who.operator:
                if credential and capability_valid(rule, credential):
                    unlocked.add(name)
                    ok.append(name)
                else:
                    errors.append(
                        _source_error(
                            name,
                            "unauthorized_source",
                            f"source {name!r} needs a valid capability_token",
                        )
                    )
            else:
                ok.append(name)
        opened = dataclasses.replace(who, unlocked=who.unlocked | unlocked) if unlocked else who
        return opened, ok, errors

    def hits_out(view: KnowledgeBase, found: SearchResult) -> list[dict[str, Any]]:
        chunks = {
            f"{c.doc_id}#{c.index}": c.text
            for c in view.visible.chunks(list(dict.fromkeys(h.doc_id for h in found.hits)))
        }
        return [
            {
                "id": h.chunk_id,
                "score": h.score,
                "snippet": h.snippet,
                "chunk": chunks.get(h.chunk_id, ""),
                "title": h.title,
                "uri": resource_uri(h.doc_id),
                "resourceId": h.source,
                "sourceId": h.doc_id,
                "provenance": {
                    "header_path": h.header_path,
                    "type": h.type,
                    "category": h.category,
                    "citation": h.citation,
                },
            }
            for h in found.hits
        ]

    async def raw(
        who: Principal,
        query: str,
        sources: list[str],
        top_k: int,
        filters: RawFilters | None,
        credential: str | None,
        action: str,
    ) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, str]], dict[str, Any]]:
        """(hits, verdict, source errors, stats) over local and remote sources."""
        wanted = list(dict.fromkeys(s.strip() for s in sources if s.strip()))
        remote_ids = [s for s in wanted if aggregator is not None and aggregator.owns(s)]
        local_ids = [s for s in wanted if s not in remote_ids]
        if not wanted:  # no sources named: every local source the caller may read
            local_ids = [r["id"] for r in local_resources(who) if r["authMode"] != "capability"]
        opened, ok, errors = open_sources(who, local_ids, credential)
        f = filters or RawFilters.model_validate({})
        verdict: dict[str, Any] = {}
        hits: list[dict[str, Any]] = []
        if ok:

            def search(view: KnowledgeBase) -> tuple[list[dict[str, Any]], dict[str, Any]]:
                found = view.search(
                    query, source=ok, limit=top_k, category=f.tags or None, type=f.types or None
                )
                v = found.verdict
                options = [{"doc_id": o.doc_id, "title": o.title} for o in v.options]
                kind = {"kind": v.kind, "reason": v.reason, "message": v.message}
                return hits_out(view, found), {**kind, "options": options}

            hits, verdict = await gate.run(
                action, search, principal=opened, sources=local_ids, query=query,
                remote=remote_ids,
            )  # fmt: skip
        if remote_ids and aggregator is not None:
            remote_lists, remote_errors = await aggregator.search(who, query, remote_ids, top_k)
            errors += remote_errors
            refused = [e["resourceId"] for e in remote_errors if e["code"] == "invalid_source"]
            failed = [e for e in remote_errors if e["code"] != "invalid_source"]
            audit.record(
                f"{action}:remote",
                who,
                shell=gate.shell,
                allowed=[r for r in remote_ids if r not in refused],
                denied=refused,
                outcome=failed[0]["code"] if failed else "ok",
                query=query,
            )
            from ..federation.aggregator import fuse

            # one reciprocal rank fusion over this server's list and each remote's
            hits = fuse([hits, *remote_lists], top_k)
        if not ok and not (remote_ids and hits) and errors:
            first = errors[0]
            codes = {e["code"] for e in errors}
            code = first["code"] if len(codes) == 1 else "invalid_source"
            raise RagError(code, "; ".join(e["message"] for e in errors[:5]))
        ignored = [k for k in ("date_from", "date_to", "owners") if getattr(f, k)]
        stats: dict[str, Any] = {"total_found": len(hits), "top_k": top_k}
        if ignored:
            stats["ignored_filters"] = ignored
        return hits, verdict, errors, stats

    @tool
    async def rag_get_raw_results(
        query: Annotated[str, Field(min_length=1, max_length=bounds.MAX_QUERY_INPUT_CHARS)],
        sources: Annotated[
            list[str],
            Field(max_length=100, description="Resource ids from rag_discover_resources."),
        ],
        username: Username = "",
        top_k: Annotated[int, Field(ge=1, le=50)] = 8,
        filters: RawFilters | None = None,
        ranking: Annotated[
            dict[str, Any] | None, Field(description="Ignored: the server's own ranking.")
        ] = None,
        capability_token: CapabilityToken = None,
    ) -> Annotated[CallToolResult, RagOut]:
        """Search the given resources: ranked passages with snippet, full chunk text,
        title, uri and provenance, plus this server's verdict (answer / clarify /
        no_match)."""
        started = time.perf_counter()
        who = gate.principal()
        try:
            limiter.check(who.user)
            hits, verdict, errors, stats = await raw(
                who, query, sources, top_k, filters, capability_token, "rag_get_raw_results"
            )
        except Exception as exc:
            return fail(exc, who, started)
        stats["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 2)
        data: dict[str, Any] = {"hits": hits, "verdict": verdict, "stats": stats}
        if errors:
            data["source_errors"] = errors
        return _result(data, meta(who, started))

    @tool
    async def rag_get_synthesized_results(
        query: Annotated[str, Field(min_length=1, max_length=bounds.MAX_QUERY_INPUT_CHARS)],
        sources: Annotated[list[str], Field(max_length=100)],
        username: Username = "",
        top_k: Annotated[int | None, Field(ge=1, le=50)] = None,
        synthesis_params: SynthesisParams | None = None,
        provided_context: ProvidedContext | None = None,
        capability_token: CapabilityToken = None,
    ) -> Annotated[CallToolResult, RagOut]:
        """An answer to the query from the given resources, citing only passages found
        (extractive without a configured language model), with its citations."""
        started = time.perf_counter()
        who = gate.principal()
        params = synthesis_params or SynthesisParams.model_validate({})
        try:
            limiter.check(who.user)
            verdict: dict[str, Any] = {}
            errors: list[dict[str, str]] = []
            if provided_context is not None and provided_context.hits:
                hits = provided_context.hits
            else:
                hits, verdict, errors, _ = await raw(
                    who, query, sources, top_k or 5, None, capability_token,
                    "rag_get_synthesized_results",
                )  # fmt: skip
            passages = passages_from(hits)
            if verdict.get("kind") == "no_match" or not passages:
                answer = "The knowledge base has nothing that answers this."
                synthesis = None
            else:
                synthesis = await _synthesize(kb, query, passages, params)
                answer = synthesis.answer or "The passages found do not answer this."
        except Exception as exc:
            return fail(exc, who, started)
        citations = []
        if synthesis is not None:
            for n in synthesis.cited:
                p = passages[n]
                citations.append(
                    {"n": n + 1, "uri": p.uri, "title": p.title, "resourceId": p.resource_id}
                )
        data: dict[str, Any] = {
            "answer": answer,
            "citations": citations,
            "limits": {
                "truncated": bool(synthesis and synthesis.truncated),
                "reason": synthesis.reason if synthesis else "no_match",
            },
        }
        if verdict:
            data["verdict"] = verdict
        if errors:
            data["source_errors"] = errors
        model = synthesis.model if synthesis else "none"
        usage = synthesis.usage if synthesis else {}
        return _result(data, meta(who, started, model=model, tokens=usage))


async def _synthesize(
    kb: KnowledgeBase, query: str, passages: list[Passage], params: SynthesisParams
) -> Any:
    import anyio

    s = kb.settings
    if s.synthesis_url.strip() and s.synthesis_model.strip():
        endpoint = ModelEndpoint(
            s.synthesis_url.strip(), s.synthesis_model.strip(), s.synthesis_key_env
        )
        return await anyio.to_thread.run_sync(
            lambda: with_model(
                query,
                passages,
                endpoint,
                params.max_chars,
                params.style or "",
                kb.analyzer.stop_words,
            )
        )
    return extractive(query, passages, params.max_chars, kb.analyzer.stop_words)


def _source_error(name: str, code: str, message: str) -> dict[str, str]:
    return {"resourceId": name, "code": code, "message": message}


__all__ = ["CONTRACT_VERSION", "register_rag_tools"]
