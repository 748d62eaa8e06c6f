"""The optional rerank model: a chat endpoint on loopback stands in for the user's model
(a hosted LLM cannot run here); everything else is the real engine over real SQLite."""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.errors import ConfigError
from groundkb.search import rerank
from groundkb.search.rerank import parse_reply

from .conftest import EXAMPLES, FIXTURES
from .fake_model import FakeModel


def open_kb(tmp_path: Path, **settings: Any) -> KnowledgeBase:
    kb = KnowledgeBase.open(
        settings=Settings(
            db=str(tmp_path / "kb.db"), synonyms=str(EXAMPLES / "synonyms.txt"), **settings
        )
    )
    if not kb.stats().chunks:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
        assert kb.ingest(EXAMPLES / "entries", source="commands").ok
    return kb


def distinct(doc_ids: list[str]) -> list[str]:
    return list(dict.fromkeys(doc_ids))


def test_the_model_orders_the_hits_from_the_candidates_it_was_shown(
    tmp_path: Path, model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "how do I create a widget"
    plain = open_kb(tmp_path).search(question)
    before = distinct([h.doc_id for h in plain.hits])
    monkeypatch.setenv("TEST_RERANK_KEY", "sk-rerank0000000000000000")
    FakeModel.reply = "3, 1"
    kb = open_kb(
        tmp_path,
        rerank_url=model_url,
        rerank_model="tiny",
        rerank_key_env="TEST_RERANK_KEY",
        rerank_candidates=4,
    )
    r = kb.search(question)
    after = distinct([h.doc_id for h in r.hits])
    assert after[:2] == [before[2], before[0]]
    assert sorted(after[2:]) == sorted(d for d in before if d not in after[:2])
    assert after[2:] == [d for d in before if d not in after[:2]]  # the rest keep their order
    scores = [h.score for h in r.hits]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert not r.notice
    (req,) = FakeModel.seen
    assert req["path"] == "/v1/chat/completions"
    assert req["auth"] == "Bearer sk-rerank0000000000000000"
    assert req["body"]["model"] == "tiny" and req["body"]["temperature"] == 0
    user = req["body"]["messages"][1]["content"]
    assert user.startswith(f"Question: {question}")
    assert "[4] " in user and "[5] " not in user  # rerank_candidates distinct documents
    titles = {h.doc_id: h.title for h in plain.hits}
    assert f"[1] {titles[before[0]]}" in user and f"[3] {titles[before[2]]}" in user
    kb.search(question)
    assert len(FakeModel.seen) == 1  # the same question and candidates: the cached reply


def test_a_model_that_finds_no_answer_turns_an_answer_into_a_question(
    tmp_path: Path, model_url: str
) -> None:
    plain = open_kb(tmp_path).search("delete a widget")
    assert (plain.verdict.kind, plain.verdict.reason) == ("answer", "strong_match")
    FakeModel.reply = "0"
    r = open_kb(tmp_path, rerank_url=model_url, rerank_model="tiny").search("delete a widget")
    assert (r.verdict.kind, r.verdict.reason) == ("clarify", "weak")
    assert [o.doc_id for o in r.verdict.options] == [plain.hits[0].doc_id]
    assert "rerank model" in r.verdict.message and "ask the user" in r.verdict.message
    assert r.verdict.evidence[-1] == "rerank model: no result answers"
    assert [h.doc_id for h in r.hits] == [h.doc_id for h in plain.hits]


def test_a_model_that_fails_leaves_the_search_as_it_was(tmp_path: Path, model_url: str) -> None:
    question = "how do I create a widget"
    plain = open_kb(tmp_path).search(question)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    cases = [
        (closed, "", 200, "rerank failed ("),
        (model_url, "I am not sure which one.", 200, "names no result"),
        (model_url, "1", 500, "500"),
    ]
    for url, reply, status, why in cases:
        FakeModel.reply, FakeModel.status = reply, status
        r = open_kb(tmp_path, rerank_url=url, rerank_model=f"m{status}{len(reply)}").search(
            question
        )
        assert why in r.notice and "the search's own order" in r.notice, r.notice
        assert [h.doc_id for h in r.hits] == [h.doc_id for h in plain.hits]
        assert [h.score for h in r.hits] == [h.score for h in plain.hits]
        assert r.verdict == plain.verdict


def test_a_failed_model_is_left_alone_for_a_while(
    tmp_path: Path,
    model_url: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    FakeModel.reply, FakeModel.status = "1", 503
    kb = open_kb(tmp_path, rerank_url=model_url, rerank_model="down")
    with caplog.at_level(logging.WARNING, logger="groundkb.search.rerank"):
        first = kb.search("how do I create a widget")
        assert "503" in first.notice and len(FakeModel.seen) == 1
        second = kb.search("delete a widget")
        assert "not asked again for 30 s" in second.notice and len(FakeModel.seen) == 1
    failures = [r for r in caplog.records if "reranking failed" in r.getMessage()]
    assert len(failures) == 1  # the failure is logged once, not on every search after it
    monkeypatch.setattr(rerank, "RETRY_AFTER_S", 0.0)
    FakeModel.status = 200
    third = kb.search("delete a widget")
    assert not third.notice and len(FakeModel.seen) == 2


def test_an_api_operation_is_shown_to_the_model_with_its_method_and_path(
    tmp_path: Path, model_url: str
) -> None:
    FakeModel.reply = "2"
    kb = KnowledgeBase.open(
        settings=Settings(db=str(tmp_path / "kb.db"), rerank_url=model_url, rerank_model="m")
    )
    assert kb.ingest(FIXTURES / "openapi" / "petstore.yaml", source="pets").ok
    r = kb.search("add a new pet to the store")
    user = FakeModel.seen[0]["body"]["messages"][1]["content"]
    second = user.split("\n[2] ", 1)[1].split("\n", 1)[0]
    top = r.hits[0]  # the model named the second candidate
    assert top.method and top.path and f"{top.method} {top.path}" in second
    assert second.startswith(top.title)


def test_command_look_ups_and_multi_topic_parts_do_not_ask_the_model(
    tmp_path: Path, model_url: str
) -> None:
    FakeModel.reply = "1"
    kb = open_kb(tmp_path, rerank_url=model_url, rerank_model="m")
    kb.search("helios gw users list")
    assert FakeModel.seen == []
    r = kb.search("workspace and widgets")
    assert r.multi_intent
    asked = [s["body"]["messages"][1]["content"].split("\n", 1)[0] for s in FakeModel.seen]
    assert asked == ["Question: workspace and widgets"]  # the whole, not each part


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"rerank_url": "ftp://models.internal/v1", "rerank_model": "m"}, "http(s) URL"),
        ({"rerank_url": "http://127.0.0.1:9/v1"}, "rerank_model is empty"),
        (
            {"rerank_url": "http://127.0.0.1:9/v1", "rerank_model": "m", "rerank_candidates": 1},
            "between 2 and 50",
        ),
        (
            {"rerank_url": "http://127.0.0.1:9/v1", "rerank_model": "m", "rerank_timeout_s": 0},
            "more than 0",
        ),
    ],
)
def test_bad_rerank_settings_fail_when_the_knowledge_base_opens(
    tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        KnowledgeBase.open(settings=Settings(db=str(tmp_path / "kb.db"), **settings))


def test_replies_are_read_for_numbers_best_first() -> None:
    assert parse_reply("3, 1", 5) == [2, 0]
    assert parse_reply("[2] then [2] and 9", 5) == [1]  # repeats and unknown numbers dropped
    assert parse_reply("0", 5) == [] and parse_reply("None of them.", 5) == []
    with pytest.raises(Exception, match="names no result"):
        parse_reply("the first one", 5)


@pytest.mark.anyio
async def test_an_mcp_client_sees_the_models_order_and_why_it_was_not_used(
    tmp_path: Path, model_url: str
) -> None:
    from mcp import Client

    from groundkb.serve.mcp import build_server

    from .mcp_result import payload

    question = "how do I create a widget"
    plain = distinct([h.doc_id for h in open_kb(tmp_path).search(question).hits])
    FakeModel.reply = "2"
    kb = open_kb(tmp_path, rerank_url=model_url, rerank_model="mcp")
    async with Client(build_server(kb)) as client:
        data = payload(await client.call_tool("search_knowledge", {"query": question}))
        assert data is not None and "notice" not in data
        assert data["hits"][0]["doc_id"] == plain[1]
        FakeModel.status = 502
        other = payload(await client.call_tool("search_knowledge", {"query": "delete a widget"}))
        assert other is not None and "rerank failed" in other["notice"]
