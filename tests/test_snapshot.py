"""Derived data kept between processes (``search/snapshot.py``): a new handle on an
unchanged index reads it back instead of building it, and never reads what another
content, another view or an untrusted file holds."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.search import snapshot

from .conftest import EXAMPLES

ENTRY = """entries:
  - id: cmd-gw-reports-export
    type: command
    title: Export Reports
    command: helios gw reports export
    category: developer-console
    summary: Export every report of the workspace as CSV
    content: |
      Exports every report of the workspace as CSV.

      **Syntax:**
      ```
      helios gw reports export
      ```
    aliases: [helios gw reports export]
"""


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[str]]:
    """Snapshots in a folder of the test's own, kept whatever the build took; yields the
    change tokens the derived data was built for."""
    monkeypatch.setenv("GROUNDKB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(snapshot, "KEEP_MIN_S", 0.0)
    built: list[str] = []
    real = snapshot.build_derived

    def build(store: object, token: str) -> object:
        built.append(token)
        return real(store, token)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot, "build_derived", build)
    yield built


def _kb(db: Path) -> KnowledgeBase:
    return KnowledgeBase.open(db, Settings(synonyms=str(EXAMPLES / "synonyms.txt")))


def _answers(kb: KnowledgeBase) -> list[tuple[str, str, list[str]]]:
    out = []
    for q in ("helios gw users list", "how do I export reports", "helios gw reports exprt"):
        r = kb.search(q, limit=3)
        out.append((r.verdict.kind, r.verdict.reason, [h.doc_id for h in r.hits]))
    return out


def _ingested(db: Path) -> list[tuple[str, str, list[str]]]:
    with _kb(db) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
        assert kb.ingest(EXAMPLES / "entries", source="commands").ok
        return _answers(kb)


def test_a_new_handle_on_an_unchanged_index_reads_the_derived_data_back(
    builds: list[str], tmp_path: Path
) -> None:
    db = tmp_path / "kb.db"
    first = _ingested(db)
    assert len(builds) == 1
    files = list((tmp_path / "cache" / "derived").glob("*.pickle"))
    assert len(files) == 1 and files[0].stat().st_mode & 0o077 == 0  # the owner's only
    with _kb(db) as kb:  # as a fresh process would
        assert _answers(kb) == first
    assert len(builds) == 1


def test_a_change_from_another_handle_is_never_answered_from_an_older_snapshot(
    builds: list[str], tmp_path: Path
) -> None:
    db = tmp_path / "kb.db"
    _ingested(db)
    entries = tmp_path / "more"
    entries.mkdir()
    (entries / "export.yaml").write_text(ENTRY, encoding="utf-8")
    with _kb(db) as writer:
        assert writer.ingest(entries, source="more").ok
    with _kb(db) as kb:
        r = kb.search("helios gw reports export", limit=3)
        assert r.verdict.kind == "answer" and r.hits[0].doc_id == "cmd-gw-reports-export"
    assert len(builds) == 2  # the first index, then the changed one
    with _kb(db) as kb:
        kb.set_source_enabled("more", False)
    with _kb(db) as kb:  # a disabled source is no command, nor a did-you-mean
        r = kb.search("helios gw reports export", limit=3)
        assert all(h.doc_id != "cmd-gw-reports-export" for h in r.hits)
    with _kb(db) as kb:
        kb.search("helios gw reports export", limit=3)
    assert len(builds) == 3  # the last search read the one before's snapshot


def test_a_snapshot_others_may_write_or_that_does_not_read_back_is_built_again(
    builds: list[str], tmp_path: Path
) -> None:
    db = tmp_path / "kb.db"
    first = _ingested(db)
    (kept,) = (tmp_path / "cache" / "derived").glob("*.pickle")
    os.chmod(kept, 0o666)
    with _kb(db) as kb:
        assert _answers(kb) == first
    assert len(builds) == 2
    kept.write_bytes(b"not a pickle")
    os.chmod(kept, 0o600)
    with _kb(db) as kb:
        assert _answers(kb) == first
    assert len(builds) == 3
    with _kb(db) as kb:  # the rebuilt one was kept again, whole
        assert _answers(kb) == first
    assert len(builds) == 3


def test_only_the_most_recently_used_snapshots_are_kept(
    builds: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshot, "KEEP_FILES", 2)
    for name in ("a", "b", "c"):
        with _kb(tmp_path / f"{name}.db") as kb:
            assert kb.ingest(EXAMPLES / "entries", source="commands").ok
            kb.search("helios gw users list")
    assert len(list((tmp_path / "cache" / "derived").glob("*.pickle"))) == 2


def test_an_index_in_memory_keeps_nothing_between_processes(
    builds: list[str], tmp_path: Path
) -> None:
    with KnowledgeBase.open(":memory:", Settings()) as kb:
        assert kb.store.content_token() is None
        assert kb.ingest(EXAMPLES / "entries", source="commands").ok
        assert kb.search("helios gw users list").verdict.kind == "answer"
    assert len(builds) == 1
    assert not list((tmp_path / "cache").glob("derived/*.pickle"))


def test_a_document_summary_reads_back_whole_from_a_snapshot() -> None:
    import pickle

    from groundkb.store.base import DocSummary

    every = DocSummary(
        "stripe:POST /v1/refunds", "stripe", "api", "Refunds", "Create a refund",
        "Refund a charge", ("refund",), ("PostRefunds",), "", "https://x/refunds",
        "openapi.json", "create",
    )  # fmt: skip
    assert pickle.loads(pickle.dumps(every, protocol=pickle.HIGHEST_PROTOCOL)) == every
