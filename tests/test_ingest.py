"""Incremental ingest and bad input, on real SQLite files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from groundkb import KnowledgeBase
from groundkb.errors import InvalidInput

from .conftest import EXAMPLES


def _copy_docs(tmp_path: Path) -> Path:
    dst = tmp_path / "docs"
    shutil.copytree(EXAMPLES / "docs", dst)
    return dst


def test_reingest_of_unchanged_docs_writes_nothing(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _copy_docs(tmp_path)
    first = kb.ingest(docs, source="docs")
    assert (first.inserted, first.updated, first.deleted) == (8, 0, 0)
    writes: list[str] = []
    real_write = kb.store.write
    monkeypatch.setattr(kb.store, "write", lambda d, c: writes.append(d.id) or real_write(d, c))
    again = kb.ingest(docs, source="docs")
    assert (again.inserted, again.updated, again.unchanged, again.deleted) == (0, 0, 8, 0)
    assert again.chunks_written == 0
    # Only the source row was touched: no document or chunk write happened.
    assert writes == []


def test_an_unchanged_file_is_read_once(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import groundkb.ingest as ingest

    docs = _copy_docs(tmp_path)
    kb.ingest(docs, source="docs")
    reads: list[str] = []
    real = ingest._read

    def counting(file: Path) -> bytes:
        reads.append(file.name)
        return real(file)

    monkeypatch.setattr(ingest, "_read", counting)
    page = docs / "concepts" / "workspace.md"
    page.write_text(page.read_text() + "\nOne more line.\n")
    r = kb.ingest(docs, source="docs")
    assert (r.updated, r.unchanged) == (1, 7)
    # Each file once to choose its loader; only the changed one again to load it.
    assert sorted(reads) == sorted([*(f.name for f in docs.rglob("*.md")), "workspace.md"])


def test_editing_one_section_rewrites_only_that_chunk(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    kb.ingest(docs, source="docs")
    before = {c.index: c.chunk_hash for c in kb.chunks("concepts/workspace")}
    page = docs / "concepts" / "workspace.md"
    page.write_text(page.read_text().replace("choose **Share**", "choose **Share with**"))
    r = kb.ingest(docs, source="docs")
    assert (r.inserted, r.updated, r.unchanged, r.deleted) == (0, 1, 7, 0)
    assert r.chunks_written == 1
    after = {c.index: c.chunk_hash for c in kb.chunks("concepts/workspace")}
    assert [i for i in after if after[i] != before.get(i)] == [2]


def test_removed_files_and_sections_are_deleted(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    kb.ingest(docs, source="docs")
    (docs / "widgets" / "recent.md").unlink()
    page = docs / "concepts" / "workspace.md"
    page.write_text(page.read_text().split("## Sharing")[0])
    r = kb.ingest(docs, source="docs")
    assert r.deleted == 1 and r.updated == 1
    assert [c.index for c in kb.chunks("concepts/workspace")] == [0, 1]
    assert kb.search("recent widget").hits == () or all(
        h.doc_id != "widgets/recent" for h in kb.search("recent widget").hits
    )
    assert kb.search("sharing a workspace invite people").hits[0].chunk_id != "concepts/workspace#2"


def test_new_file_is_inserted(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    kb.ingest(docs, source="docs")
    (docs / "concepts" / "tags.md").write_text("# Tags\n\nTags group notes across workspaces.\n")
    r = kb.ingest(docs, source="docs")
    assert (r.inserted, r.unchanged) == (1, 8)
    assert kb.search("tags").hits[0].doc_id == "concepts/tags"


def test_bad_files_are_reported_and_the_rest_is_ingested(kb: KnowledgeBase, tmp_path: Path) -> None:
    d = tmp_path / "bad"
    d.mkdir()
    (d / "good.md").write_text("# Good\n\nFine page about gardening.\n")
    (d / "latin1.md").write_bytes("# Caf\xe9\n\ncaf\xe9 menu\n".encode("latin-1"))
    (d / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (d / "front.md").write_text("---\ntitle: [unclosed\n---\n# X\n\ntext\n")
    (d / "unclosed.md").write_text("---\ntitle: Never closed\n\n# X\n")
    (d / "entries.json").write_text(
        '[{"id": "a", "type": "guide"}, {"id": "b", "type": "guide",'
        ' "title": "B", "category": "c", "content": "Bee keeping"}]'
    )
    (d / "broken.yaml").write_text("entries:\n  - id: x\n    title: [oops\n")
    (d / "dup.json").write_text(
        '{"id": "b", "type": "guide", "title": "B2", "category": "c", "content": "dup"}'
    )
    r = kb.ingest(d, source="mixed")
    messages = [str(e) for e in r.errors]
    assert any(m.startswith("latin1.md") and "UTF-8" in m for m in messages)
    assert any(m.startswith("binary.md") and "binary" in m for m in messages)
    assert any(m.startswith("front.md [front matter]") and "line" in m for m in messages)
    assert any(m.startswith("unclosed.md [front matter]") for m in messages)
    assert any(m == "entries.json [[0].title]: is required" for m in messages)
    assert any(m == "entries.json [[0].content]: is required" for m in messages)
    assert any(m.startswith("broken.yaml") and "invalid YAML at line" in m for m in messages)
    # Files are read in name order: dup.json claims 'b' first, entries.json repeats it.
    assert "entries.json [id]: duplicate id 'b' (also in dup.json)" in messages
    assert {h.doc_id for h in kb.search("gardening").hits} == {"good"}
    assert kb.get("b").title == "B2"
    assert r.inserted == 2 and not r.ok


def test_unreadable_file_is_reported(kb: KnowledgeBase, tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "ok.md").write_text("# Ok\n\ntext")
    (d / "gone.md").symlink_to(tmp_path / "missing-target.md")
    r = kb.ingest(d, source="s")
    assert [e.path for e in r.errors] == ["gone.md"]
    assert "cannot read" in r.errors[0].message
    assert r.inserted == 1


def test_a_file_that_breaks_keeps_its_previous_documents(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    kb.ingest(docs, source="docs")
    (docs / "concepts" / "notes.md").write_bytes(b"# Notes\n\n\xff\xfe broken")
    r = kb.ingest(docs, source="docs")
    assert r.errors and r.deleted == 0
    assert kb.get("concepts/notes").title == "Notes"
    # The broken file is parsed again next time, so the error keeps being reported.
    assert kb.ingest(docs, source="docs").errors


def test_ids_belong_to_one_source(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = _copy_docs(tmp_path)
    kb.ingest(docs, source="docs")
    r = kb.ingest(docs, source="other")
    assert r.inserted == 0 and len(r.errors) == 8
    assert "already belongs to source 'docs'" in r.errors[0].message


def test_delete_source_removes_its_documents(kb: KnowledgeBase, tmp_path: Path) -> None:
    kb.ingest(_copy_docs(tmp_path), source="docs")
    assert kb.delete(source="docs") == 8
    assert kb.stats().documents == 0 and kb.stats().chunks == 0
    assert kb.search("workspace").hits == ()


def test_missing_path_and_unsupported_file_are_input_errors(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        kb.ingest(tmp_path / "nope", source="s")
    (tmp_path / "x.exe").write_bytes(b"MZ")
    with pytest.raises(InvalidInput, match="unsupported file type"):
        kb.ingest(tmp_path / "x.exe", source="s")


def test_entry_fields_are_kept(commands_kb: KnowledgeBase) -> None:
    doc = commands_kb.get("cmd-gw-users-list")
    assert doc.type == "command" and doc.category == "developer-console"
    assert doc.subcategory == "google-workspace"
    assert "show all users" in doc.aliases and "directory" in doc.keywords
    assert doc.examples[0].code == "helios gw users list"
    assert doc.related_ids == ("cmd-gw-users-get",)
    assert doc.updated_at == "2025-12-17T00:00:00Z"
    assert doc.metadata["generated_from"] == "generated:console"
