"""The Store contract, run against every backend (see store/base.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from groundkb.analyze.chunk import chunk_hash_for
from groundkb.errors import Conflict, IndexMismatch
from groundkb.models import Chunk, Document, Filters, Source
from groundkb.store import BACKENDS, Store, open_store
from groundkb.store.base import KeywordQuery

WEIGHTS = {"title": 10.0, "aliases": 8.0, "keywords": 5.0, "header": 3.0, "body": 1.0}


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"{request.param}://{tmp_path / 'kb.db'}")
    s.put_source(Source("s"))
    s.put_source(Source("t"))
    yield s
    s.close()


def _doc(doc_id: str, text: str, source: str = "s", **kw: object) -> tuple[Document, list[Chunk]]:
    """A document with one chunk per paragraph."""
    doc = Document(id=doc_id, source=source, title=str(kw.pop("title", doc_id)), content=text, **kw)  # type: ignore[arg-type]
    paragraphs = text.split("\n\n")
    return doc, [
        Chunk(doc_id, i, p, doc.title, chunk_hash_for(doc, doc.title, p))
        for i, p in enumerate(paragraphs)
    ]


def test_write_then_read_round_trips(store: Store) -> None:
    doc, chunks = _doc("a", "Alpha text about widgets.\n\nSecond paragraph.", keywords=("k1",))
    r = store.write(doc, chunks)
    assert r.status == "inserted" and r.chunks_written == len(chunks) == 2
    got = store.get_document("a")
    assert got is not None and got.keywords == ("k1",) and got.content == doc.content
    assert [c.id for c in store.get_chunks("a")] == ["a#0", "a#1"]


def test_unchanged_chunks_are_not_rewritten_and_stale_ones_deleted(store: Store) -> None:
    doc, chunks = _doc("a", "one\n\ntwo\n\nthree")
    store.write(doc, chunks)
    doc2, chunks2 = _doc("a", "one\n\nTWO")
    r = store.write(doc2, chunks2)
    assert (r.status, r.chunks_written, r.chunks_deleted) == ("updated", 1, 1)
    assert [c.text for c in store.get_chunks("a")] == ["one", "TWO"]
    r = store.write(doc2, chunks2)
    assert (r.status, r.chunks_written) == ("unchanged", 0)


def test_keyword_search_ranks_title_over_body_and_filters(store: Store) -> None:
    store.write(*_doc("t", "nothing relevant", title="Widgets guide", type="guide"))
    store.write(*_doc("b", "widgets widgets in the body", type="page", category="c"))
    store.write(*_doc("x", "widgets elsewhere", source="t", type="guide"))
    # Queries carry index terms: prose is stored stemmed ("widgets" -> "widget").
    q = KeywordQuery(clauses=[[("widget",)]], weights=WEIGHTS)
    hits = store.keyword_search(q)
    assert hits[0].doc_id == "t" and {h.doc_id for h in hits} == {"t", "b", "x"}
    assert hits[0].fields["title"] == "widget guide"
    only = store.keyword_search(KeywordQuery([[("widget",)]], WEIGHTS, Filters(types=("page",))))
    assert [h.doc_id for h in only] == ["b"]
    src = store.keyword_search(KeywordQuery([[("widget",)]], WEIGHTS, Filters(sources=("t",))))
    assert [h.doc_id for h in src] == ["x"]


def test_phrases_match_in_order_only(store: Store) -> None:
    store.write(*_doc("a", "quick links here"))
    store.write(*_doc("b", "links are quick"))
    hits = store.keyword_search(KeywordQuery([[("quick", "link")]], WEIGHTS))
    assert [h.doc_id for h in hits] == ["a"]


def test_ids_are_owned_by_one_source(store: Store) -> None:
    store.write(*_doc("a", "text"))
    with pytest.raises(Conflict):
        store.write(*_doc("a", "text", source="t"))


def test_delete_is_idempotent_and_cleans_the_index(store: Store) -> None:
    store.write(*_doc("a", "zebra"))
    assert store.delete_documents(["a", "missing"]) == 1
    assert store.delete_documents(["a"]) == 0
    assert store.keyword_search(KeywordQuery([[("zebra",)]], WEIGHTS)) == []
    assert "zebra" not in store.vocabulary()


def test_generation_changes_on_every_write(store: Store) -> None:
    g = store.generation()
    store.write(*_doc("a", "x"))
    assert store.generation() != g


def test_vocabulary_counts_chunks(store: Store) -> None:
    store.write(*_doc("a", "apple\n\napple pie"))
    store.write(*_doc("b", "apple"))
    assert store.vocabulary()["apple"] == 3
    assert store.chunk_count() == 3


def test_sources_report_counts(store: Store) -> None:
    store.write(*_doc("a", "x\n\ny"))
    info = {i.source.name: i for i in store.sources()}
    assert (info["s"].documents, info["s"].chunks) == (1, 2)
    assert store.delete_source("s") == 1 and store.get_document("a") is None


def test_index_from_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    open_store(str(path)).close()
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(IndexMismatch, match="schema version 999"):
        open_store(str(path))
