"""Per-caller access control: authorization-bypass attempts against the core API and the
MCP server, with zero leaks (see ``access/``, ``ops/visible.py``, docs/access.md).

The probes are the words only restricted sources hold (``access_corpus.SECRET_WORDS``):
a caller outside their groups must not meet them in hits, counts, snippets,
suggestions, did-you-mean, graph results, documents, resources or errors, and a
forbidden thing must look exactly like a missing one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from groundkb import KnowledgeBase
from groundkb.access import Principal
from groundkb.errors import Forbidden, NotFound
from groundkb.serve.mcp import build_server
from groundkb.settings import load_settings

from .access_corpus import SECRET_WORDS, build
from .mcp_result import payload

BOB = Principal("bob", frozenset({"staff"}))  # handbook only
ANN = Principal("ann", frozenset({"legal"}))  # handbook and legal
QUERIES = (
    "zanzibar merger",
    "zanzibr",  # a typo of a hidden word: not corrected into it
    "bluefin codename",
    "payroll runs",
    "acme legal hold create",
    "acme legal hold creat",
    "subpoena",
    "expense reports",  # a public hit; the legal page mentions it too
    "zanzibar vacation",
)


@pytest.fixture(params=["sqlite", "postgresql"])
def kb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeBase]:
    """The corpus on each backend: the narrowing happens inside the store's queries."""
    db = "" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    k = build(tmp_path, db=db)
    yield k
    k.close()


def leaks(value: Any, asked: str = "") -> list[str]:
    """The secret words found anywhere in ``value`` (any dataclass, model or text) that
    the caller did not write in ``asked`` themselves (a query is echoed back)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    elif hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    text = json.dumps(value, default=str).lower()
    asked = asked.lower()
    return [w for w in SECRET_WORDS if w in text and w not in asked]


def test_a_caller_meets_nothing_of_a_source_outside_their_groups(kb: KnowledgeBase) -> None:
    bob = kb.reader(BOB)
    for q in QUERIES:
        for filters in ({}, {"source": "legal"}, {"source": ["handbook", "legal"]},
                        {"type": "command"}, {"type": "api"}):  # fmt: skip
            result = bob.search(q, **filters)  # type: ignore[arg-type]
            assert not leaks(result, q), (q, filters, leaks(result, q))
            assert all(h.source == "handbook" for h in result.hits)
    assert [h.doc_id for h in bob.search("expense reports").hits] == ["expenses"]
    assert not leaks(bob.list_documents(limit=100))
    assert not leaks(bob.list_commands())
    assert bob.list_commands()[1] == 1
    for name in ("acme legal hold create", "acme legal hold creat", "acme legal"):
        found = bob.lookup_command(name)
        assert not found.found and not leaks(found, name), name
    with pytest.raises(NotFound) as err:
        bob.get_command("acme legal hold create")
    assert not leaks(str(err.value), "acme legal hold create")
    assert bob.find_endpoints("payroll") == []
    lookup = bob.get_api_endpoint("/internal/payroll")
    assert lookup == dataclasses.replace(
        bob.get_api_endpoint("/nothing/here"), path="/internal/payroll"
    )  # the same not-found as for a path no spec has
    question = "zanzibar merger codename bluefin"
    prompt = bob.build_prompt(question)
    assert not leaks(prompt, question)
    assert all(not i.startswith("zanzibar") for i in prompt.hit_ids + prompt.entity_ids)
    assert [i.source.name for i in bob.sources()] == ["handbook"]
    stats = bob.stats()
    assert (stats.documents, stats.sources, stats.path) == (3, 1, "")
    assert dict(stats.by_type) == {"command": 1, "page": 2}


def test_forbidden_and_missing_look_the_same(kb: KnowledgeBase) -> None:
    bob = kb.reader(BOB)
    hidden = kb.search("zanzibar merger").hits[0].doc_id
    with pytest.raises(NotFound) as forbidden:
        bob.get(hidden)
    with pytest.raises(NotFound) as missing:
        bob.get("no-such-document")
    assert str(forbidden.value).replace(hidden, "X") == str(missing.value).replace(
        "no-such-document", "X"
    )
    for guess in (f"{hidden}#0", f"{hidden}#1"):  # a chunk id reads its document
        with pytest.raises(NotFound):
            bob.get(guess)
    with pytest.raises(NotFound):
        bob.chunks(hidden)
    a = bob.search("vacation", source="legal").notice
    b = bob.search("vacation", source="nowhere").notice
    assert a.replace("legal", "X") == b.replace("nowhere", "X") and "handbook" in a


def test_a_word_only_hidden_sources_hold_is_unknown_to_the_caller(kb: KnowledgeBase) -> None:
    """The same verdict, reason and hits as for a word no source holds: nothing in the
    answer tells the caller that some hidden document mentions it."""
    bob = kb.reader(BOB)
    for hidden, unseen in (("zanzibar", "quokkas"), ("bluefin", "narwhal"), ("payroll", "gerbil")):
        # "… in zanzibar": a word that names a hidden source names nothing to the caller
        for template in ("{}", "{} vacation", "expense reports {}", "expense reports in {}"):
            a, b = bob.search(template.format(hidden)), bob.search(template.format(unseen))
            assert (a.verdict.kind, a.verdict.reason) == (b.verdict.kind, b.verdict.reason)
            assert [h.doc_id for h in a.hits] == [h.doc_id for h in b.hits]
            assert a.verdict.message.replace(hidden, "W") == b.verdict.message.replace(unseen, "W")


def test_group_members_the_admin_group_and_the_operator_read_more(kb: KnowledgeBase) -> None:
    ann = kb.reader(ANN)
    assert ann.readable == frozenset({"handbook", "legal"})
    assert ann.search("zanzibar merger").hits[0].source == "legal"
    assert ann.find_endpoints("payroll") == []
    assert ann.lookup_command("acme legal hold create").found
    admin = kb.reader(Principal("root", frozenset({"admin"})))
    assert admin is kb  # every source: the index as it is, no view of its own
    assert {e.method for e in admin.find_endpoints("payroll")} == {"GET", "POST"}
    assert kb.readable is None and kb.stats().documents == 7


def test_groups_follow_the_settings_file_on_reload_without_reingest(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    bob = kb.reader(BOB)
    assert not bob.search("zanzibar merger").hits
    toml = tmp_path / "groundkb.toml"
    toml.write_text(toml.read_text().replace('groups = ["legal"]', 'groups = ["legal", "staff"]'))
    kb.reload(load_settings(toml))
    assert kb.reader(BOB).search("zanzibar merger").hits[0].source == "legal"
    toml.write_text(toml.read_text().replace('groups = ["legal", "staff"]', 'groups = ["legal"]'))
    kb.reload(load_settings(toml))
    assert not kb.reader(BOB).search("zanzibar merger").hits


def test_a_callers_view_cannot_change_the_index(kb: KnowledgeBase, tmp_path: Path) -> None:
    bob = kb.reader(BOB)
    for change in (
        lambda: bob.delete(source="legal"),
        lambda: bob.ingest(tmp_path / "handbook", "legal"),
        lambda: bob.set_source_enabled("legal", False),
        lambda: bob.validate(),
    ):
        with pytest.raises(Forbidden):
            change()
    assert kb.reader(ANN).search("zanzibar merger").hits


# ----------------------------------------------------------------- over MCP


def _as_bob(kb: KnowledgeBase, tmp_path: Path) -> KnowledgeBase:
    """The same index opened by a stdio server configured to run as bob."""
    settings = load_settings(tmp_path / "groundkb.toml").replace(
        local_user="bob", local_groups="staff"
    )
    return KnowledgeBase.open(settings=settings)


@pytest.mark.anyio
async def test_mcp_tools_resources_and_prompts_leak_nothing(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    hidden = kb.search("zanzibar merger").hits[0].doc_id
    with _as_bob(kb, tmp_path) as bob_kb:
        async with Client(build_server(bob_kb)) as client:
            seen: list[tuple[Any, str]] = []  # (what came back, what was asked)
            for q in QUERIES:
                for args in ({}, {"source": "legal"}, {"type": "command"}, {"explain": True}):
                    r = await client.call_tool("search_knowledge", {"query": q, **args})
                    seen.append((payload(r) or r.content, q))
            for name, args in (
                ("get_document", {"id": hidden}),
                ("get_document", {"id": f"{hidden}#0"}),
                ("get_command", {"command": "acme legal hold create"}),
                ("get_command", {"command": "acme legal hold creat", "source": "legal"}),
                ("list_commands", {}),
                ("get_api_endpoint", {"path": "/internal/payroll"}),
                ("find_endpoints", {"resource": "payroll"}),
                ("build_prompt", {"question": "what is the zanzibar codename"}),
            ):
                r = await client.call_tool(name, args)
                text = r.content[0].text if r.content else ""  # type: ignore[union-attr]
                seen.append((payload(r) or text, json.dumps(args)))
                if name == "get_document":
                    assert r.is_error and "[not_found]" in text
            listed = await client.list_resources()
            assert {r.name for r in listed.resources} == {"vacation", "expenses", "cmd-users-list"}
            seen.append(([r.model_dump() for r in listed.resources], ""))
            with pytest.raises(Exception) as err:
                await client.read_resource(f"kb://docs/{hidden}")
            seen.append((str(err.value), hidden))
    assert [(leaks(got, asked), asked) for got, asked in seen if leaks(got, asked)] == []


@pytest.mark.anyio
async def test_every_read_is_audited_with_what_was_allowed_and_denied(
    kb: KnowledgeBase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hidden = kb.search("zanzibar merger").hits[0].doc_id
    caplog.set_level(logging.INFO, logger="groundkb.audit")
    with _as_bob(kb, tmp_path) as bob_kb:
        async with Client(build_server(bob_kb)) as client:
            await client.call_tool("search_knowledge", {"query": "merger", "source": "legal"})
            await client.call_tool("get_document", {"id": hidden})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "groundkb.audit"]
    search, read = lines[-2], lines[-1]
    assert search["action"] == "search_knowledge" and search["user"] == "bob"
    assert search["allowed"] == ["handbook"] and search["denied"] == ["legal"]
    assert search["outcome"] == "ok" and search["query"] == "merger"
    assert (read["action"], read["outcome"], read["denied"]) == (
        "get_document", "not_found", ["legal"]
    )  # fmt: skip


# --------------------------------------------------------------- command line
def test_operators_issue_tokens_and_check_who_reads_what(kb: KnowledgeBase, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from groundkb.access.tokens import StaticTokens
    from groundkb.serve.cli import cli

    config = ["--config", str(tmp_path / "groundkb.toml")]
    runner = CliRunner()
    out = runner.invoke(cli, [*config, "access", "-u", "bob", "-g", "staff", "--json"])
    assert out.exit_code == 0, out.output
    rows = {r["source"]: r["reads"] for r in json.loads(out.output)["sources"]}
    assert rows == {"handbook": True, "legal": False, "platform": False}
    tokens = tmp_path / "tokens.toml"
    for user, groups in (("ann", "legal"), ("bob", "staff")):
        args = ["token", "-u", user, "-g", groups, "--file", str(tokens)]
        out = runner.invoke(cli, [*config, *args])
        assert out.exit_code == 0, out.output
    issued = [line.split()[-1] for line in out.output.splitlines() if "shown once" in line]
    assert len(issued) == 1 and issued[0] not in tokens.read_text()  # only its sha256 is kept
    found = StaticTokens(tokens, resource="http://127.0.0.1/mcp").verify(issued[0])
    assert found is not None and found.subject == "bob"
