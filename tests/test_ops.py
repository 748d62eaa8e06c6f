"""Operations: the retrieval mode controller (fallback chain, kill switch), the per-query
log with secrets redacted, and the search history the console charts."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.embed import EmbedderError
from groundkb.embed.hashing import HashingEmbedder
from groundkb.errors import InvalidInput, MissingDependency
from groundkb.ops import querylog
from groundkb.ops.metrics import Series
from groundkb.ops.mode import ModeController

from .conftest import EXAMPLES


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def controller(clock: Clock, **kw: Any) -> ModeController:
    args: dict[str, Any] = {"p95_ms": 500.0, "min_searches": 5, "cooldown_s": 60.0}
    return ModeController("hybrid", clock=clock, **{**args, **kw})


# ------------------------------------------------------------ the controller
def test_a_slow_p95_over_the_window_drops_hybrid_to_keyword(clock: Clock) -> None:
    c = controller(clock)
    for ms in (100, 120, 90, 110):
        c.record(ms, error=False)
    c.record(900, error=False)  # 5 searches: p95 is the slow one
    assert c.degraded() == "latency"
    state = c.state()
    assert state.mode == "keyword" and state.configured == "hybrid"
    assert "p95 900 ms over 5 searches > 500 ms" in state.detail
    assert state.retry_in_s == 60.0


def test_fewer_searches_than_the_minimum_never_drop(clock: Clock) -> None:
    c = controller(clock)
    for _ in range(4):
        c.record(5000, error=True)
    assert c.degraded() is None


def test_an_error_rate_above_the_limit_drops_to_keyword(clock: Clock) -> None:
    c = controller(clock, min_searches=20)
    for i in range(20):
        c.record(10, error=i < 2)  # 10 % > 5 %
    assert c.degraded() == "errors"
    assert "error rate 10% over 20 searches" in c.state().detail


def test_old_searches_leave_the_window(clock: Clock) -> None:
    c = controller(clock, window_s=300.0)
    for _ in range(4):
        c.record(900, error=False)
    clock.now += 301
    c.record(100, error=False)  # the slow ones are gone: 1 search in the window
    assert c.degraded() is None and c.state().window.searches == 1


def test_after_the_cooldown_the_configured_mode_comes_back_on_probation(clock: Clock) -> None:
    c = controller(clock)
    for _ in range(5):
        c.record(900, error=False)
    assert c.degraded() == "latency"
    clock.now += 59
    assert c.degraded() == "latency"
    clock.now += 2
    assert c.degraded() is None and c.state().mode == "hybrid"
    c.record(10, error=True)  # one error on probation drops it again at once
    assert c.degraded() == "errors"
    clock.now += 61
    assert c.degraded() is None
    for _ in range(5):
        c.record(10, error=False)
    c.record(10, error=True)  # off probation: one error in six is judged by the rate
    assert c.degraded() == "errors"  # 17 % > 5 %


def test_the_runtime_kill_switch_holds_until_cleared(clock: Clock) -> None:
    c = controller(clock)
    c.force(True)
    clock.now += 10_000
    assert c.degraded() == "forced" and c.state().retry_in_s == 0
    c.force(False)
    assert c.degraded() is None


def test_keyword_configured_has_nothing_to_fall_back_from(clock: Clock) -> None:
    c = ModeController("keyword", clock=clock, min_searches=1)
    c.record(10_000, error=True)
    assert c.degraded() is None and c.state().mode == "keyword"


# ------------------------------------------------------- through the core
@pytest.fixture
def hybrid_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    docs = tmp_path / "docs"
    shutil.copytree(EXAMPLES / "docs", docs)
    settings = Settings(
        db=str(tmp_path / "kb.db"),
        embedder="hashing",
        min_vector_hit=-1.0,
        fallback_min_searches=3,
    )
    with KnowledgeBase.open(settings=settings) as kb:
        assert kb.ingest(docs, source="docs").ok
        yield kb


def test_a_failing_embedder_trips_the_breaker_at_once_and_a_background_probe_restores_it(
    hybrid_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    hybrid_kb.ops.mode.clock = clock
    calls: list[str] = []
    up = HashingEmbedder.embed_query

    def down(self: HashingEmbedder, text: str) -> Any:
        calls.append(text)
        raise EmbedderError("embedding service unavailable")

    monkeypatch.setattr(HashingEmbedder, "embed_query", down)
    first = hybrid_kb.search("share a workspace")
    assert first.mode == "keyword" and first.fallback == "embedder_failed"
    for _ in range(3):
        later = hybrid_kb.search("share a workspace")
    assert len(calls) == 1  # one failure is enough: nobody waits for it again
    assert later.mode == "keyword" and later.fallback == "errors"
    assert "hybrid retrieval is failing" in later.notice
    assert "retrying in the background" in later.notice
    assert later.hits and later.hits[0].doc_id == "concepts/workspace"
    assert hybrid_kb.ops.state().reason == "errors"

    clock.now += hybrid_kb.settings.fallback_cooldown_s + 1
    assert hybrid_kb.search("share a workspace").mode == "keyword"  # the probe runs apart
    assert hybrid_kb.ops.probe is not None
    hybrid_kb.ops.probe.join()
    assert len(calls) == 2 and hybrid_kb.ops.state().reason == "errors"  # still down

    monkeypatch.setattr(HashingEmbedder, "embed_query", up)
    clock.now += hybrid_kb.settings.fallback_cooldown_s + 1
    assert hybrid_kb.search("share a workspace").mode == "keyword"
    hybrid_kb.ops.probe.join()
    assert hybrid_kb.search("share a workspace").mode == "hybrid"


def test_searches_slower_than_the_limit_drop_to_keyword_and_come_back(
    hybrid_kb: KnowledgeBase, clock: Clock
) -> None:
    hybrid_kb.reload(hybrid_kb.settings.replace(fallback_p95_ms=0.0))
    hybrid_kb.ops.mode.clock = clock
    assert [hybrid_kb.search("explain notes").mode for _ in range(3)] == ["hybrid"] * 3
    dropped = hybrid_kb.search("explain notes")
    assert dropped.mode == "keyword" and dropped.fallback == "latency"
    clock.now += hybrid_kb.settings.fallback_cooldown_s + 1
    assert hybrid_kb.search("explain notes").mode == "hybrid"


def test_a_mode_asked_for_overrides_the_controller_and_the_setting(
    hybrid_kb: KnowledgeBase,
) -> None:
    hybrid_kb.ops.mode.force(True)
    assert hybrid_kb.search("explain notes").fallback == "forced"
    assert hybrid_kb.search("explain notes", mode="hybrid").mode == "hybrid"
    assert hybrid_kb.search("explain notes", mode="vector").mode == "vector"
    assert hybrid_kb.search("explain notes", mode="keyword").fallback == ""
    with pytest.raises(InvalidInput, match="unknown mode 'fast'"):
        hybrid_kb.search("explain notes", mode="fast")


def test_keyword_only_by_configuration_is_not_a_fallback(docs_kb: KnowledgeBase) -> None:
    r = docs_kb.search("explain workspace")
    assert r.mode == "keyword" and r.fallback == "no_embedder" and r.notice == ""
    assert docs_kb.search("explain workspace", mode="keyword").fallback == ""


def test_a_command_answered_by_name_in_hybrid_mode_is_not_a_fallback(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb.db", embedder="hashing") as kb:
        assert kb.ingest(EXAMPLES / "entries", source="commands").ok
        for query in ("helios gw users list", "helios get-users"):
            r = kb.search(query)
            assert r.mode == "keyword" and r.fallback == "" and r.notice == "", query


# ----------------------------------------------------------------- query log
def test_every_search_logs_one_structured_line(
    docs_kb: KnowledgeBase, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=querylog.LOGGER_NAME):
        docs_kb.search("explain workspace", category="concepts")
        with pytest.raises(InvalidInput):
            docs_kb.search("   ")
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == querylog.LOGGER_NAME]
    assert len(lines) == 2
    ok, failed = lines
    assert ok["event"] == "search" and ok["query"] == "explain workspace"
    assert ok["terms"] == ["workspace"] and ok["filters"] == {"category": ["concepts"]}
    assert ok["verdict"] == "answer" and ok["reason"] and ok["mode"] == "keyword"
    assert ok["latency_ms"] > 0 and ok["requested_mode"] == "auto"
    top = ok["top"][0]
    assert top["doc_id"] == "concepts/workspace" and top["matched_terms"] == ["workspace"]
    assert top["score"] > 0 and top["ranks"] == {"keyword": 1}
    assert failed["error"]["code"] == "invalid_input" and "verdict" not in failed


def test_secrets_in_queries_never_reach_the_log(
    docs_kb: KnowledgeBase, caplog: pytest.LogCaptureFixture
) -> None:
    querylog.add_secret("hunter2-admin")
    secrets = [
        "token=abc123secretvalue",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz",
        "sk-proj4abcdefghijklmnopqrstu",
        "AKIAIOSFODNN7EXAMPLE",
        "hunter2-admin",
    ]
    with caplog.at_level(logging.INFO, logger=querylog.LOGGER_NAME):
        for s in secrets:
            found = docs_kb.search(f"workspace {s}")
            # a pasted credential is never searched for, echoed or logged
            assert "credential in the query was left out" in found.notice, s
            assert found.query.startswith("workspace") and "hunter2" not in str(found)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == querylog.LOGGER_NAME)
    assert text.count('"query":"workspace') >= len(secrets)
    for leaked in ("abc123secretvalue", "eyJhbGci", "sk-proj4", "AKIAIOSFODNN7", "hunter2"):
        assert leaked not in text.lower() and leaked.lower() not in text.lower()
    assert '"workspace' in text  # the rest of the query stays readable


def test_redaction_keeps_ordinary_questions_intact() -> None:
    for q in (
        "how do I reset my password",
        "password: how to reset",
        "bearer authentication header",
        "token expiration settings",
        "GET /v1/customers/cus_123",
    ):
        assert querylog.redact(q) == q


# ------------------------------------------------------------------ history
def test_the_history_buckets_searches_with_percentiles_and_rates(clock: Clock) -> None:
    series = Series(bucket_s=10, span_s=60, clock=clock)
    for ms, verdict in ((10, "answer"), (20, "no_match"), (30, "answer"), (400, "clarify")):
        series.add(ms, verdict, fallback=False)
    clock.now += 10
    series.add(5, "no_match", fallback=True)
    series.error()
    first, second = series.points()
    assert (first.searches, first.p50_ms, first.p95_ms) == (4, 20, 400)
    assert first.no_match_rate == 0.25 and first.clarify_rate == 0.25
    assert (second.searches, second.fallbacks, second.errors) == (1, 1, 1)
    clock.now += 100
    assert series.points() == []  # older than the span
    assert series.summary(60)["searches"] == 0


def test_an_embedder_that_cannot_open_degrades_searches_instead_of_failing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import groundkb.api_writes

    def broken(settings: Settings) -> Any:
        raise MissingDependency("the local model needs the embed extra")

    monkeypatch.setattr(groundkb.api_writes, "_open_embedder", broken)
    settings = Settings(db=str(tmp_path / "kb.db"), embedder="minilm", fallback_min_searches=2)
    with KnowledgeBase.open(settings=settings) as kb:
        state = kb.ops.retrieval(kb)
        assert (state.mode, state.reason) == ("keyword", "embedder_failed")
        assert "embed extra" in state.detail
        first = kb.search("explain workspace")
        assert first.mode == "keyword" and first.fallback == "embedder_failed"
        kb.search("explain workspace")
        assert kb.search("explain workspace").fallback == "errors"


def test_p95_of_twenty_searches_is_not_the_slowest_one() -> None:
    from groundkb.ops.mode import percentile

    values = [10.0] * 19 + [1000.0]
    assert percentile(values, 0.95) == 10.0
    assert percentile([*values, 1000.0], 0.95) == 1000.0  # two of 21 are slow
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0


def test_the_search_that_loads_the_model_does_not_trip_the_latency_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every fresh server's first hybrid search loads the model (about a second): that
    is not the latency searches have, and must not switch the server to keyword."""
    import time as _time

    import groundkb.api_writes

    def slow_open(settings: Settings) -> object:
        _time.sleep(0.5)
        return HashingEmbedder()

    monkeypatch.setattr(groundkb.api_writes, "_open_embedder", slow_open)
    settings = Settings(
        db=str(tmp_path / "kb.db"), embedder="hashing", fallback_p95_ms=300.0,
        fallback_min_searches=5,
    )  # fmt: skip
    with KnowledgeBase.open(settings=settings) as kb:
        kb.ingest(EXAMPLES / "docs", "docs")
    with KnowledgeBase.open(settings=settings) as kb:  # a fresh server
        results = [kb.search("explain workspace") for _ in range(8)]
    assert results[0].mode == "hybrid"
    assert [r.fallback for r in results] == [""] * 8


def test_credentials_left_out_of_searches_spare_ordinary_questions() -> None:
    for q in (
        "auth: oauth2 setup",
        "secret: k8s-secrets",
        "credentials: aws-iam role",
        "how do I set token expiry",
        "GET /v1/customers/cus_123",
        "123e4567-e89b-12d3-a456-426614174000 not found",  # an id, however random
    ):
        assert querylog.strip_credentials(q) == (q, False), q
    assert querylog.strip_credentials("export API_KEY=sk-abcdefghijklmnopqrstu now") == (
        "export API_KEY= now",
        True,
    )
