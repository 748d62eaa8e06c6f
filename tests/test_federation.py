"""Federation over real groundkb servers on loopback: discovery, merged search, partial
failure (a server stopped, one too slow), live registry changes, and that nothing
crosses a caller's permissions or forwards the caller's token."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import Client

from groundkb import KnowledgeBase
from groundkb.access.tokens import new_token
from groundkb.errors import ConfigError
from groundkb.federation.aggregator import fuse
from groundkb.federation.registry import parse
from groundkb.serve.http import create_app
from groundkb.serve.mcp import build_server
from groundkb.settings import load_settings

from .access_corpus import build
from .mcp_result import payload
from .serving import running_at

pytestmark = pytest.mark.anyio


class Recorder:
    """An ASGI wrapper that records each request's Authorization header and can delay
    every request (a slow server)."""

    def __init__(self, app: Any, delay_s: float = 0.0) -> None:
        self.app, self.delay_s = app, delay_s
        self.authorizations: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers", ()))
            self.authorizations.append(headers.get(b"authorization", b"").decode())
            if self.delay_s:
                await anyio.sleep(self.delay_s)
        await self.app(scope, receive, send)


@contextlib.contextmanager
def remote(
    root: Path, groups: list[str], delay_s: float = 0.0
) -> Iterator[tuple[str, str, Recorder]]:
    """A groundkb HTTP server over the access corpus whose token for the hub has
    ``groups``; yields (MCP URL, the hub's token, the recorder)."""
    token, entry = new_token("hub", groups)
    build(root).close()
    (root / "tokens.toml").write_text(entry)
    settings = load_settings(root / "groundkb.toml").replace(
        auth_tokens_file=str(root / "tokens.toml")
    )
    recorder: list[Recorder] = []

    def make(base: str) -> Any:
        recorder.append(Recorder(create_app(kb, base_url=base), delay_s))
        return recorder[0]

    with KnowledgeBase.open(settings=settings) as kb, running_at(make) as base:
        yield base + "/mcp", token, recorder[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with (
        remote(tmp_path / "a", ["legal"]) as (a_url, a_token, a_rec),
        remote(tmp_path / "b", ["platform"]) as (b_url, b_token, _),
        remote(tmp_path / "slow", [], delay_s=8.0) as (slow_url, slow_token, _),
    ):
        monkeypatch.setenv("A_TOKEN", a_token)
        monkeypatch.setenv("B_TOKEN", b_token)
        monkeypatch.setenv("SLOW_TOKEN", slow_token)
        registry = {
            "a": {"url": a_url, "auth": {"bearer_env": "A_TOKEN"}, "timeout_s": 30,
                  "dataSources": [{"id": "legal", "name": "Legal", "groups": ["legal"]}]},
            "b": {"url": b_url, "groups": ["eng"], "auth": {"bearer_env": "B_TOKEN"},
                  "timeout_s": 30},
            "slow": {"url": slow_url, "groups": ["eng"], "auth": {"bearer_env": "SLOW_TOKEN"},
                     "timeout_s": 1},
            "down": {"url": f"http://127.0.0.1:{closed_port()}/mcp", "groups": ["eng"],
                     "timeout_s": 5},
        }  # fmt: skip
        hub = tmp_path / "hub"
        hub.mkdir()
        (hub / "rag-mcp.json").write_text(json.dumps(registry))
        (hub / "groundkb.toml").write_text('db = "hub.db"\nembedder = "none"\n')
        (hub / "local.md").write_text("# Hub notes\n\nThe hub keeps expense reports too.\n")
        with KnowledgeBase.open(settings=load_settings(hub / "groundkb.toml")) as kb:
            kb.ingest(hub / "local.md", "hub")
        yield {"hub": hub, "registry": registry, "a_recorder": a_rec}


async def as_user(world: dict[str, Any], user: str, groups: str, tool: str, **args: Any) -> Any:
    settings = load_settings(world["hub"] / "groundkb.toml").replace(
        local_user=user, local_groups=groups
    )
    from groundkb.federation import aggregator_for

    with KnowledgeBase.open(settings=settings) as kb:
        async with Client(build_server(kb, aggregator=aggregator_for(settings))) as client:
            r = await client.call_tool(tool, args)
            return r.is_error, payload(r)


async def test_discovery_merges_servers_the_caller_may_use(world: dict[str, Any]) -> None:
    _, bob = await as_user(world, "bob", "staff", "rag_discover_resources")
    assert sorted(r["id"] for r in bob["results"]["resources"]) == ["a/handbook", "hub"]
    started = time.perf_counter()
    _, ann = await as_user(world, "ann", "legal,eng", "rag_discover_resources")
    took = time.perf_counter() - started
    ids = sorted(r["id"] for r in ann["results"]["resources"])
    assert ids == ["a/handbook", "a/legal", "b/handbook", "b/platform", "hub"]
    errors = {e["server"]: e["code"] for e in ann["results"]["server_errors"]}
    assert errors == {"down": "backend_unavailable", "slow": "backend_unavailable"}
    assert took < 7.0  # the slow server's 1 s timeout, not its 8 s delay, in parallel


async def test_search_fans_out_and_fuses_by_rank(world: dict[str, Any]) -> None:
    error, out = await as_user(
        world, "ann", "legal,eng", "rag_get_raw_results",
        query="expense reports", sources=["a/handbook", "b/handbook", "hub"], top_k=5,
    )  # fmt: skip
    assert not error and "source_errors" not in out["results"], out["results"]
    hits = out["results"]["hits"]
    servers = [h["resourceId"].split("/")[0] for h in hits[:3]]
    assert set(servers) == {"a", "b", "hub"}  # each server's best, interleaved
    assert {h["sourceId"] for h in hits[:3]} == {"expenses", "local"}


async def test_a_stopped_or_slow_server_gives_partial_results_with_errors(
    world: dict[str, Any],
) -> None:
    started = time.perf_counter()
    error, out = await as_user(
        world, "ann", "legal,eng", "rag_get_raw_results",
        query="expense reports", sources=["a/handbook", "slow/handbook", "down/handbook"],
    )  # fmt: skip
    assert time.perf_counter() - started < 7.0  # not the slow server's 8 s
    assert not error and out["results"]["hits"][0]["resourceId"] == "a/handbook"
    failed = {e["resourceId"]: e["code"] for e in out["results"]["source_errors"]}
    assert failed == {"slow/*": "backend_unavailable", "down/*": "backend_unavailable"}


class DroppingProxy:
    """A TCP proxy on loopback in front of ``target``: the first ``drops`` connections
    are closed once their request arrives, unanswered; the later ones are forwarded."""

    def __init__(self, target: str, drops: int) -> None:
        parts = urlsplit(target)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.drops, self.connections = drops, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}{parts.path}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            if self.connections <= self.drops:
                conn.recv(65536)
                conn.close()
                continue
            up = socket.create_connection(self.upstream)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


async def test_a_dropped_connection_is_tried_once_more(world: dict[str, Any]) -> None:
    once = DroppingProxy(world["registry"]["a"]["url"], drops=1)
    always = DroppingProxy(world["registry"]["a"]["url"], drops=1_000)
    registry = dict(world["registry"])
    for key, proxy in (("once", once), ("always", always)):
        registry[key] = {**registry["a"], "url": proxy.url, "groups": ["eng"]}
    (world["hub"] / "rag-mcp.json").write_text(json.dumps(registry))
    error, out = await as_user(
        world, "ann", "legal,eng", "rag_get_raw_results",
        query="expense reports", sources=["once/handbook", "always/handbook"],
    )  # fmt: skip
    assert not error
    assert out["results"]["hits"][0]["resourceId"] == "once/handbook"
    failed = {e["resourceId"]: e for e in out["results"]["source_errors"]}
    assert list(failed) == ["always/*"]
    assert failed["always/*"]["code"] == "backend_unavailable"
    assert "unreachable" in failed["always/*"]["message"]
    assert once.connections >= 2 and always.connections == 2  # one more try, no more


async def test_nothing_crosses_the_callers_permissions(world: dict[str, Any]) -> None:
    for sources in (["a/legal"], ["b/platform"], ["b/handbook"], ["slow/handbook"]):
        error, out = await as_user(
            world, "bob", "staff", "rag_get_raw_results", query="zanzibar merger payroll",
            sources=sources,
        )  # fmt: skip
        assert error and out["results"]["error"]["code"] == "invalid_source", sources
        assert "zanzibar" not in json.dumps(out["results"]).replace("zanzibar merger", "")
    # the remote enforces its own groups for the hub's credential: a's token may not
    # read a's platform source, whoever asks
    error, out = await as_user(
        world, "root", "admin", "rag_get_raw_results", query="payroll", sources=["a/platform"]
    )
    assert error and out["results"]["error"]["code"] == "invalid_source"


async def test_each_remote_gets_its_own_credential_never_the_callers(
    world: dict[str, Any], tmp_path: Path
) -> None:
    caller_token, entry = new_token("ann", ["legal", "eng"])
    (world["hub"] / "tokens.toml").write_text(entry)
    settings = load_settings(world["hub"] / "groundkb.toml").replace(
        auth_tokens_file=str(world["hub"] / "tokens.toml")
    )
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    with (
        KnowledgeBase.open(settings=settings) as kb,
        running_at(lambda base: create_app(kb, base_url=base)) as base,
    ):
        headers = {"Authorization": f"Bearer {caller_token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(base + "/mcp", http_client=http)) as client,
        ):
            r = await client.call_tool(
                "rag_get_raw_results", {"query": "merger", "sources": ["a/legal"]}
            )
    assert not r.is_error and payload(r)["results"]["hits"]
    seen = world["a_recorder"].authorizations
    import os

    assert seen and all(h == f"Bearer {os.environ['A_TOKEN']}" for h in seen)
    assert not any(caller_token in h for h in seen)


async def test_registry_changes_apply_without_restart(world: dict[str, Any]) -> None:
    from groundkb.federation import aggregator_for

    settings = load_settings(world["hub"] / "groundkb.toml").replace(
        local_user="bob", local_groups="staff"
    )
    aggregator = aggregator_for(settings)
    assert aggregator is not None
    with KnowledgeBase.open(settings=settings) as kb:
        async with Client(build_server(kb, aggregator=aggregator)) as client:
            before = await client.call_tool("rag_discover_resources", {})
            registry = dict(world["registry"])
            registry["b"] = {**registry["b"], "groups": ["staff"]}
            (world["hub"] / "rag-mcp.json").write_text(json.dumps(registry))
            changes = aggregator.registry.reload()
            after = await client.call_tool("rag_discover_resources", {})
    ids = lambda r: [x["id"] for x in payload(r)["results"]["resources"]]  # noqa: E731
    assert "b/handbook" not in ids(before) and "b/handbook" in ids(after)
    assert changes == {"added": [], "removed": [], "changed": ["b"]}


def test_registry_files_are_checked_and_hold_no_credentials() -> None:
    with pytest.raises(ConfigError, match="credential"):
        parse({"x": {"url": "https://x.example/mcp", "auth": {"token": "s3cret"}}}, "f.json")
    with pytest.raises(ConfigError, match="exactly one of"):
        parse({"x": {"url": "https://x.example/mcp", "command": "groundkb"}}, "f.json")
    with pytest.raises(ConfigError, match=r"f\.json: x: unknown field 'colour'"):
        parse({"x": {"url": "https://x.example/mcp", "colour": "red"}}, "f.json")
    assert parse({"x": {"command": "groundkb", "args": ["serve"]}}, "f.json")["x"].args == (
        "serve",
    )


def test_rank_fusion_interleaves_lists_and_sums_shared_hits() -> None:
    a = [{"id": "a1"}, {"id": "a2"}]
    b = [{"id": "b1"}, {"id": "a2"}]
    fused = fuse([a, b], 3)
    assert [h["id"] for h in fused] == ["a2", "a1", "b1"]


async def test_a_server_started_over_stdio_is_searched_like_one_over_http(
    tmp_path: Path,
) -> None:
    import sys

    remote = tmp_path / "remote"
    build(remote).close()
    hub = tmp_path / "hub"
    hub.mkdir()
    registry = {"local": {"command": sys.executable, "timeout_s": 60,
                          "args": ["-m", "groundkb", "--config", str(remote / "groundkb.toml"),
                                   "serve"]}}  # fmt: skip
    (hub / "rag-mcp.json").write_text(json.dumps(registry))
    (hub / "groundkb.toml").write_text('db = "hub.db"\nembedder = "none"\n')
    (hub / "note.md").write_text("# Note\n\nNothing here.\n")
    with KnowledgeBase.open(settings=load_settings(hub / "groundkb.toml")) as kb:
        kb.ingest(hub / "note.md", "hub")
    world = {"hub": hub}
    _, out = await as_user(world, "bob", "staff", "rag_discover_resources")
    ids = sorted(r["id"] for r in out["results"]["resources"])
    # the stdio server runs as its operator: every source; the registry could narrow it
    assert ids == ["hub", "local/handbook", "local/legal", "local/platform"]
    error, out = await as_user(
        world, "bob", "staff", "rag_get_raw_results", query="vacation days",
        sources=["local/handbook"],
    )  # fmt: skip
    assert not error and out["results"]["hits"][0]["sourceId"] == "vacation"
