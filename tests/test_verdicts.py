"""Calibrated verdicts: the decision, its options and evidence, exact look-ups that say
not-found in structure, and the verdict-set evaluation."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from groundkb import KnowledgeBase, SearchResult, Settings
from groundkb.answer.tooloutput import compact_search
from groundkb.errors import ConfigError
from groundkb.evaluate_verdicts import evaluate_verdicts, read_questions
from groundkb.search.engine import _named_sources
from groundkb.search.evidence import title_name
from groundkb.search.meaning import group_meanings
from groundkb.search.verdict import (
    Logistic,
    model_from_settings,
)
from groundkb.serve.cli import cli
from groundkb.serve.mcp import build_server
from groundkb.serve.render import search_text
from groundkb.serve.schemas import endpoint_out, search_out
from groundkb.store.base import DocSummary, KeywordMatch

from .conftest import EXAMPLES
from .docmaker import GADGETS_SPEC, write_pages
from .mcp_result import payload


@contextmanager
def pages_kb(tmp_path: Path, pages: dict[str, str], **settings: str) -> Iterator[KnowledgeBase]:
    """A knowledge base (keyword-only unless ``settings`` say otherwise) over Markdown
    ``pages``, ingested as source ``docs``."""
    docs = write_pages(tmp_path / "docs", pages)
    options = {"embedder": "none", **settings}
    with KnowledgeBase.open(settings=Settings(db=str(tmp_path / "kb.db"), **options)) as kb:
        assert kb.ingest(docs, source="docs").ok
        yield kb


@contextmanager
def pages_and_commands_kb(
    tmp_path: Path, pages: dict[str, str], commands: str
) -> Iterator[KnowledgeBase]:
    """A keyword-only knowledge base over Markdown ``pages`` (source ``docs``) and a
    command catalog ``commands`` in the entry schema (source ``cli``)."""
    cli = tmp_path / "cli"
    cli.mkdir()
    (cli / "commands.yaml").write_text(commands)
    with pages_kb(tmp_path, pages) as kb:
        assert kb.ingest(cli, source="cli").ok
        yield kb


@pytest.fixture
def both_kb(tmp_path: Path) -> KnowledgeBase:
    settings = Settings(db=str(tmp_path / "kb.db"), synonyms=str(EXAMPLES / "synonyms.txt"))
    kb = KnowledgeBase.open(settings=settings)
    assert kb.ingest(EXAMPLES / "docs", source="docs").ok
    assert kb.ingest(EXAMPLES / "entries", source="commands").ok
    return kb


def test_a_question_about_something_the_docs_never_mention_is_no_match(
    both_kb: KnowledgeBase,
) -> None:
    for q in ("what is the weather in Lisbon today", "how to reverse a string in python"):
        r = both_kb.search(q)
        assert r.verdict.kind == "no_match", q
        assert not r.verdict.options
    # the message names the words the docs never use, and the evidence says what fell
    # short, whichever signal decided
    r = both_kb.search("what is the weather in Lisbon today")
    assert r.verdict.reason == "no_hits"
    assert "never mentions 'weather', 'lisbon'" in r.verdict.message
    r = both_kb.search("how do I export users to Salesforce")
    assert r.verdict.kind == "no_match" and r.verdict.reason != "no_hits"
    assert "'salesforce'" in r.verdict.message
    assert r.verdict.evidence and all(e.endswith("(−)") for e in r.verdict.evidence)
    # a word of any length is quoted short
    r = both_kb.search("x" * 3000)
    assert r.verdict.kind == "no_match"
    assert f"never mentions '{'x' * 40}…'." in r.verdict.message
    assert len(r.verdict.message) < 400


def test_an_ambiguous_word_asks_which_meaning_and_names_the_options(
    both_kb: KnowledgeBase,
) -> None:
    r = both_kb.search("home")
    assert (r.verdict.kind, r.verdict.reason) == ("clarify", "ambiguous")
    labels = [o.label for o in r.verdict.options]
    assert labels[:2] == ["Home (concepts)", "Dashboard (concepts)"]
    assert "Home (concepts) or Dashboard (concepts)" in r.verdict.message
    assert {o.doc_id for o in r.verdict.options} == {"concepts/home", "concepts/dashboard"}
    # the CLI names the options once, not again as a did-you-mean
    text = search_text(r)
    assert "options: Home (concepts) | Dashboard (concepts)" in text
    assert "did you mean" not in text


def test_options_from_more_than_one_source_name_their_source(tmp_path: Path) -> None:
    def catalog(name: str, cmd: str, title: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "commands.yaml").write_text(
            "entries:\n"
            f"  - id: {name}-{cmd.split()[-1]}\n    type: command\n    title: {title}\n"
            f"    category: users\n    content: |\n      Syntax: `{cmd}`\n"
            f"    command: {cmd}\n"
        )
        return folder

    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        assert kb.ingest(catalog("cli-v1", "acme users list", "List users"), source="cli-v1").ok
        assert kb.ingest(catalog("cli-v2", "acme users get", "Get a user"), source="cli-v2").ok
        r = kb.search("acme users")
        assert (r.verdict.kind, r.verdict.reason) == ("clarify", "ambiguous")
        assert {(o.command, o.source) for o in r.verdict.options} == {
            ("acme users list", "cli-v1"), ("acme users get", "cli-v2")}  # fmt: skip
        assert "`acme users list` (cli-v1, users)" in [o.label for o in r.verdict.options]


def _search_pages(tmp_path: Path, pages: dict[str, str], query: str) -> SearchResult:
    """``query`` asked of Markdown ``pages`` (name → text), by keyword."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / f"{name}.md").write_text(text)
    with KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="none")) as kb:
        assert kb.ingest(docs, source="docs").ok
        return kb.search(query)


def test_a_name_with_a_stop_word_finds_the_page_that_holds_it(tmp_path: Path) -> None:
    """Asked "what does url_for do", the page that calls ``url_for()`` comes first, not
    the page titled with "URL" (asked as "url" alone, it came second)."""
    pages = {
        "variables": "# URL Variables\n\nA URL can hold variables. Each URL rule names them.\n",
        "building": "# Building Addresses\n\nCall `url_for()` with an endpoint's name.\n",
    }
    r = _search_pages(tmp_path, pages, "what does url_for do")
    assert r.hits[0].doc_id == "building"
    assert "url_for" in r.hits[0].matched_terms
    assert all(h.doc_id != "variables" for h in r.hits)


def test_a_flag_with_a_stop_word_finds_the_pages_that_document_it(tmp_path: Path) -> None:
    """Asked "what does --no-verify do", the pages that document ``--no-verify`` come
    first, not the commands named "verify" (asked as "verify" alone, they did)."""
    pages = {
        name: f"# git {name}\n\nVerify the signature of a GPG object.\n"
        for name in ("verify-commit", "verify-tag")
    }
    pages["commit"] = (
        "# git commit\n\nRecord changes. `--no-verify` bypasses the pre-commit hook.\n"
    )
    r = _search_pages(tmp_path, pages, "what does --no-verify do")
    assert r.hits[0].doc_id == "commit"
    assert r.hits[0].matched_terms == ("--no-verify",)
    assert all(h.doc_id == "commit" for h in r.hits)


def test_options_that_would_read_the_same_name_their_operation(tmp_path: Path) -> None:
    """One API's operations can share a summary and a tag (Stripe's "Create a refund" is
    three operations): a question offering two of them names each by method and path."""
    op = {
        "summary": "Create a refund",
        "tags": ["charge"],
        "responses": {"200": {"description": "ok"}},
    }
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "Payments", "version": "1"},
        "paths": {
            "/charges/{charge}/refunds": {"post": op},
            "/charges/{charge}/refund": {"post": {**op, "deprecated": True}},
            "/charges/{charge}/refunds/{refund}": {"post": {**op, "summary": "Update a refund"}},
        },
    }
    (tmp_path / "payments.json").write_text(json.dumps(spec))
    with KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="none")) as kb:
        assert kb.ingest(tmp_path / "payments.json", source="payments").ok
        r = kb.search("refund a charge")
    assert (r.verdict.kind, r.verdict.reason) == ("clarify", "ambiguous")
    labels = [o.label for o in r.verdict.options]
    assert len(set(labels)) == len(labels) >= 2
    assert "Create a refund (charge, POST /charges/{charge}/refunds)" in labels
    # the spec marks this one deprecated: its option and its hit say so
    assert "Create a refund (charge, POST /charges/{charge}/refund, deprecated)" in labels
    assert [o.deprecated for o in r.verdict.options if o.doc_id.endswith("/refund")] == [True]
    assert [h.deprecated for h in r.hits if h.path.endswith("/refund")] == [True]
    assert not any(h.deprecated for h in r.hits if not h.path.endswith("/refund"))
    assert all(o.label in r.verdict.message for o in r.verdict.options)
    # an option that reads differently already says no more
    assert [o.detail for o in r.verdict.options if o.title != "Create a refund"] in ([], [""])
    listed = search_out(r).model_dump()["verdict"]["options"]  # MCP's and REST's shape
    assert {o["detail"] for o in listed if o["title"] == "Create a refund"} == {
        "POST /charges/{charge}/refunds",
        "POST /charges/{charge}/refund",
    }
    # MCP says "deprecated" only where it is true, and keeps a label the fields make
    sent = compact_search(search_out(r).model_dump(mode="json"))
    flagged = {o["doc_id"] for o in sent["verdict"]["options"] if o.get("deprecated")}
    assert flagged == {"payments:POST /charges/{charge}/refund"}
    assert all("label" not in o for o in sent["verdict"]["options"])  # the fields make it
    assert [h["path"] for h in sent["hits"] if "deprecated" in h] == ["/charges/{charge}/refund"]
    assert "POST /charges/{charge}/refund (deprecated)" in search_text(r)  # the CLI's table


def test_an_answer_from_a_deprecated_operation_says_so(tmp_path: Path) -> None:
    (tmp_path / "gadgets.json").write_text(json.dumps(GADGETS_SPEC))
    with KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="none")) as kb:
        assert kb.ingest(tmp_path / "gadgets.json", source="gadgets").ok
        created = kb.search("Create a gadget")
        listed = kb.search("List gadgets")
        post, get = (kb.get_api_endpoint("/gadgets", m).endpoints[0] for m in ("POST", "GET"))
        found = kb.find_endpoints("gadget")
    # the exact look-ups say it too, in every shape
    assert post.deprecated and not get.deprecated
    assert endpoint_out(post).model_dump()["deprecated"] is True
    assert {e.method: e.deprecated for e in found} == {"POST": True, "GET": False}
    out = CliRunner().invoke(cli, ["--db", str(tmp_path / "kb.db"), "endpoints", "gadget"])
    assert "POST /gadgets\tcreate\tCreate a gadget (deprecated)" in out.output
    assert "GET /gadgets\tlist\tList gadgets\n" in out.output
    assert created.verdict.kind == "answer" and created.hits[0].deprecated
    assert "Create a gadget (deprecated in its API spec)" in created.verdict.message
    assert listed.verdict.kind == "answer" and not listed.hits[0].deprecated
    assert "deprecated" not in listed.verdict.message


def test_options_of_one_source_leave_it_out(both_kb: KnowledgeBase) -> None:
    r = both_kb.search("home")  # two sources in the index, both options from the docs
    assert r.verdict.kind == "clarify" and len(r.verdict.options) >= 2
    assert all(o.source == "" for o in r.verdict.options)


def test_a_weak_match_asks_whether_it_is_the_one_meant(both_kb: KnowledgeBase) -> None:
    r = both_kb.search("tell me about panels")
    assert r.verdict.kind == "clarify"
    assert [o.doc_id for o in r.verdict.options] == ["concepts/widgets"]
    assert r.verdict.message.startswith("I think you mean Widgets (concepts)")


def test_a_clear_question_answers_with_its_probability_and_evidence(
    both_kb: KnowledgeBase,
) -> None:
    r = both_kb.search("list all users")
    assert (r.verdict.kind, r.hits[0].doc_id) == ("answer", "cmd-gw-users-list")
    assert r.verdict.confidence == r.hits[0].score == r.signals["p_answer"]
    assert r.verdict.evidence and "(+)" in r.verdict.evidence[0]
    assert 0.0 <= r.signals["p_scope"] <= 1.0 and r.signals["cover"] > 0.5


def test_scores_follow_rank_order_in_every_kind_of_result(both_kb: KnowledgeBase) -> None:
    for q in ("list all users", "home", "share a workspace with a team", "workspace and widgets"):
        scores = [h.score for h in both_kb.search(q, limit=10).hits]
        assert scores == sorted(scores, reverse=True), q
        assert all(0.0 <= s <= 1.0 for s in scores)


def test_a_half_typed_command_completes_only_when_one_command_fits(
    both_kb: KnowledgeBase,
) -> None:
    r = both_kb.search("helios gw users li")
    assert (r.verdict.kind, r.verdict.reason) == ("answer", "completed_command")
    assert r.hits[0].doc_id == "cmd-gw-users-list"
    shared = both_kb.search("helios gw us")  # users get and users list
    assert (shared.verdict.kind, shared.verdict.reason) == ("clarify", "ambiguous")
    assert {o.command for o in shared.verdict.options} == {
        "helios gw users get",
        "helios gw users list",
    }


def test_an_invented_command_is_no_match_even_when_its_words_are_not_a_known_group(
    both_kb: KnowledgeBase,
) -> None:
    for q in ("helios boards list", "helios gw user delete bob"):
        r = both_kb.search(q)
        assert (r.verdict.kind, r.verdict.reason, r.hits) == ("no_match", "unknown_command", ())


def test_the_exact_command_path_honours_source_filters(both_kb: KnowledgeBase) -> None:
    assert both_kb.search("helios gw users list", source="commands").verdict.kind == "answer"
    other = both_kb.search("helios gw users list", source="docs")
    assert other.verdict.kind != "answer"
    assert all(h.source == "docs" for h in other.hits)
    assert not any("helios" in s for s in other.suggestions)


def test_command_lookup_says_not_found_in_structure(both_kb: KnowledgeBase) -> None:
    found = both_kb.lookup_command("helios gw users list")
    assert found.found and found.document is not None
    missing = both_kb.lookup_command("helios get-users")
    assert (missing.found, missing.document) == (False, None)
    assert "helios gw users list" in missing.suggestions
    hidden = both_kb.lookup_command("helios gw users list", source="docs")
    assert not hidden.found and not hidden.suggestions


def test_verdict_models_are_declared_settings_with_clear_errors() -> None:
    model = model_from_settings(Settings(), "hybrid")
    assert 0 < model.answer.threshold < 1 and "cover" in model.answer.weights
    assert Logistic.parse("threshold=0.7 bias=-1 cover=2").probability({"cover": 0.5}) == 0.5
    with pytest.raises(ConfigError, match="expected name=weight pairs"):
        Logistic.parse("bias=-1 colour=2", "verdict_answer_hybrid")
    with pytest.raises(ConfigError, match="threshold must be between 0 and 1"):
        Logistic.parse("threshold=2 bias=0")


# ---------------------------------------------------------------- verdict sets


@pytest.fixture
def verdict_set(tmp_path: Path) -> Path:
    root = tmp_path / "mini"
    shutil.copytree(EXAMPLES / "docs", root / "docs")
    lines = [
        {"id": "q1", "query": "list all users", "expect": "answer",
         "relevant": ["cmd-gw-users-list"], "kind": "paraphrase"},
        {"id": "q2", "query": "home", "expect": "clarify",
         "relevant": ["concepts/home", "concepts/dashboard"], "kind": "ambiguous_word"},
        {"id": "q3", "query": "banana bread recipe", "expect": "no_match", "relevant": [],
         "kind": "off_topic"},
        {"id": "q4", "query": "helios get-users", "expect": "no_match", "relevant": [],
         "kind": "invented_command"},
    ]  # fmt: skip
    (root / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def test_a_verdict_set_reports_accuracy_confusion_and_rates(verdict_set: Path) -> None:
    report = evaluate_verdicts(
        verdict_set,
        Settings(embedder="none"),
        mode="keyword",
        sources={"docs": str(verdict_set / "docs"), "commands": str(EXAMPLES / "entries")},
    )
    assert report.questions == 4 and report.accuracy == 1.0
    assert report.confusion == {
        "answer": {"answer": 1},
        "clarify": {"clarify": 1},
        "no_match": {"no_match": 2},
    }
    assert report.false_answer_rate == 0.0 and report.answered_right_rate == 1.0
    assert report.hit_at_1 == 1.0 and report.by_kind["off_topic"]["accuracy"] == 1.0


def test_eval_reads_api_question_lines_and_sub_folders_as_sources(tmp_path: Path) -> None:
    root = tmp_path / "api"
    (root / "petstore").mkdir(parents=True)
    shutil.copy(Path(__file__).parent / "fixtures" / "openapi" / "petstore.yaml", root / "petstore")
    lines = [
        {"id": "a1", "query": "add a pet to the store", "relevant": ["POST /pets"],
         "spec": "petstore.yaml"},
        {"id": "a2", "query": "cancel my flight booking", "relevant": [], "spec": None},
    ]  # fmt: skip
    (root / "questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    qs = read_questions(root)
    assert [q.expect for q in qs] == ["answer", "unanswerable"]
    assert qs[0].relevant == {"petstore:POST /pets"}
    r = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "x.db"), "eval", str(root), "--mode", "keyword", "--json"]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["questions"] == 2 and data["hit_at_1"] == 1.0
    assert data["false_answer_rate"] == 0.0


LONG_PAGES = {
    "quickstart.md": "# Quickstart\n\nInstall and make your first request.\n\n"
    "## Install\n\nRun pip install fetchkit.\n\n"
    "## Timeouts\n\nPass timeout=5 to any request call so a slow server cannot hang it.\n\n"
    "## Details\n\nRetries back off exponentially after a failure.\n",
    "advanced.md": "# Advanced usage\n\nSessions, adapters and hooks.\n\n"
    "## Sessions\n\nA session keeps cookies across requests.\n\n"
    "## Timeouts\n\nA timeout can be a pair: connect timeout and read timeout, per request.\n\n"
    "## Details\n\nRetries back off exponentially.\n",
}


@pytest.mark.anyio
async def test_options_on_long_pages_name_the_section_the_question_asks_about(
    tmp_path: Path,
) -> None:
    from mcp import Client

    from groundkb.serve.mcp import build_server

    with pages_kb(tmp_path, LONG_PAGES) as kb:
        r = kb.search("request timeout")
        assert (r.verdict.kind, r.verdict.reason) == ("clarify", "ambiguous")
        assert [(o.title, o.section) for o in r.verdict.options] == [
            ("Advanced usage", "Timeouts"),
            ("Quickstart", "Timeouts"),
        ]
        assert "do you mean Advanced usage > Timeouts or Quickstart > Timeouts?" in (
            r.verdict.message
        )
        assert "options: Advanced usage > Timeouts | Quickstart > Timeouts" in search_text(r)
        # an answer says which section answers
        r = kb.search("a pair of connect and read timeouts")
        assert r.verdict.message == "Answer from Advanced usage > Timeouts."
        # a heading that holds no word of the question ("Details") says nothing
        r = kb.search("retries back off")
        assert r.verdict.kind == "clarify"
        assert [o.label for o in r.verdict.options] == ["Advanced usage", "Quickstart"]
        async with Client(build_server(kb)) as client:
            res = await client.call_tool("search_knowledge", {"query": "request timeout"})
            data = payload(res)
        assert data is not None
        # the label is left out where the option's own fields make it
        assert data["verdict"]["options"][0] == {
            "doc_id": "advanced",
            "title": "Advanced usage",
            "type": "page",
            "section": "Timeouts",
        }


@pytest.mark.anyio
async def test_mcp_results_carry_options_and_lookups_that_find_nothing_say_so(
    both_kb: KnowledgeBase, tmp_path: Path
) -> None:
    from mcp import Client

    from groundkb.serve.mcp import build_server

    assert both_kb.ingest(
        Path(__file__).parent / "fixtures" / "openapi" / "petstore.yaml", source="pets"
    ).ok
    async with Client(build_server(both_kb)) as client:
        res = await client.call_tool("search_knowledge", {"query": "home"})
        data = payload(res)
        assert data is not None and data["verdict"]["kind"] == "clarify"
        assert [o["title"] for o in data["verdict"]["options"]][:2] == ["Home", "Dashboard"]
        miss = await client.call_tool("get_api_endpoint", {"path": "/petz/1"})
        found = payload(miss)
        assert not miss.is_error and found is not None
        assert found["found"] is False and found["endpoints"] == []
        assert any(s.endswith("/pets/{petId}") for s in found["suggestions"])


def test_a_page_that_shows_a_command_in_another_section_is_one_meaning_with_it() -> None:
    def chunk(doc: str, idx: int, text: str, command: str = "") -> KeywordMatch:
        kind = "command" if command else "page"
        summary = DocSummary(doc, "s", kind, "", doc.title(), "", (), (), command, "")
        return KeywordMatch(f"{doc}#{idx}", doc, idx, 1.0, {}, text, "", "", summary, "")

    burndown = chunk("reports", 1, "A burndown chart shows the work left in a sprint.")
    export = chunk("reports", 2, "Export one: `orbit reports export burndown --project WEB`")
    command = chunk("cmd-export", 0, "orbit reports export TYPE", "orbit reports export")
    # the page leads: its section on exporting shows the command, so the page answers
    page_first = group_meanings([burndown, command, export], lambda m: m, {})
    assert [[m.doc_id for m in g.items] for g in page_first] == [
        ["reports", "cmd-export", "reports"]]  # fmt: skip
    # the command leads: the burndown section does not show it, so it is another meaning
    command_first = group_meanings([command, burndown, export], lambda m: m, {})
    assert [[m.doc_id for m in g.items] for g in command_first] == [
        ["cmd-export", "reports"], ["reports"]]  # fmt: skip


def test_a_page_named_like_a_command_entry_is_not_offered_beside_it(tmp_path: Path) -> None:
    """The entry of ``kb projects archive`` has the alias "archive a project", the how-to's
    title: one thing, though the section of the how-to that matched does not show the
    command, so a clarification names it once."""
    pages = {
        "archive.md": "# Archive a project\n\nArchive a project when its work is done.\n\n"
        "## What happens to an archived project\n\n"
        "It becomes read-only: nobody can edit its tasks, and it leaves the sidebar.\n",
        "projects.md": "# Projects\n\nA project holds tasks. An archived project is read-only.\n",
    }
    commands = (
        "entries:\n  - id: cmd-projects-archive\n    type: command\n"
        "    title: Archive a Project\n    category: cli\n    command: kb projects archive\n"
        "    aliases: [kb projects archive, archive a project]\n"
        "    content: |\n      Archives a project: it becomes read-only.\n"
    )
    with pages_and_commands_kb(tmp_path, pages, commands) as kb:
        r = kb.search("read-only project")
        assert "archive" in [h.doc_id for h in r.hits]
        assert (r.verdict.kind, r.verdict.reason) == ("clarify", "ambiguous")
        assert [o.doc_id for o in r.verdict.options] == ["projects", "cmd-projects-archive"]


def test_a_command_a_leading_page_shows_further_down_does_not_compete_with_it(
    tmp_path: Path,
) -> None:
    pages = {
        "reports.md": "# Reports\n\nReports show how a project is going.\n\n## Burndown chart\n\n"
        "The burndown chart shows the work left in a sprint, day by day.\n\n"
        "## Exporting a report\n\nExport any report as CSV:\n\n"
        "```\nkb reports export burndown --project WEB --format csv\n```\n"
    }
    commands = (
        "entries:\n  - id: cmd-reports-export\n    type: command\n"
        "    title: Export a report\n    category: cli\n    command: kb reports export\n"
        "    content: |\n      Export a report, such as the burndown chart, as CSV.\n\n"
        "      Example: export the burndown chart of WEB\n\n"
        "      ```\n      kb reports export burndown --project WEB\n      ```\n"
    )
    with pages_and_commands_kb(tmp_path, pages, commands) as kb:
        r = kb.search("burndown chart")
        assert [h.doc_id for h in r.hits[:2]] == ["reports", "cmd-reports-export"]
        # the page's export section shows the command: one meaning, nothing to tell apart
        assert r.signals["lead"] == 1.0
        assert (r.verdict.kind, r.verdict.reason) == ("answer", "strong_match")


@pytest.mark.parametrize("embedder", ["none", "hashing"])
def test_a_form_of_a_verb_the_docs_use_is_no_unseen_word(tmp_path: Path, embedder: str) -> None:
    """Docs that say "get" know "getting": it neither lowers the share of the question
    the index knows nor is named among the words it never mentions (keyword search keeps
    the verb's forms in the query; hybrid search parses without them)."""
    pages = {"notify.md": "# Notifications\n\nGet an email whenever a task is assigned to you.\n"}
    retrieval = "keyword" if embedder == "none" else "hybrid"
    with pages_kb(tmp_path, pages, embedder=embedder, retrieval=retrieval) as kb:
        assert kb.search("getting emails").signals["known"] == 1.0
        r = kb.search("getting zucchini")
        assert r.signals["known"] < 1.0
        assert r.verdict.kind == "no_match"
        if embedder == "none":  # hybrid: nothing near enough, no hits, no words named
            assert r.verdict.reason == "unknown_terms"
            assert "never mentions 'zucchini'." in r.verdict.message


@pytest.mark.parametrize("embedder", ["none", "hashing"])
def test_a_question_that_is_a_title_in_another_form_of_its_verb_names_it(
    tmp_path: Path, embedder: str
) -> None:
    """ "upload files" is the page "Uploading Files" (and so is a typo of it), in keyword
    search, which keeps the verb's forms in the query, and in hybrid search, which parses
    without them; a question that only shares a word with a title is no such name."""
    pages = {
        "uploads.md": "# Uploading Files\n\nUpload a file with a form; the view saves it.\n",
        "storage.md": "# Storage\n\nUploaded files are kept for a week, then deleted.\n",
        "limits.md": "# Size limits\n\nFiles up to 16 MB can be uploaded.\n",
    }
    retrieval = "keyword" if embedder == "none" else "hybrid"
    with pages_kb(tmp_path, pages, embedder=embedder, retrieval=retrieval) as kb:
        for q in ("upload files", "uploading files", "uplaod files"):
            r = kb.search(q)
            assert (r.verdict.kind, r.verdict.reason) == ("answer", "exact_title"), q
            assert r.hits[0].doc_id == "uploads", q
        assert kb.search("upload").verdict.reason != "exact_title"


@pytest.mark.parametrize("embedder", ["none", "hashing"])
def test_a_request_put_as_its_gerund_asks_what_its_imperative_asks(
    tmp_path: Path, embedder: str
) -> None:
    """ "archiving tasks" is the page "Archive Tasks" as "archive tasks" is: the same
    first page and the same verdict, in keyword and in hybrid search; and a heading in
    one form of a verb names a question in another ("Archiving projects" for "archive a
    project")."""
    pages = {
        "archive-tasks.md": "# Archive Tasks\n\nArchive a finished task to hide it.\n",
        "delete-tasks.md": "# Delete Tasks\n\nDelete a task for good; it cannot come back.\n",
        "projects.md": (
            "# Projects\n\nA project holds tasks.\n\n## Archiving projects\n\n"
            "An archived project is read-only; its tasks stay.\n\n"
            "## Members\n\nAdd members to a project from its settings.\n"
        ),
    }
    retrieval = "keyword" if embedder == "none" else "hybrid"
    with pages_kb(tmp_path, pages, embedder=embedder, retrieval=retrieval) as kb:
        asked = kb.search("archive tasks")
        assert (asked.verdict.kind, asked.hits[0].doc_id) == ("answer", "archive-tasks")
        gerund = kb.search("archiving tasks")
        assert (gerund.verdict.kind, gerund.verdict.reason) == (
            asked.verdict.kind,
            asked.verdict.reason,
        )
        assert gerund.hits[0].doc_id == "archive-tasks"
        assert gerund.query == "archiving tasks"  # the question as asked
        hits = kb.search("archive a project", limit=10).hits
        heading = next(h for h in hits if h.header_path.endswith("Archiving projects"))
        assert "header: archive → archiving (inflection)" in heading.explanation


def test_a_gerund_the_docs_use_as_a_word_of_their_own_is_asked_as_written(
    tmp_path: Path,
) -> None:
    """ "billing address" is about billing, not about billing someone: where the docs
    write "billing" as often as "bill", the word is asked as written and a page titled
    "Split a bill" is no answer; "splitting a bill" still finds that page."""
    pages = {
        "invoices.md": "# Invoices\n\nEach invoice shows the billing address of the account.\n",
        "bills.md": "# Split a bill\n\nSplit a bill between two people.\n",
        "shipping.md": "# Shipping\n\nShipping rates depend on the address.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        r = kb.search("billing address")
        assert (r.verdict.kind, r.hits[0].doc_id) == ("answer", "invoices")
        assert "bills" not in [h.doc_id for h in r.hits]
        r = kb.search("splitting a bill")
        assert (r.verdict.kind, r.hits[0].doc_id) == ("answer", "bills")


def test_a_gerund_that_names_a_page_is_left_as_asked(tmp_path: Path) -> None:
    """ "logging handlers" on docs with a page titled "Logging" asks about logging, not
    about logging something: a gerund that is a name of the index is no request."""
    pages = {
        "logging.md": "# Logging\n\nHandlers send log records to files or streams.\n",
        "log.md": "# Log a message\n\nLog a message with a level and handlers.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        r = kb.search("logging handlers")
        assert "logging" in r.terms
        assert r.hits[0].doc_id == "logging"


def test_a_title_that_says_a_name_and_what_it_is_names_the_page(tmp_path: Path) -> None:
    """Sphinx's module pages, man pages: "queue — A synchronized queue class" is the page
    named queue, as much as asyncio's page titled "Queues" is."""
    pages = {
        "queue.md": "# queue — A synchronized queue class\n\nThe queue module implements"
        " multi-producer, multi-consumer queues.\n",
        "asyncio-queue.md": "# Queues\n\nAsyncio queues are designed to be similar to"
        " classes of the queue module.\n",
        "json.md": "# json — JSON encoder and decoder\n\nEncode Python objects as JSON.\n",
        "whatsnew.md": "# What's new\n\nThe json module and the queue module changed.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        r = kb.search("queue")
        assert r.verdict.kind == "clarify" and r.verdict.reason == "ambiguous"
        assert {o.doc_id for o in r.verdict.options} == {"queue", "asyncio-queue"}
        r = kb.search("json")
        assert (r.verdict.kind, r.verdict.reason) == ("answer", "exact_title")
        assert r.hits[0].doc_id == "json"
    assert title_name("json — JSON encoder and decoder") == "json"
    assert title_name("git-rm - Remove files from the working tree") == "git-rm"
    assert title_name("What's New In Python 3.8") == title_name("a-b") == ""


def test_a_half_typed_last_word_completes_to_the_one_name_it_starts(tmp_path: Path) -> None:
    """A half-typed "auto-arch" means auto-archive when the docs name archive (and
    archived) and nothing else starting so; a prefix of two different names ("inv":
    invite, invitation) or a word before the last is left as typed."""
    pages = {
        "archive.md": "# Archive and restore tasks\n\nAuto-archive moves done tasks away.\n",
        "archived.md": "# Archived projects\n\nAn archived project is read-only.\n",
        "invite.md": "# Invite users\n\nSend an invitation by email.\n",
        "invitation.md": "# Invitation links\n\nA link expires after seven days.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        r = kb.search("auto-arch")
        assert r.corrected_query == "auto-archive"
        assert r.hits[0].doc_id == "archive" and r.verdict.kind == "answer"
        assert kb.search("user inv").corrected_query == ""  # invite or invitation
        assert kb.search("arch tasks").corrected_query == ""  # not the last word
        # an option is typed whole: "--arch" names an option the docs never mention,
        # not half of "archive" (it was answered with the archive page)
        r = kb.search("orbit tasks --arch")
        assert r.corrected_query == "" and r.verdict.kind == "no_match"
        assert r.verdict.message.endswith("never mentions 'orbit', 'arch'.")


def test_a_typo_is_one_edit_from_an_indexed_word_never_two(tmp_path: Path) -> None:
    """A plural typo is corrected through its singular ("notifcations" is one edit from
    the indexed "notification"); a word two edits from an indexed one is left as typed
    ("expiration" is not "exploration", "uncommit" is not "uncomment"), and so is a word
    of the English lexicon one edit away ("bread" is not "break"), so the question is
    no near miss answered as fact."""
    pages = {
        "notifications.md": "# Notification settings\n\nMute a notification per project.\n",
        "explore.md": "# Exploration mode\n\nBrowse projects in exploration mode.\n",
        "config.md": "# Config file\n\nUncomment a line to turn an option on.\n",
        "break.md": "# Coffee break\n\nTake a break from your projects.\n",
        "links.md": "# Quick links\n\nPin the links you use most.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        r = kb.search("mute notifcations")
        assert r.corrected_query == "mute notification"
        assert r.hits[0].doc_id == "notifications"
        assert kb.search("quick lnks").corrected_query == "quick link"  # "lnk" is one edit
        for question in ("password expiration", "git uncommit", "banana bread recipe"):
            r = kb.search(question)
            assert r.corrected_query == "", question
            assert r.verdict.kind != "answer", question


def test_a_word_the_docs_write_as_two_is_split(tmp_path: Path) -> None:
    """ "noninteractive" finds the page that says "non-interactive", in a question of
    any length; a word whose parts the docs never write side by side ("paperwall":
    paper, wall) stays unknown, so the question is no match, and so does an English
    word the docs lack ("wallpaper")."""
    pages = {
        "batch.md": "# Batch mode\n\nRun Acme in non-interactive mode from a script.\n\n"
        "## Exit codes\n\nIn non-interactive mode Acme exits with 2 on a warning.\n",
        "walls.md": "# Walls\n\nA wall groups the boards of one team.\n",
        "paper.md": "# Paper size\n\nPrint a board on A4 paper.\n",
        "boards.md": "# Boards\n\nEvery wall and board can be printed on paper.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        r = kb.search("How can my script run Acme's noninteractive mode?")
        assert r.hits[0].doc_id == "batch"
        # the question as written, the word split
        assert r.corrected_query == "How can my script run Acme's non interactive mode?"
        for question in ("print a paperwall", "print a desktop wallpaper"):
            r = kb.search(question)
            assert r.verdict.kind == "no_match" and r.corrected_query == "", question
            assert r.signals["known"] < 0.5 and r.signals["typo"] == 0.0, question
        # a typo fix beside an unheld split is still offered, the split is not
        assert kb.search("Print a PaperWall on a bord").corrected_query == (
            "Print a PaperWall on a board"
        )


def test_british_and_american_spellings_of_a_word_are_one_word(tmp_path: Path) -> None:
    """Docs in American English answer "colour" and "organisation" as they answer
    "color" and "organization" (and the other way round), as the word itself: no
    did-you-mean, and the word counts as known, not as a typo."""
    pages = {
        "colors.md": "# Label colors\n\nPick a color for each label in the label settings.\n",
        "orgs.md": "# Rename an organization\n\nOwners rename an organization in its settings.\n",
        "fav.md": "# Favourite boards\n\nStar a board to add it to your favourites.\n",
        "boards.md": "# Boards\n\nA board shows the cards of one project.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        for question, page in (
            ("change the colour of a label", "colors"),
            ("rename my organisation", "orgs"),
            ("list my favorite boards", "fav"),
        ):
            r = kb.search(question)
            assert r.hits[0].doc_id == page, question
            assert r.corrected_query == "", question
            plain = kb.search(question.replace("colour", "color").replace("organis", "organiz"))
            assert r.signals["known"] == plain.signals["known"], question
            assert r.signals["typo"] == 0.0 and r.verdict.kind == plain.verdict.kind, question


_NIMBUS = {
    "keys.md": "# Rotate API keys\n\nIn Nimbus an admin rotates an API key on the Keys page.\n",
    "invite.md": "# Invite teammates\n\nNimbus emails each teammate an invitation link.\n",
    "billing.md": "# Change your plan\n\nNimbus bills the new plan from the next month.\n",
    "export.md": "# Export a workspace\n\nNimbus writes every board to a CSV archive.\n",
    "webhooks.md": "# Webhooks\n\nNimbus posts each event to the webhook URL you set.\n",
    "sso.md": "# Single sign-on\n\nConnect Nimbus to an identity provider over SAML.\n",
}
# another product's pages, one of them on the same topic as a Nimbus page
_STRATUS = {f"s{i}.md": f"# Stratus topic {i}\n\nStratus stores file {i}.\n" for i in range(8)}
_STRATUS["s0.md"] = "# Rotate API keys\n\nStratus rotates every API key each month.\n"


@contextmanager
def _nimbus_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """Nimbus's pages, where a name in every document counts even on six pages."""
    settings = Settings(db=str(tmp_path / "kb.db"), embedder="none", ubiquitous_min_docs=1)
    with KnowledgeBase.open(settings=settings) as kb:
        assert kb.ingest(write_pages(tmp_path / "nimbus", _NIMBUS), source="nimbus").ok
        yield kb


def _assert_asked_as_plainly(kb: KnowledgeBase, pairs: list[tuple[str, str]]) -> list[SearchResult]:
    """Each (plain, asked) question pair gets the same terms, hits and verdict; the
    results of the questions as asked."""
    results = []
    for plain, asked in pairs:
        got = kb.search(asked)
        _assert_same_search(kb.search(plain), got, asked)
        results.append(got)
    return results


def test_the_product_name_where_it_only_sets_the_context_is_no_evidence(
    tmp_path: Path,
) -> None:
    """On one product's docs (the name in nearly every document) "In Nimbus, how do I …"
    and "… in Nimbus?" are the question without the name: same hits, same verdict. The
    name made an out-of-scope question look covered and diluted what a page says word
    for word. Among other products' docs it says which product is meant: the question
    is asked of that product's sources. Said any other way, or of a small source, the
    name stays a word of the question."""
    with _nimbus_kb(tmp_path) as kb:
        asked_so = _assert_asked_as_plainly(
            kb,
            [
                ("how do I rotate an API key?", "In Nimbus, how do I rotate an API key?"),
                ("how do I rotate an API key?", "how do I rotate an API key in Nimbus?"),
                ("rotate an API key", "Nimbus: rotate an API key"),
                ("how do I invite a teammate?", "Using Nimbus, how do I invite a teammate?"),
                ("how do I invite a teammate", "how do I invite a teammate with the Nimbus CLI"),
                ("how do I bake bread", "how do I bake bread in Nimbus"),
            ],
        )
        assert all(got.asked_of == () for got in asked_so)  # the only product: no narrowing
        assert kb.search("how do I bake bread in Nimbus").verdict.kind == "no_match"
        # the name as what is asked about stays
        assert "nimbus" in kb.search("does Nimbus rotate keys by itself").terms
        # Among another product's docs the name says which product is meant: the
        # question is asked of its source, without the name.
        assert kb.ingest(write_pages(tmp_path / "stratus", _STRATUS), source="stratus").ok
        both = kb.search("how do I rotate an API key?")
        assert {h.source for h in both.hits} == {"nimbus", "stratus"}
        asked = "how do I rotate an API key in Nimbus?"
        got = kb.search(asked)
        _assert_same_search(kb.search("how do I rotate an API key?", source="nimbus"), got, asked)
        assert {h.source for h in got.hits} == {"nimbus"}
        # and says so, in every shell
        assert got.asked_of == ("nimbus",) and both.asked_of == ()
        assert "asked of: nimbus (named in the question)" in search_text(got)
        assert search_out(got).asked_of == ["nimbus"]
        assert "asked_of" not in compact_search(search_out(both).model_dump(mode="json"))
        # a filter that leaves the named product out keeps the question as asked, and
        # so do two products named
        assert "nimbus" in kb.search(asked, source="stratus").terms
        two = kb.search("how do I rotate an API key in Nimbus or in Stratus")
        assert {"nimbus", "stratus"} <= set(two.terms)
    # a few pages still differ by the name: the default names no source below 20 documents
    with KnowledgeBase.open(
        settings=Settings(db=str(tmp_path / "small.db"), embedder="none")
    ) as kb:
        assert kb.ingest(write_pages(tmp_path / "small", _NIMBUS), source="nimbus").ok
        assert "nimbus" in kb.search("how do I rotate an API key in Nimbus?").terms


@pytest.mark.anyio
async def test_an_agent_asking_in_a_products_name_gets_that_products_pages_over_mcp(
    tmp_path: Path,
) -> None:
    """Over a real MCP session: "… in Nimbus?" on two products' docs answers from
    Nimbus's pages and says it asked them; the plain question says nothing of it."""
    with _nimbus_kb(tmp_path) as kb:
        assert kb.ingest(write_pages(tmp_path / "stratus", _STRATUS), source="stratus").ok
        async with Client(build_server(kb)) as client:
            named = payload(
                await client.call_tool(
                    "search_knowledge", {"query": "how do I rotate an API key in Nimbus?"}
                )
            )
            plain = payload(
                await client.call_tool("search_knowledge", {"query": "how do I rotate an API key?"})
            )
    assert named["asked_of"] == ["nimbus"]
    assert named["hits"][0]["doc_id"] == "keys"
    shared = named.get("every_hit", {}).get("source")  # said once when every hit has it
    assert {h.get("source", shared) for h in named["hits"]} == {"nimbus"}
    assert "asked_of" not in plain


def test_a_word_names_the_sources_nearly_all_of_whose_documents_hold_it() -> None:
    """Counts measured on eight APIs' docs in one index: "github" names GitHub (all of
    its 1,223 operations, a third of DigitalOcean's, few of the rest); "server" names
    nothing (all of DigitalOcean's 659, but three quarters of Kubernetes' 845); a
    source too small to count is never named."""
    documents = {"digitalocean": 659, "github": 1223, "kubernetes": 845, "stripe": 417}
    github = {"digitalocean": 218, "github": 1223, "kubernetes": 6}
    server = {"digitalocean": 659, "github": 50, "kubernetes": 641, "stripe": 2}
    assert _named_sources(github, documents, 0.8, 20) == {"github"}
    assert _named_sources(server, documents, 0.8, 20) == frozenset()
    assert _named_sources({"stripe": 417}, documents, 0.8, 500) == frozenset()
    everywhere = dict(documents)  # one product's docs
    assert _named_sources(everywhere, documents, 0.8, 20) == set(documents)
    # many sources each holding it in part: a common word, not a name
    common = {"digitalocean": 659, "github": 500, "kubernetes": 400, "stripe": 200}
    assert _named_sources(common, documents, 0.8, 20) == frozenset()


def test_sentences_and_closings_that_only_converse_are_no_evidence(
    tmp_path: Path,
) -> None:
    """ "Quick question: …", "Hi, I'm new here. How do I …", "… Thanks in advance!":
    the question without the sentences that only converse and the words it closes
    with: the same hits and verdict. Before, "question", "new" or "advance" found
    whatever page says them, and an out-of-scope question asked so looked covered."""
    with _nimbus_kb(tmp_path) as kb:
        pairs = [
            ("how do I rotate an API key?", "Quick question: how do I rotate an API key?"),
            ("How do I invite a teammate?", "Hi, I'm new here. How do I invite a teammate?"),
            ("export a workspace", "Hello everyone, quick question: export a workspace"),
            # the product's name where it only sets the context, then a sentence that
            # only converses
            ("How do I invite a teammate?", "I'm new to Nimbus. How do I invite a teammate?"),
            ("how do I bake bread", "Sorry if this is obvious, but how do I bake bread"),
            ("how do I rotate an API key?", "how do I rotate an API key? Thanks in advance!"),
            ("export a workspace", "Export a workspace. Any help is appreciated."),
        ]
        _assert_asked_as_plainly(kb, pairs)
        assert kb.search("Quick question: how do I bake bread").verdict.kind == "no_match"
        # a sentence with words of its own, or one the request points back at, stays
        assert "export" in kb.search("The export failed. How do I retry it?").terms
        assert "plan" in kb.search("We are on the new plan. How do I export a workspace").terms


def _assert_same_search(want: SearchResult, got: SearchResult, asked: str) -> None:
    """``got`` (for the question ``asked``) has ``want``'s terms, hits and verdict."""
    assert got.query == asked
    assert got.terms == want.terms, asked
    assert [h.doc_id for h in got.hits] == [h.doc_id for h in want.hits], asked
    assert (got.verdict.kind, got.verdict.reason) == (want.verdict.kind, want.verdict.reason)


def test_a_snippet_leaves_code_fences_out_and_keeps_the_code(tmp_path: Path) -> None:
    pages = {
        "revert.md": "# Revert a commit\n\nUndo a published commit with a new one:\n\n"
        "```sh\n$ git revert HEAD^\n```\n\nThe revert keeps history intact.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        snippet = kb.search("revert a commit").hits[0].snippet
    assert "git revert HEAD^" in snippet
    assert "```" not in snippet


def test_a_no_match_suggests_only_pages_whose_title_holds_a_question_word(
    tmp_path: Path,
) -> None:
    """ "Did you mean" names pages the question names, never a page that only shares a
    word of its body text."""
    pages = {
        "rebase.md": "# Rebase a branch\n\nReplay your commits on top of another branch.\n",
        "hooks.md": "# Hooks\n\nA script that runs before every commit, like a gate.\n",
    }
    with pages_kb(tmp_path, pages) as kb:
        r = kb.search("rebase with a zeppelin emoji")
        assert r.verdict.kind == "no_match"
        assert r.suggestions == ("Rebase a branch",)
        r = kb.search("gate my zeppelin emoji")  # "gate" is only in the Hooks page's text
        assert r.verdict.kind == "no_match"
        assert r.suggestions == ()


def test_one_page_under_two_ids_is_one_hit_and_one_meaning(tmp_path: Path) -> None:
    """A site that serves one page at two addresses (``/`` and ``/index.html``) gives
    two documents with the same chunks: the copy is no second hit and no second meaning
    to choose between."""
    page = "# Frobnicator\n\nThe frobnicator polishes widgets until they shine.\n"
    pages = {"index.md": page, "frobnicator.md": page, "grinder.md": "# Grinder\n\nGrinds.\n"}
    with pages_kb(tmp_path, pages) as kb:
        r = kb.search("what polishes widgets until they shine")
        assert [h.doc_id for h in r.hits] in (["frobnicator"], ["index"])
        assert r.verdict.kind == "answer"
    # A page that shares a passage but says more where the question matches is no copy.
    more = page + "\n## Waxing\n\nWax polishes widgets until they shine brighter.\n"
    with pages_kb(tmp_path / "more", {**pages, "waxing.md": more}) as kb:
        found = [h.doc_id for h in kb.search("what polishes widgets until they shine").hits]
        assert "waxing" in found and len(set(found) & {"frobnicator", "index"}) <= 1


@pytest.mark.parametrize("embedder", ["none", "hashing"])
def test_asking_what_a_thing_is_is_no_bare_word(tmp_path: Path, embedder: str) -> None:
    """ "blueprint" alone may mean any page that names it; "What is a blueprint?" asks
    what the page on it says: the one-word penalty is for the bare word only."""
    pages = {
        "blueprints.md": "# Modular Applications with Blueprints\n\n"
        "A blueprint records operations to run when it is registered on an application: "
        "views, templates and static files, grouped.\n",
        "views.md": "# Class-based Views\n\nA view class is registered on an application "
        "or on a blueprint with `add_url_rule`.\n",
        "quickstart.md": "# Quickstart\n\nA minimal application with one route.\n",
    }
    retrieval = "keyword" if embedder == "none" else "hybrid"
    with pages_kb(tmp_path, pages, embedder=embedder, retrieval=retrieval) as kb:
        asked = kb.search("What is a blueprint?")
        bare = kb.search("blueprint")
        assert (asked.signals["single"], bare.signals["single"]) == (0.0, 1.0)
        assert asked.signals["p_answer"] > bare.signals["p_answer"]


def test_a_top_that_matches_all_its_rivals_match_and_more_answers_from_a_lower_threshold(
    tmp_path: Path,
) -> None:
    """ "tag a task as a bug": Task labels matches tag, task and bug; Create a Task and
    Tasks match task alone. They explain part of what it explains, so they are no
    alternative to offer; "delete" matching a task page and a project page alike is."""
    pages = {
        "labels.md": "# Task labels\n\nTag a task with labels such as bug or feature.\n",
        "create.md": "# Create a Task\n\nCreate a task in a project from the board.\n",
        "tasks.md": "# Tasks\n\nA task is one piece of work in a project.\n",
        "delete-task.md": "# Delete a task\n\nDelete removes it for good.\n",
        "delete-project.md": "# Delete a project\n\nDelete removes it for good.\n",
    }
    # an answer threshold above this search's P(answer) (0.86), the dominant one below
    strict = Settings().verdict_answer_keyword.replace("threshold=0.70", "threshold=0.95")
    with pages_kb(tmp_path, pages, verdict_answer_keyword=strict) as kb:
        r = kb.search("tag a task as a bug")
        assert r.signals["dominant"] == 1.0 and r.hits[0].doc_id == "labels"
        assert 0.65 <= r.signals["p_answer"] < 0.95
        assert (r.verdict.kind, r.verdict.reason) == ("answer", "dominant_match")
        assert r.verdict.message.startswith("Answer from Task labels")
        delete = kb.search("delete")
        assert delete.signals["dominant"] == 0.0 and delete.verdict.kind == "clarify"
    never = Settings(embedder="none", verdict_answer_keyword=strict, verdict_dominant_keyword=1.0)
    with KnowledgeBase.open(tmp_path / "kb.db", never) as kb:
        assert kb.search("tag a task as a bug").verdict.kind == "clarify"


def test_the_dominant_match_threshold_is_a_checked_setting() -> None:
    assert model_from_settings(Settings(verdict_dominant_hybrid=0.5), "hybrid").dominant == 0.5
    with pytest.raises(ConfigError):
        model_from_settings(Settings(verdict_dominant_keyword=1.5), "keyword")
