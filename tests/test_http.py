"""The REST API over real HTTP on loopback (uvicorn in a thread), beside MCP at /mcp, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from groundkb import KnowledgeBase, Settings, load_settings
from groundkb.serve.http import create_app

from .conftest import EXAMPLES, FIXTURES
from .mcp_result import payload
from .serving import running

TOKEN = "s3cret-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def open_kb(tmp_path: Path, **settings: Any) -> KnowledgeBase:
    base = Settings(db=str(tmp_path / "kb.db"), admin_token=TOKEN, synonyms="")
    kb = KnowledgeBase.open(settings=base.replace(**settings))
    for path, name in (
        (EXAMPLES / "docs", "docs"),
        (EXAMPLES / "entries", "commands"),
        (FIXTURES / "openapi" / "petstore.yaml", "pets"),
    ):
        assert kb.ingest(path, source=name).ok
    return kb


@pytest.fixture(params=["sqlite", "postgresql"])
def kb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeBase]:
    """The example knowledge base, on each backend: the REST API (and MCP beside it) is
    the same on SQLite and PostgreSQL."""
    db = str(tmp_path / "kb.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with open_kb(tmp_path, db=db) as k:
        yield k


@pytest.fixture
def http(kb: KnowledgeBase) -> Iterator[httpx2.Client]:
    with running(create_app(kb)) as base, httpx2.Client(base_url=base, timeout=30) as client:
        yield client


def error_of(r: httpx2.Response) -> tuple[int, str, str]:
    body = r.json()
    assert set(body) == {"error"}, body
    return r.status_code, body["error"]["code"], body["error"]["message"]


# ------------------------------------------------------------------ reads
def test_search_returns_the_verdict_and_each_hits_evidence(http: httpx2.Client) -> None:
    r = http.get("/api/search", params={"query": "explain workspace", "limit": 3})
    assert r.status_code == 200
    data = r.json()
    assert data["verdict"]["kind"] == "answer" and data["verdict"]["reason"]
    assert {"options", "evidence"} <= set(data["verdict"])
    assert data["terms"] == ["workspace"] and data["mode"] == "keyword"
    hit = data["hits"][0]
    assert hit["doc_id"] == "concepts/workspace" and hit["matched_terms"] == ["workspace"]
    assert hit["header_path"] == "Workspace" and hit["citation"] and hit["ranks"] == {"keyword": 1}
    posted = http.post("/api/search", json={"query": "explain workspace", "limit": 3})
    assert posted.json()["hits"] == data["hits"]
    miss = http.post("/api/search", json={"query": "explain calendar"}).json()
    assert miss["verdict"]["kind"] == "no_match" and miss["hits"] == []


def test_invalid_parameters_are_our_invalid_input_not_pydantic_text(
    http: httpx2.Client,
) -> None:
    too_many = http.get("/api/search", params={"query": "x", "limit": 500})
    cases = [
        (too_many, "limit: must be at most 100"),
        (http.get("/api/search"), "query: is required"),
        (http.get("/api/search", params={"q": "x"}), "q: is not a known field"),
        (http.post("/api/search", json={"query": ""}), "query: must not be empty"),
        (http.post("/api/search", json={"query": "x", "mode": "fast"}), "mode: must be one of"),
        (http.get("/api/search", params={"query": "x", "type": "nope"}), "unknown type 'nope'"),
        (
            http.post("/api/search", content=b"{no", headers={"Content-Type": "application/json"}),
            "the body is not valid JSON",
        ),
    ]
    for response, wanted in cases:
        status, code, message = error_of(response)
        assert (status, code) == (400, "invalid_input"), message
        assert wanted in message
        assert "pydantic" not in message and "type=" not in message and "input_value" not in message


def test_documents_are_read_by_id_even_with_slashes_and_chunk_ids(http: httpx2.Client) -> None:
    doc = http.get("/api/documents/concepts/workspace").json()
    assert doc["title"] == "Workspace" and "notes live" in doc["content"]
    assert http.get("/api/documents/concepts/workspace%231").json()["id"] == "concepts/workspace"
    cut = http.get("/api/documents/concepts/workspace", params={"max_tokens": 256}).json()
    assert cut["id"] == "concepts/workspace"
    listed = http.get("/api/documents", params={"source": "docs", "limit": 3}).json()
    assert [d["source"] for d in listed["documents"]] == ["docs"] * 3
    status, code, message = error_of(http.get("/api/documents/no/such/doc"))
    assert (status, code) == (404, "not_found") and "no/such/doc" in message


def test_commands_and_api_endpoints_are_looked_up_exactly(http: httpx2.Client) -> None:
    cmd = http.get("/api/commands/helios gw users list").json()
    assert cmd["command"] == "helios gw users list" and cmd["examples"]
    status, code, message = error_of(http.get("/api/commands/helios get-users"))
    assert (status, code) == (404, "not_found") and "did you mean" in message
    missing = http.get("/api/commands/helios gw user list").json()["error"]
    assert missing["suggestions"][0] == "helios gw users list"  # in structure, in order
    assert all(f"'{name}'" in missing["message"] for name in missing["suggestions"])
    assert "suggestions" not in http.get("/api/documents/no/such/doc").json()["error"]
    page = http.get("/api/commands", params={"limit": 2}).json()
    assert page["total"] >= 3 and len(page["commands"]) == 2 and page["next_offset"] == 2
    found = http.get("/api/endpoint", params={"path": "/pets/123", "method": "GET"}).json()
    assert found["match"] == "template" and found["params"] == {"petId": "123"}
    assert found["operation"]["id"] == found["endpoints"][0]["doc_id"]
    creates = http.get("/api/endpoints", params={"resource": "pet", "operation": "create"}).json()
    assert [(e["method"], e["path"]) for e in creates["endpoints"]] == [("POST", "/pets")]


def test_sources_stats_and_settings_are_readable_and_secrets_are_not(
    http: httpx2.Client,
) -> None:
    sources = {s["name"]: s for s in http.get("/api/sources").json()["sources"]}
    assert set(sources) == {"docs", "commands", "pets"}
    assert sources["docs"]["enabled"] is True and sources["docs"]["documents"] == 8
    assert sources["docs"]["last_sync"]["inserted"] == 8  # ingested by this process
    stats = http.get("/api/stats").json()
    assert stats["documents"] == sum(s["documents"] for s in sources.values())
    body = http.get("/api/settings").text
    assert TOKEN not in body
    settings = {s["name"]: s for s in http.get("/api/settings").json()["settings"]}
    assert settings["admin_token"]["value"] == "(set)" and settings["admin_token"]["secret"]
    assert settings["option_lead"]["value"] == 0.35 and settings["default_limit"]["default"] == 5


def test_prompts_are_built_over_rest_like_over_mcp(http: httpx2.Client) -> None:
    templates = http.get("/api/prompts/templates").json()["templates"]
    assert {"knowledge-aware", "strict", "documentation"} <= {t["id"] for t in templates}
    built = http.post(
        "/api/prompts", json={"question": "explain workspace", "grounding": "strict", "budget": 800}
    ).json()
    assert built["verdict"] == "answer" and built["grounding"] == "strict"
    assert any(i.startswith("concepts/workspace") for i in built["hit_ids"])
    assert built["estimated_tokens"] > 0 and "workspace" in built["user"].lower()
    status, code, _ = error_of(http.post("/api/prompts", json={"question": "x", "grounding": "?"}))
    assert (status, code) == (400, "invalid_input")


def test_unknown_routes_and_methods_answer_in_our_error_form(http: httpx2.Client) -> None:
    assert error_of(http.get("/api/nope"))[:2] == (404, "not_found")
    assert error_of(http.put("/api/search"))[:2] == (405, "method_not_allowed")


def test_requests_not_addressed_to_localhost_are_refused(http: httpx2.Client) -> None:
    status, code, _ = error_of(http.get("/api/stats", headers={"Host": "attacker.example"}))
    assert (status, code) == (403, "forbidden")
    assert http.get("/api/stats", headers={"Host": "localhost:1234"}).status_code == 200


# ------------------------------------------------------------------ admin
def test_admin_actions_need_the_admin_token(http: httpx2.Client, tmp_path: Path) -> None:
    status, code, _ = error_of(http.post("/api/sources/docs/disable"))
    assert (status, code) == (401, "unauthorized")
    wrong = http.post("/api/sources/docs/disable", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"] == "Bearer"
    assert http.get("/api/sources").json()["sources"][1]["enabled"] is True
    with (
        KnowledgeBase.open(tmp_path / "other.db", Settings(admin_token="")) as plain,
        running(create_app(plain, mcp=False)) as base,
    ):
        off = httpx2.post(f"{base}/api/admin/reload", headers=AUTH)
        assert error_of(off)[:2] == (403, "forbidden")
        assert "admin_token" in error_of(off)[2]


def test_disabling_a_source_takes_it_out_of_search_until_enabled(http: httpx2.Client) -> None:
    def docs_hits() -> int:
        hits = http.get("/api/search", params={"query": "explain workspace"}).json()["hits"]
        return sum(h["source"] == "docs" for h in hits)

    assert docs_hits() > 0
    r = http.post("/api/sources/docs/disable", headers=AUTH)
    assert r.json() == {"source": "docs", "enabled": False, "changed": True}
    assert docs_hits() == 0
    assert error_of(http.get("/api/documents/concepts/workspace"))[0] == 404
    listed = {s["name"]: s["enabled"] for s in http.get("/api/sources").json()["sources"]}
    assert listed == {"docs": False, "commands": True, "pets": True}
    assert http.post("/api/sources/docs/enable", headers=AUTH).json()["changed"] is True
    assert docs_hits() > 0


def test_a_source_is_resynced_and_deleted_by_an_admin(http: httpx2.Client) -> None:
    report = http.post("/api/sources/docs/sync", headers=AUTH).json()
    assert report["source"] == "docs" and report["unchanged"] == 8 and report["errors"] == []
    gone = http.delete("/api/sources/pets", headers=AUTH).json()
    assert gone["source"] == "pets" and gone["deleted_documents"] > 0
    assert error_of(http.delete("/api/sources/pets", headers=AUTH))[:2] == (404, "not_found")


def test_reload_rereads_the_settings_file(tmp_path: Path) -> None:
    config = tmp_path / "groundkb.toml"
    config.write_text('default_limit = 5\nadmin_token = "s3cret-admin-token"\n')
    overrides = {"db": str(tmp_path / "kb.db")}
    with KnowledgeBase.open(settings=load_settings(config, overrides=overrides)) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
        app = create_app(kb, overrides=overrides, mcp=False)
        with running(app) as base, httpx2.Client(base_url=base) as http:
            assert len(http.get("/api/search", params={"query": "workspace"}).json()["hits"]) > 2
            config.write_text('default_limit = 2\nadmin_token = "s3cret-admin-token"\n')
            reloaded = http.post("/api/admin/reload", headers=AUTH).json()
            assert reloaded["changed"] == ["default_limit"]
            assert len(http.get("/api/search", params={"query": "workspace"}).json()["hits"]) == 2


def test_the_keyword_kill_switch_is_an_admin_action_seen_in_health(tmp_path: Path) -> None:
    with (
        open_kb(tmp_path, embedder="hashing", min_vector_hit=-1.0) as kb,
        running(create_app(kb, mcp=False)) as base,
        httpx2.Client(base_url=base) as http,
    ):
        assert http.get("/health").json()["retrieval"]["mode"] == "hybrid"
        mode = http.put("/api/admin/mode", json={"keyword": True}, headers=AUTH).json()
        assert (mode["mode"], mode["reason"]) == ("keyword", "forced")
        r = http.get("/api/search", params={"query": "explain notes"}).json()
        assert r["mode"] == "keyword" and r["fallback"] == "forced" and r["notice"]
        health = http.get("/health").json()
        assert health["status"] == "ok" and health["retrieval"]["reason"] == "forced"
        http.put("/api/admin/mode", json={"keyword": False}, headers=AUTH)
        assert http.get("/api/search", params={"query": "explain notes"}).json()["mode"] == (
            "hybrid"
        )


# ------------------------------------------------------------- operations
def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_prometheus_metrics_count_searches_verdicts_errors_and_the_index(
    http: httpx2.Client,
) -> None:
    for q in ("explain workspace", "explain calendar", "explain workspace"):
        http.get("/api/search", params={"query": q})
    http.get("/api/documents/no/such/doc")
    http.post("/api/sources/docs/sync", headers=AUTH)
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    m = samples(r.text)
    assert m[("groundkb_search_duration_seconds_count", (("mode", "keyword"),))] == 3
    assert m[("groundkb_verdicts_total", (("kind", "no_match"), ("reason", "no_hits")))] == 1
    assert m[("groundkb_errors_total", (("code", "not_found"), ("operation", "get_document")))] == 1
    assert m[("groundkb_ingested_documents_total", (("source", "docs"), ("status", "unchanged")))]
    assert m[("groundkb_index_documents", ())] > 0 and m[("groundkb_index_size_bytes", ())] > 0
    assert m[("groundkb_no_match_ratio", ())] == pytest.approx(1 / 3, abs=1e-3)
    mode = (("configured", "hybrid"), ("mode", "keyword"), ("reason", "no_embedder"))
    assert m[("groundkb_retrieval_mode", mode)] == 1
    series = http.get("/api/metrics").json()
    # points are 10-second buckets: the searches and the later error may fall in two
    searched = [p for p in series["points"] if p["searches"]]
    assert series["summary"]["searches"] == sum(p["searches"] for p in searched) == 3
    assert all(p["p95_ms"] > 0 for p in searched)


def test_openapi_document_and_docs_page_work_offline(http: httpx2.Client) -> None:
    doc = http.get("/openapi.json").json()
    paths = doc["paths"]
    for path in ("/api/search", "/api/documents/{doc_id}", "/api/sources/{name}/disable",
                 "/api/prompts", "/health", "/metrics"):  # fmt: skip
        assert path in paths, path
    responses = [r for p in paths.values() for op in p.values() for r in op["responses"]]
    assert "422" not in responses
    assert paths["/api/search"]["get"]["responses"]["400"]["content"]
    assert "ValidationError" not in doc["components"]["schemas"]
    assert {"verdict", "hits"} <= set(doc["components"]["schemas"]["SearchOut"]["properties"])
    assert "HTTPBearer" in doc["components"]["securitySchemes"]
    page = http.get("/docs").text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets and all(a.startswith("/") for a in assets), assets
    for asset in assets:
        assert http.get(asset).status_code == 200, asset
    assert "cdn" not in page.lower()


@pytest.mark.anyio
async def test_mcp_is_served_beside_the_rest_api(kb: KnowledgeBase) -> None:
    with running(create_app(kb)) as base:
        async with Client(f"{base}/mcp") as client:
            res = await client.call_tool("search_knowledge", {"query": "explain workspace"})
            assert payload(res) is not None
            assert payload(res)["hits"][0]["doc_id"] == "concepts/workspace"
        rest = httpx2.get(f"{base}/api/search", params={"query": "explain workspace"}).json()
        assert rest["hits"][0]["doc_id"] == payload(res)["hits"][0]["doc_id"]
        assert kb.ops.series.summary(60)["searches"] == 2  # one mode and one count per process
