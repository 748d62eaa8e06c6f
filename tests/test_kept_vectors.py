"""The SQLite store's matrix of vectors kept between processes (``store/kept_vectors.py``):
a new handle on unchanged content maps it instead of reading every vector again, and
never answers from what another content, another embedder or an untrusted file holds."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.store import kept_vectors, sqlite_vectors

from .conftest import EXAMPLES

QUESTIONS = ("how do I invite a user", "rotate an API key", "export reports as CSV")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[str]]:
    """Matrices kept in a folder of the test's own, however fast they were read; yields
    the change tokens for which the vectors were read from the index."""
    monkeypatch.setenv("GROUNDKB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kept_vectors, "KEEP_MIN_S", 0.0)
    read: list[str] = []
    real = sqlite_vectors.load

    def load(query: object, token: str, *args: object) -> object:
        read.append(token)
        return real(query, token, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite_vectors, "load", load)
    yield read


def _kb(db: Path, embedder: str = "hashing") -> KnowledgeBase:
    settings = Settings(db=str(db), embedder=embedder, retrieval="hybrid", min_vector_hit=-1.0)
    return KnowledgeBase.open(settings=settings)


def _nearest(kb: KnowledgeBase) -> list[list[tuple[str, float]]]:
    return [[(h.chunk_id, h.score) for h in kb.search(q, mode="vector").hits] for q in QUESTIONS]


def _files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "vectors").glob("*"))


def _ingested(db: Path, docs: Path = EXAMPLES / "docs") -> list[list[tuple[str, float]]]:
    with _kb(db) as kb:
        assert kb.ingest(docs, source="docs").ok
        return _nearest(kb)


def test_a_new_handle_on_unchanged_content_maps_the_kept_matrix(
    reads: list[str], tmp_path: Path
) -> None:
    db = tmp_path / "kb.db"
    first = _ingested(db)
    assert len(reads) == 1 and first[0]
    files = _files(tmp_path)
    assert [f.name.split(".", 1)[1] for f in files] == ["npy", "rows.npz"]
    assert all(f.stat().st_mode & 0o077 == 0 for f in files)  # the owner's only
    with _kb(db) as kb:  # as a fresh process would
        assert _nearest(kb) == first
        assert isinstance(kb.store._vectors().matrix, np.memmap)  # type: ignore[attr-defined]
    assert len(reads) == 1


def test_a_change_from_another_handle_is_never_answered_from_an_older_matrix(
    reads: list[str], tmp_path: Path
) -> None:
    db, docs = tmp_path / "kb.db", tmp_path / "docs"
    shutil.copytree(EXAMPLES / "docs", docs)
    _ingested(db, docs)
    (docs / "keys.md").write_text(
        "# Rotate an API key\n\nRotate an API key from Settings, then API keys.\n",
        encoding="utf-8",
    )
    with _kb(db) as writer:
        assert writer.ingest(docs, source="docs").ok
    with _kb(db) as kb:
        found = [h.doc_id for h in kb.search("rotate an API key", mode="vector", limit=50).hits]
        assert "keys" in found
    assert len(reads) == 2  # the first content, then the changed one
    with _kb(db) as kb:
        assert "keys" in [h.doc_id for h in kb.search("rotate an API key", mode="vector").hits]
    assert len(reads) == 2


def test_a_matrix_others_may_write_or_that_does_not_read_back_is_read_again(
    reads: list[str], tmp_path: Path
) -> None:
    db = tmp_path / "kb.db"
    first = _ingested(db)
    matrix, rows = _files(tmp_path)
    os.chmod(matrix, 0o666)
    with _kb(db) as kb:
        assert _nearest(kb) == first
    assert len(reads) == 2
    os.chmod(matrix, 0o600)
    matrix.write_bytes(matrix.read_bytes()[:200])  # torn: fewer rows than ids
    with _kb(db) as kb:
        assert _nearest(kb) == first
    assert len(reads) == 3
    rows.unlink()
    with _kb(db) as kb:
        assert _nearest(kb) == first
    assert len(reads) == 4
    with _kb(db) as kb:  # the last read kept it again, whole
        assert _nearest(kb) == first
    assert len(reads) == 4


def test_only_a_stores_first_load_keeps_a_matrix_and_only_the_most_recent_stay(
    reads: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kept_vectors, "KEEP_SETS", 2)
    docs = tmp_path / "docs"
    shutil.copytree(EXAMPLES / "docs", docs)
    with _kb(tmp_path / "kb.db") as kb:
        for name in ("a", "b", "c"):  # each ingest changes the content
            (docs / f"{name}.md").write_text(f"# Page {name}\n\nAbout {name}.\n")
            assert kb.ingest(docs, source="docs").ok
            _nearest(kb)
    assert len(reads) == 3 and len(_files(tmp_path)) == 2  # one matrix: the first load's
    for name in ("x", "y", "z"):
        _ingested(tmp_path / f"{name}.db")
    assert len(_files(tmp_path)) == 4  # two matrices, each with its rows


def test_kept_matrices_stay_within_a_byte_budget_but_the_newest_always_stays(
    reads: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingested(tmp_path / "a.db")
    (matrix,) = (p for p in _files(tmp_path) if p.suffix == ".npy")
    size = matrix.stat().st_size
    monkeypatch.setattr(kept_vectors, "KEEP_BYTES", 2 * size)  # room for two
    _ingested(tmp_path / "b.db")
    _ingested(tmp_path / "c.db")
    assert len(_files(tmp_path)) == 4 and not matrix.exists()  # the oldest made room
    monkeypatch.setattr(kept_vectors, "KEEP_BYTES", size // 2)  # none fits
    _ingested(tmp_path / "d.db")
    kept = _files(tmp_path)
    assert len(kept) == 2  # the matrix just written, with its rows
    with _kb(tmp_path / "d.db") as kb:  # and a new handle maps it
        _nearest(kb)
    assert len(reads) == 4


def test_a_kept_matrix_of_another_dimension_is_not_read(reads: list[str], tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    _ingested(db)
    with _kb(db) as kb:
        content = kb.store.content_token()
        embedder = kb.store.embedder()
    assert content is not None and embedder is not None
    where = kept_vectors.paths(content, embedder)
    assert kept_vectors.read(where, "t", embedder[1]) is not None
    assert kept_vectors.read(where, "t", embedder[1] // 2) is None
    assert kept_vectors.paths(content, (embedder[0], embedder[1] // 2)) != where


def test_an_index_in_memory_keeps_no_matrix(reads: list[str], tmp_path: Path) -> None:
    with _kb(Path(":memory:")) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
        assert _nearest(kb)[0]
    assert not (tmp_path / "cache" / "vectors").exists()
