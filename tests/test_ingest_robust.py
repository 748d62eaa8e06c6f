"""One bad file never stops an ingest: each becomes one problem, the rest is ingested.

Every case here aborted a whole batch before (a traceback, a hang, gigabytes of memory
or a segfault of the YAML parser).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groundkb import KnowledgeBase
from groundkb.ingest.structured import MAX_NESTING, load_yaml, nesting_bound, yaml_nesting

_LAUGHS = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join(["*" + chr(97 + i)] * 9) + "]\n" for i in range(8)
)


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "good.md").write_text("# Good\n\nA page about widgets.\n")
    (docs / "sub" / "inner.md").write_text("# Inner\n\nA page about gadgets.\n")
    return docs


def _problems(report: object) -> dict[str, str]:
    return {e.path: e.message for e in report.errors}  # type: ignore[attr-defined]


def _spec(extra: str) -> str:
    return "openapi: 3.0.0\ninfo: {title: t, version: '1'}\n" + extra


def test_a_file_name_that_is_not_utf8_is_one_problem(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    (docs / os.fsdecode(b"caf\xe9.md")).write_bytes(b"# Cafe\n\nText.\n")
    report = kb.ingest(docs, source="docs")
    assert _problems(report) == {"caf\\xe9.md": "file name is not valid UTF-8; rename the file"}
    assert report.inserted == 2


@pytest.mark.parametrize(
    "name, text",
    [
        ("entry.yaml", "id: x\ntype: guide\ntitle: T\ncategory: c\ncontent: hi\nextra:\n"
         + "".join("  " + line for line in _LAUGHS.splitlines(True))),
        ("description.yaml", _spec("x: &l0 [lol]\n" + "".join(
            f"x{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9)
        ) + "paths:\n  /a:\n    get:\n      description: *l8\n")),
        ("opid.yaml", _spec(_LAUGHS + "paths:\n  /a:\n    get:\n      operationId: *i\n")),
        ("tags.yaml", _spec(_LAUGHS + "paths:\n  /a:\n    get:\n      tags: *i\n")),
        ("self.yaml", "a: &a [*a]\n"),
    ],
)  # fmt: skip
def test_yaml_aliases_that_expand_to_billions_are_refused(
    kb: KnowledgeBase, tmp_path: Path, name: str, text: str
) -> None:
    docs = _folder(tmp_path)
    (docs / name).write_text(text)
    report = kb.ingest(docs, source="docs")
    assert "billion laughs" in _problems(report)[name]
    assert report.inserted == 2


def test_json_nested_5000_levels_is_one_problem(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    (docs / "deep.json").write_text("[" * 5000 + "]" * 5000)
    (docs / "lines.jsonl").write_text('{"id": "r", "title": "R", "content": "ok"}\n' + "[" * 5000)
    report = kb.ingest(docs, source="docs")
    problems = _problems(report)
    assert problems["deep.json"] == f"nested deeper than {MAX_NESTING} levels; not loaded"
    assert "nested deeper" in problems["lines.jsonl"]
    assert report.inserted == 3


def test_yaml_nested_50000_levels_is_refused_before_the_parser_can_crash(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    (docs / "flow.yaml").write_text(_spec("x: " + "[" * 50_000 + "]" * 50_000 + "\n"))
    (docs / "block.yaml").write_text("".join(" " * i + "k:\n" for i in range(2_000)))
    (docs / "dashes.yaml").write_text("- " * 50_000 + "x\n")
    run = subprocess.run(
        [sys.executable, "-m", "groundkb", "--db", str(tmp_path / "kb.db"), "ingest",
         str(docs), "-s", "docs", "--json"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "GROUNDKB_EMBEDDER": "none"},
    )  # fmt: skip
    assert run.returncode == 1, run.stderr  # problems, not a crash (a segfault is -11)
    report = json.loads(run.stdout)
    problems = {e["path"]: e["message"] for e in report["errors"]}
    assert set(problems) == {"flow.yaml", "block.yaml", "dashes.yaml"}
    # our depth guard ("nested deeper than ...") or PyYAML 6.0.4+'s own limit ("exceeded
    # maximum nesting depth"), whichever trips first: refused, with the reason
    assert all("nest" in m for m in problems.values()), problems
    assert report["inserted"] == 2


def test_the_nesting_bound_is_never_below_the_real_depth() -> None:
    samples = [
        "a:\n  b:\n    - c\n    - [d, {e: f}]\n",
        "- - - x\n",
        "k:\n- a\n- b: [1, [2, [3]]]\n",
        "{a: [b, {c: [d]}]}",
        "x: 'a ] string [ with brackets'\n",
    ]
    for text in samples:
        assert nesting_bound(text) >= yaml_nesting(text), text
    assert load_yaml("base: &b {x: 1}\nk: *b\nl: [*b, *b]\n", "ok.yaml")["l"] == [{"x": 1}] * 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_and_a_link_to_dev_zero_are_problems_not_hangs(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    docs = _folder(tmp_path)
    os.mkfifo(docs / "pipe.md")
    if Path("/dev/zero").exists():
        (docs / "zero.md").symlink_to("/dev/zero")
    report = kb.ingest(docs, source="docs")
    problems = _problems(report)
    assert problems["pipe.md"] == "cannot read: not a regular file (a FIFO)"
    if Path("/dev/zero").exists():
        assert problems["zero.md"] == "cannot read: not a regular file (a character device)"
    assert report.inserted == 2


def test_an_unreadable_folder_is_an_error_and_its_documents_stay(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _folder(tmp_path)
    assert kb.ingest(docs, source="docs").inserted == 2
    real = os.scandir
    locked = str(docs / "sub")

    def scandir(path: object = ".") -> object:
        if os.fspath(path) == locked:  # type: ignore[call-overload]
            raise PermissionError(13, "Permission denied", locked)
        return real(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", scandir)
    report = kb.ingest(docs, source="docs")
    assert _problems(report) == {"sub": "cannot read this folder: Permission denied"}
    assert report.deleted == 0
    assert kb.get("sub/inner").title == "Inner"


def test_a_loader_that_raises_fails_its_file_only(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundkb.ingest.tldr import TldrLoader

    docs = _folder(tmp_path)
    (docs / "tar.md").write_text("# tar\n\n> Archiving utility.\n\n- List:\n\n`tar tf {{a}}`\n")

    def broken(self: object, data: bytes, ctx: object) -> object:
        raise MemoryError

    monkeypatch.setattr(TldrLoader, "load", broken)
    report = kb.ingest(docs, source="docs")
    assert _problems(report) == {"tar.md": "too large to load in memory"}
    assert report.inserted == 2


def test_unsupported_files_are_reported_as_skipped(kb: KnowledgeBase, tmp_path: Path) -> None:
    from groundkb.serve.render import report_text

    docs = _folder(tmp_path)
    (docs / "notes.txt").write_text("plain text")
    report = kb.ingest(docs, source="docs")
    assert report.skipped == ("notes.txt",) and report.ok
    assert (
        "skipped 1 file(s) of types no loader reads (.txt 1): notes.txt"
        " (.txt is read with --loader rst or --loader markdown)"
    ) in report_text(report)


def test_refs_outside_the_ingested_folder_are_refused_alike_whether_or_not_they_exist(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.yaml"
    outside.write_text("Secret:\n  type: object\n  properties: {password: {type: string}}\n")
    api = tmp_path / "api"
    api.mkdir()
    ops = {
        "/a": "../secret.yaml#/Secret",
        "/b": "../missing.yaml#/Secret",
        "/c": str(outside) + "#/Secret",
    }
    paths = "".join(
        f"  {p}:\n    post:\n      requestBody:\n        content:\n          application/json:\n"
        f"            schema: {{$ref: '{ref}'}}\n      responses: {{}}\n"
        for p, ref in ops.items()
    )
    (api / "spec.yaml").write_text(_spec("paths:\n" + paths))
    report = kb.ingest(api, source="api")
    messages = sorted(e.message for e in report.errors)
    assert len(messages) == 3
    assert len({m.split(": ", 1)[1] for m in messages}) == 1  # one wording for all three
    assert all("outside the ingested folder" in m for m in messages)
    assert "password" not in kb.get("t:POST /a").content

    settings = kb.settings.replace(ref_paths=str(tmp_path))
    with KnowledgeBase.open(tmp_path / "allowed.db", settings) as allowed:
        report = allowed.ingest(api, source="api")
        assert "password" in allowed.get("t:POST /a").content
        assert [e.message for e in report.errors if "missing" in e.message]


def test_a_ref_chain_cut_at_64_hops_is_reported_and_paths_need_a_slash(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    schemas = "".join(f"    S{i}: {{$ref: '#/components/schemas/S{i + 1}'}}\n" for i in range(80))
    text = _spec(
        "paths:\n"
        "  /a:\n    post:\n      requestBody:\n        content:\n          application/json:\n"
        "            schema: {$ref: '#/components/schemas/S0'}\n      responses: {}\n"
        "  nosl:\n    get: {summary: no slash, responses: {}}\n"
        "  x-extension: {note: not a path}\n"
        "components:\n  schemas:\n" + schemas + "    S80: {type: object}\n"
    )
    (tmp_path / "chain.yaml").write_text(text)
    report = kb.ingest(tmp_path / "chain.yaml", source="api")
    problems = {(e.field, e.message) for e in report.errors}
    assert ("/paths/nosl", "a path must start with '/'; skipped") in problems
    assert any("a chain of more than 64 references; cut" in m for _, m in problems)
    assert [d.id for d in kb.list_documents()] == ["chain:POST /a"]
