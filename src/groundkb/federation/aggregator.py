"""Fan searches out to remote knowledge servers and merge what comes back.

A remote resource's id is ``server/source`` (the registry key, then the id the server's
``rag_discover_resources`` gave). For a caller, only enabled servers whose ``groups``
allow them are used, and only sources whose ``dataSources`` hint allows them; each
remote server then applies its own access control to the credential this server holds
for it (``auth.bearer_env``). The caller's own token is never forwarded; ``username``
is sent as the caller's name, which a groundkb server ignores anyway.

Searches go to the servers holding the selected sources in parallel, each within its
``timeout_s``; hits are merged by reciprocal rank fusion (raw scores of different servers
are not comparable), and a server that fails or times out is reported beside the others'
results as ``backend_unavailable``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from ..access.principal import Principal
from ..ops.querylog import error_text
from .registry import Registry, RemoteServer

log = logging.getLogger(__name__)
RRF_K = 60
DISCOVERY_TTL_S = 30.0


def fuse(lists: Sequence[Sequence[Mapping[str, Any]]], top_k: int) -> list[dict[str, Any]]:
    """Reciprocal rank fusion of ranked hit lists (by ``id``); each hit's ``score``
    becomes its fused score."""
    scores: dict[str, float] = {}
    first: dict[str, Mapping[str, Any]] = {}
    for hits in lists:
        for rank, hit in enumerate(hits, 1):
            key = str(hit.get("id", ""))
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(key, hit)
    order = sorted(scores, key=lambda k: -scores[k])[:top_k]
    return [{**first[k], "score": round(scores[k], 6)} for k in order]


class Aggregator:
    """The remote half of the RAG tools (module doc)."""

    def __init__(self, registry: Registry, admin_group: str = "admin") -> None:
        self.registry = registry
        self.admin_group = admin_group
        self._discovered: dict[str, tuple[float, list[dict[str, Any]]]] = {}

    def servers_for(self, who: Principal) -> list[RemoteServer]:
        return [
            s
            for s in self.registry.servers().values()
            if s.enabled and (who.operator or s.allows(who.groups, self.admin_group))
        ]

    def owns(self, resource_id: str) -> bool:
        """Whether ``resource_id`` names a source of a registered server."""
        key, sep, rest = resource_id.partition("/")
        return bool(sep and rest) and key in self.registry.servers()

    # ------------------------------------------------------------- discovery
    async def discover(self, who: Principal) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        """The remote resources ``who`` may use, and an error per server that failed."""
        resources: list[dict[str, Any]] = []
        errors: list[dict[str, str]] = []

        async def one(server: RemoteServer) -> None:
            try:
                found = await self._resources(server)
            except Exception as exc:
                errors.append(_error(server.key, exc))
                return
            for r in found:
                if who.operator or server.source_allows(
                    r["sourceId"], who.groups, self.admin_group
                ):
                    resources.append(r)

        async with anyio.create_task_group() as tg:
            for server in self.servers_for(who):
                tg.start_soon(one, server)
        resources.sort(key=lambda r: str(r["id"]))
        return resources, sorted(errors, key=lambda e: e["server"])

    async def _resources(self, server: RemoteServer) -> list[dict[str, Any]]:
        cached = self._discovered.get(server.key)
        if cached is not None and time.monotonic() - cached[0] < DISCOVERY_TTL_S:
            return cached[1]
        data = await self._call(server, "rag_discover_resources", {"filters": {"page_size": 500}})
        out = []
        for r in data.get("resources", []):
            if not isinstance(r, dict) or not isinstance(r.get("id"), str):
                continue
            out.append({**r, "id": f"{server.key}/{r['id']}", "sourceId": r["id"],
                        "server": server.key})  # fmt: skip
        self._discovered[server.key] = (time.monotonic(), out)
        return out

    # ---------------------------------------------------------------- search
    async def search(
        self, who: Principal, query: str, resource_ids: Sequence[str], top_k: int
    ) -> tuple[list[list[dict[str, Any]]], list[dict[str, str]]]:
        """Each server's ranked hits (one list per server holding one of
        ``resource_ids``, in registry order, for the caller to fuse with its own), and
        an error per source or server that could not be searched."""
        allowed = {s.key: s for s in self.servers_for(who)}
        wanted: dict[str, list[str]] = {}
        errors: list[dict[str, str]] = []
        for rid in resource_ids:
            key, _, source = rid.partition("/")
            server = allowed.get(key)
            if server is None or not (
                who.operator or server.source_allows(source, who.groups, self.admin_group)
            ):
                errors.append({"resourceId": rid, "code": "invalid_source",
                               "message": f"no source {rid!r}"})  # fmt: skip
                continue
            wanted.setdefault(key, []).append(source)
        lists: dict[str, list[dict[str, Any]]] = {}

        async def one(server: RemoteServer, sources: list[str]) -> None:
            args = {"query": query, "sources": sources, "top_k": top_k, "username": who.user}
            try:
                data = await self._call(server, "rag_get_raw_results", args)
            except Exception as exc:
                errors.append({**_error(server.key, exc), "resourceId": f"{server.key}/*"})
                return
            hits = []
            for h in data.get("hits", []):
                if isinstance(h, dict):
                    hits.append({**h, "id": f"{server.key}/{h.get('id', '')}",
                                 "resourceId": f"{server.key}/{h.get('resourceId', '')}",
                                 "server": server.key})  # fmt: skip
            for e in data.get("source_errors", []):
                if isinstance(e, dict):
                    errors.append({**e, "resourceId": f"{server.key}/{e.get('resourceId', '')}"})
            lists[server.key] = hits

        async with anyio.create_task_group() as tg:
            for key, sources in wanted.items():
                tg.start_soon(one, allowed[key], sources)
        # the same order whichever server answered first
        return [lists[k] for k in wanted if k in lists], sorted(
            errors, key=lambda e: e.get("resourceId", "")
        )

    # ------------------------------------------------------------------ call
    async def _call(self, server: RemoteServer, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """One tool call on ``server`` within its timeout; its ``results`` object.
        Raises on a transport failure, a timeout or a tool error.

        A connection the server dropped before answering (a read or protocol error, not a
        refused connection) is tried once more within the same timeout: every tool this
        calls only reads, and a dropped keep-alive connection is no outage."""
        with anyio.fail_after(server.timeout_s):
            try:
                result = await self._session(server, tool, args)
            except Exception as exc:
                if not _dropped(exc):
                    raise
                log.info("%s dropped the connection (%s); trying once more", server.key,
                         error_text(_innermost(exc)))  # fmt: skip
                result = await self._session(server, tool, args)
        body: Any = result.structured_content
        if body is None and result.content:
            text = getattr(result.content[0], "text", "")
            try:
                body = json.loads(text)
            except ValueError:
                body = None
        results = body.get("results") if isinstance(body, dict) else None
        if result.is_error or not isinstance(results, dict):
            err = results.get("error") if isinstance(results, dict) else None
            code = err.get("code", "backend_unavailable") if isinstance(err, dict) else ""
            if not code:  # a text-only error: "[code] message"
                found = _CODE.match(_text(result))
                code = found.group(1) if found else ""
            raise RemoteError(code or "backend_unavailable", _text(result))
        return results

    async def _session(self, server: RemoteServer, tool: str, args: dict[str, Any]) -> Any:
        """One MCP session on ``server`` that calls ``tool``; the tool's result."""
        from mcp import Client

        if server.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            token = server.token()
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=server.timeout_s) as http,
                Client(streamable_http_client(server.url, http_client=http)) as client,
            ):
                result = await client.call_tool(tool, args)
        else:
            from mcp import StdioServerParameters

            params = StdioServerParameters(command=server.command, args=list(server.args))
            async with Client(params) as client:
                result = await client.call_tool(tool, args)
        return result


_CODE = re.compile(r"\[([a-z_]+)\] ")


class RemoteError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _text(result: Any) -> str:
    content = getattr(result, "content", None) or []
    return str(getattr(content[0], "text", "")) if content else "no answer"


def _error(server: str, exc: BaseException) -> dict[str, str]:
    """A server's failure as the contract reports it (never its credential)."""
    if isinstance(exc, RemoteError):
        return {"server": server, "code": exc.code, "message": f"{server}: {error_text(exc)}"}
    inner = _innermost(exc)
    if isinstance(inner, TimeoutError):
        why = "did not answer in time"
    else:
        why = f"unreachable ({error_text(inner)})"
    return {"server": server, "code": "backend_unavailable", "message": f"{server}: {why}"}


def _dropped(exc: BaseException) -> bool:
    """Whether ``exc`` is a connection the server dropped before answering."""
    import httpx2

    inner = _innermost(exc)
    return isinstance(inner, (httpx2.ReadError, httpx2.RemoteProtocolError, httpx2.WriteError))


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
