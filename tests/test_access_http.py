"""Access control over real HTTP on loopback: bearer tokens (a tokens file and JWTs),
the MCP endpoint as an OAuth protected resource, the REST API, and planted secrets that
must never reach logs or results."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from groundkb import KnowledgeBase
from groundkb.access.tokens import new_token
from groundkb.ops.querylog import RedactingFormatter
from groundkb.serve.http import create_app
from groundkb.settings import load_settings

from .access_corpus import SECRET_WORDS, build
from .mcp_result import payload
from .serving import running_at

ISSUER = "https://id.example.test"
ADMIN_TOKEN = "admin-7f3c9a1e5b2d4c8f"


class Server:
    def __init__(self, base: str, tokens: dict[str, str], key: rsa.RSAPrivateKey) -> None:
        self.base, self.tokens, self.key = base, tokens, key

    def jwt(self, user: str, groups: list[str], **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": self.base + "/mcp", "sub": user, "groups": groups,
                "iat": now, "exp": now + 300, **claims}  # fmt: skip
        return jwt.encode(body, self.key, algorithm="RS256")

    def get(self, path: str, token: str | None = None, **params: Any) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx2.get(self.base + path, params=params, headers=headers, timeout=30)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with serving(tmp_path) as s:
        yield s


@contextlib.contextmanager
def serving(tmp_path: Path, **extra: Any) -> Iterator[Server]:
    """The corpus served over HTTP with a tokens file (bob, ann, root) and JWTs."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "idp.pem"
    pem.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    tokens: dict[str, str] = {}
    entries = []
    for user, groups in (("bob", ["staff"]), ("ann", ["legal"]), ("root", ["admin"])):
        tokens[user], entry = new_token(user, groups)
        entries.append(entry)
    (tmp_path / "tokens.toml").write_text("\n".join(entries))
    kb = build(tmp_path)
    kb.close()
    settings = load_settings(tmp_path / "groundkb.toml").replace(
        auth_tokens_file=str(tmp_path / "tokens.toml"),
        auth_jwt_issuer=ISSUER,
        auth_jwt_jwks=str(pem),
        admin_token=ADMIN_TOKEN,
        audit_log=str(tmp_path / "audit.jsonl"),
        **extra,
    )
    with KnowledgeBase.open(settings=settings) as kb:
        from groundkb.serve.startup import configure_logging

        configure_logging(settings)  # the audit log file, as `serve --http` does
        with running_at(lambda base: create_app(kb, base_url=base)) as base:
            yield Server(base, tokens, key)
    for name in ("groundkb.audit", "groundkb.queries"):
        for h in logging.getLogger(name).handlers[:]:
            logging.getLogger(name).removeHandler(h)
            h.close()


def leaks(value: Any, asked: str = "") -> list[str]:
    text = json.dumps(value, default=str).lower()
    return [w for w in SECRET_WORDS if w in text and w not in asked.lower()]


def test_no_token_a_bad_token_or_a_token_in_the_url_is_401_with_a_challenge(
    server: Server,
) -> None:
    for r in (
        server.get("/api/search", query="vacation"),
        server.get("/api/search", "not-a-token", query="vacation"),
        server.get("/api/search", query="vacation", access_token=server.tokens["ann"]),
        server.get("/api/sources"),
    ):
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert r.json()["error"]["code"] == "unauthorized"
    mcp = httpx2.post(server.base + "/mcp", json={}, timeout=30)
    assert mcp.status_code == 401
    assert "resource_metadata=" in mcp.headers["www-authenticate"]
    meta = httpx2.get(server.base + "/.well-known/oauth-protected-resource/mcp", timeout=30)
    assert meta.json()["resource"].rstrip("/") == server.base + "/mcp"
    health = server.get("/health")  # for load balancers: no token, anonymous counts
    assert health.status_code == 200 and health.json()["documents"] == 3


def test_jwts_for_another_audience_expired_or_forged_are_refused(server: Server) -> None:
    wrong_aud = server.jwt("ann", ["legal"], aud="http://other.example/mcp")
    expired = server.jwt("ann", ["legal"], exp=int(time.time()) - 3600, iat=0)
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(
        {"iss": ISSUER, "aud": server.base + "/mcp", "sub": "ann", "groups": ["admin"],
         "exp": int(time.time()) + 300},
        other_key, algorithm="RS256",
    )  # fmt: skip
    unsigned = jwt.encode({"iss": ISSUER, "sub": "ann"}, key=None, algorithm="none")
    for token in (wrong_aud, expired, forged, unsigned):
        assert server.get("/api/search", token, query="merger").status_code == 401
        bearer = {"Authorization": f"Bearer {token}"}
        assert httpx2.post(server.base + "/mcp", json={}, headers=bearer).status_code == 401
    late = server.get("/api/search", expired, query="merger").json()["error"]
    assert late["code"] == "token_expired"  # told to get a new one, not "unknown"
    good = server.jwt("ann", ["legal"])
    hits = server.get("/api/search", good, query="zanzibar merger").json()["hits"]
    assert hits[0]["source"] == "legal"


def test_rest_callers_read_only_their_sources(server: Server) -> None:
    bob, ann = server.tokens["bob"], server.tokens["ann"]
    for q in ("zanzibar merger", "payroll", "acme legal hold create", "bluefin"):
        body = server.get("/api/search", bob, query=q).json()
        assert not leaks(body, q), q
        assert all(h["source"] == "handbook" for h in body["hits"]), q
    assert server.get("/api/search", ann, query="zanzibar").json()["hits"][0]["source"] == "legal"
    hidden = server.get("/api/search", ann, query="zanzibar").json()["hits"][0]["doc_id"]
    forbidden = server.get(f"/api/documents/{hidden}", bob)
    missing = server.get("/api/documents/no-such-doc", bob)
    assert forbidden.status_code == missing.status_code == 404
    assert forbidden.json()["error"]["message"].replace(hidden, "X") == missing.json()["error"][
        "message"
    ].replace("no-such-doc", "X")
    (handbook,) = server.get("/api/sources", bob).json()["sources"]
    assert handbook["name"] == "handbook" and handbook["location"] == ""  # no server paths
    admin_view = server.get("/api/sources", ADMIN_TOKEN).json()["sources"]
    legal = next(x for x in admin_view if x["name"] == "legal")
    assert legal["groups"] == ["legal"] and legal["location"].endswith("legal")
    assert server.get("/api/stats", bob).json()["documents"] == 3
    assert server.get("/api/endpoints", bob, resource="payroll").json()["endpoints"] == []
    assert not leaks(server.get("/api/commands", bob).json())
    assert server.get("/api/commands/acme legal hold create", bob).status_code == 404
    assert not leaks(
        server.get("/api/commands/acme legal hold creat", bob).json(), "acme legal hold creat"
    )
    assert server.get("/api/settings", bob).status_code == 403  # deployment details: admins
    for path in ("/metrics", "/api/metrics"):  # whole-index numbers: admins only
        assert server.get(path, bob).status_code == 403
        assert server.get(path, ADMIN_TOKEN).status_code == 200
    me = server.get("/api/whoami", bob).json()
    assert me == {"user": "bob", "groups": ["staff"], "via": "token", "sources": ["handbook"]}


def test_admin_actions_need_the_admin_group_or_the_admin_token(server: Server) -> None:
    path = "/api/sources/legal/disable"
    bob = {"Authorization": f"Bearer {server.tokens['bob']}"}
    assert httpx2.post(server.base + path, headers=bob).status_code == 403
    root = {"Authorization": f"Bearer {server.tokens['root']}"}
    assert httpx2.post(server.base + path, headers=root).json()["changed"] is True
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    assert httpx2.post(server.base + "/api/sources/legal/enable", headers=admin).status_code == 200
    assert server.get("/api/search", ADMIN_TOKEN, query="zanzibar").json()["hits"]


@pytest.mark.anyio
async def test_mcp_over_http_runs_as_the_tokens_user(server: Server) -> None:
    async def search(token: str, query: str, **args: Any) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as h,
            Client(streamable_http_client(server.base + "/mcp", http_client=h)) as c,
        ):
            r = await c.call_tool("search_knowledge", {"query": query, **args})
            assert payload(r) is not None
            return payload(r)

    bob = await search(server.tokens["bob"], "zanzibar merger", source="legal")
    assert not bob["hits"] and not leaks(bob, "zanzibar merger")
    ann = await search(server.jwt("ann", ["legal"]), "zanzibar merger")
    assert ann["hits"][0]["source"] == "legal"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_planted_secrets_never_reach_logs_or_results(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Tokens in headers, in the query string and pasted into questions; the admin
    token: none appears in the audit log, the query log, the server log or a result."""
    caplog.set_level(logging.DEBUG)
    formatter = RedactingFormatter("%(message)s")
    bob = server.tokens["bob"]
    results = [
        server.get("/api/search", bob, query=f"vacation token={server.tokens['ann']}").text,
        server.get("/api/search", bob, query=f"vacation Bearer {ADMIN_TOKEN}").text,
        server.get("/api/search", query="vacation", access_token=server.tokens["root"]).text,
        server.get("/api/search", server.tokens["root"] + "x", query="vacation").text,
        server.get("/api/documents/vacation", bob, api_key=ADMIN_TOKEN).text,
        server.get(f"/api/documents/{server.tokens['ann']}", bob).text,  # echoed in a 404
    ]
    audit = (tmp_path / "audit.jsonl").read_text()
    assert audit.count("\n") >= 3 and '"user":"bob"' in audit
    logged = "\n".join(formatter.format(r) for r in caplog.records)
    planted = [*server.tokens.values(), ADMIN_TOKEN]
    for where, text in (("audit", audit), ("log", logged), *(("result", r) for r in results)):
        assert not [t for t in planted if t in text], where


def test_a_required_scope_is_a_403_without_it(tmp_path: Path) -> None:
    with serving(tmp_path, auth_required_scope="kb:read") as server:
        bare = server.jwt("ann", ["legal"])
        scoped = server.jwt("ann", ["legal"], scope="kb:read openid")
        assert server.get("/api/search", bare, query="merger").status_code == 403
        assert server.get("/api/search", scoped, query="merger").status_code == 200
        assert server.get("/api/search", server.tokens["bob"], query="x").status_code == 200
        bearer = {"Authorization": f"Bearer {bare}"}
        mcp = httpx2.post(server.base + "/mcp", json={}, headers=bearer, timeout=30)
        assert mcp.status_code == 403 and "insufficient_scope" in mcp.text
