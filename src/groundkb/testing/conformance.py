"""The Store contract as a test class every backend runs (see ``store/base.py``).

Subclass :class:`StoreConformance` in a test module, with a class name pytest collects,
and give it a ``location`` fixture: a fresh, empty (and, for PostgreSQL, migrated)
database each time::

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def location(self, tmp_path):
            return f"sqlite:///{tmp_path / 'kb.db'}"

The suite opens stores with :func:`groundkb.store.open_store`; a second store on the
same location stands for another process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from ..analyze.chunk import chunk_hash_for
from ..errors import Conflict, GroundKBError, IndexMismatch, InvalidInput
from ..models import Chunk, Document, Example, Filters, Source
from ..store import Store, open_store
from ..store.base import KeywordQuery

WEIGHTS = {"title": 10.0, "aliases": 8.0, "keywords": 5.0, "header": 3.0, "body": 1.0}


def make_doc(doc_id: str, text: str, source: str = "s", **kw: Any) -> tuple[Document, list[Chunk]]:
    """A document with one chunk per paragraph (blank-line separated)."""
    doc = Document(id=doc_id, source=source, title=str(kw.pop("title", doc_id)), content=text, **kw)
    return doc, [
        Chunk(doc_id, i, p, doc.title, chunk_hash_for(doc, doc.title, p))
        for i, p in enumerate(text.split("\n\n"))
    ]


def unit(*values: float) -> bytes:
    v = np.array(values, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32).tobytes()


def query(*phrases: str, limit: int = 50, **filters: tuple[str, ...]) -> KeywordQuery:
    return KeywordQuery([tuple(p.split()) for p in phrases], WEIGHTS, Filters(**filters), limit)


class StoreConformance:
    """Every contract of ``Store``; subclasses provide the ``location`` fixture."""

    @pytest.fixture
    def store(self, location: str) -> Iterator[Store]:
        s = open_store(location)
        s.put_source(Source("s"))
        s.put_source(Source("t"))
        yield s
        s.close()

    @pytest.fixture
    def other(self, location: str, store: Store) -> Iterator[Store]:
        """A second store on the same database, as another process would have."""
        s = open_store(location)
        yield s
        s.close()

    # ------------------------------------------------------------------ writes
    def test_a_written_document_reads_back_equal(self, store: Store) -> None:
        doc, chunks = make_doc(
            "a",
            "Alpha text about widgets.\n\nSecond paragraph, naïve 'quotes' and \\ backslash.",
            type="command",
            category="cat",
            subcategory="sub",
            summary="sum",
            keywords=("k1", "k 2"),
            aliases=("al",),
            examples=(Example("run a", "does a", "out"),),
            related_ids=("b",),
            uri="https://x/a",
            origin="a.md",
            origin_hash="oh",
            content_hash="ch",
            updated_at="2026-01-01T00:00:00Z",
            metadata={"command": "tool a", "n": 3},
        )
        r = store.write(doc, chunks)
        assert (r.status, r.chunks_written, r.chunks_deleted) == ("inserted", 2, 0)
        assert store.documents(["a"]) == [doc]
        assert store.chunks(["a"]) == chunks

    def test_unchanged_chunks_are_kept_and_stale_ones_deleted(self, store: Store) -> None:
        store.write(*make_doc("a", "one\n\ntwo\n\nthree"))
        doc2, chunks2 = make_doc("a", "one\n\nTWO")
        r = store.write(doc2, chunks2)
        assert (r.status, r.chunks_written, r.chunks_deleted) == ("updated", 1, 1)
        assert [c.text for c in store.chunks(["a"])] == ["one", "TWO"]
        r = store.write(doc2, chunks2)
        assert (r.status, r.chunks_written, r.chunks_deleted) == ("unchanged", 0, 0)

    def test_a_chunk_out_of_place_is_refused(self, store: Store) -> None:
        doc, chunks = make_doc("a", "one\n\ntwo")
        with pytest.raises(InvalidInput):
            store.write(doc, chunks[1:])
        assert store.documents(["a"]) == []

    def test_a_document_of_an_unknown_source_is_refused(self, store: Store) -> None:
        with pytest.raises(InvalidInput, match="nowhere"):
            store.write(*make_doc("a", "x", source="nowhere"))
        assert store.count_documents(Filters()) == 0

    def test_an_id_belongs_to_one_source(self, store: Store) -> None:
        store.write(*make_doc("a", "text"))
        with pytest.raises(Conflict):
            store.write(*make_doc("a", "other text", source="t"))
        assert store.owners(["a", "zz"]) == {"a": "s"}
        assert [c.text for c in store.chunks(["a"])] == ["text"]

    def test_deleting_is_idempotent_and_cleans_the_index(self, store: Store) -> None:
        store.write(*make_doc("a", "zebra\n\nzebra crossing"))
        store.write(*make_doc("b", "zebra"))
        assert store.delete_documents(["a", "missing", "a"]) == 1
        assert store.delete_documents(["a"]) == 0
        assert [m.doc_id for m in store.keyword_candidates(query("zebra"))] == ["b"]
        stats = store.term_stats(["zebra", "crossing"])
        assert (stats.chunks, stats.df["zebra"], stats.df["crossing"]) == (1, 1, 0)

    def test_deleting_a_source_deletes_its_documents(self, store: Store) -> None:
        store.write(*make_doc("a", "x\n\ny"))
        store.write(*make_doc("b", "x", source="t"))
        assert store.delete_source("s") == 1
        assert store.delete_source("s") == 0
        assert store.documents(["a", "b"])[0].id == "b"
        assert [i.source.name for i in store.sources()] == ["t"]
        assert store.term_stats(["x"]).df["x"] == 1

    def test_sources_are_listed_by_name_with_counts(self, store: Store) -> None:
        store.write(*make_doc("a", "x\n\ny"))
        store.put_source(Source("s", "docs", "/tmp/docs", ("g1", "g2")))  # idempotent upsert
        info = {i.source.name: i for i in store.sources()}
        assert [i.source.name for i in store.sources()] == ["s", "t"]
        assert info["s"].source == Source("s", "docs", "/tmp/docs", ("g1", "g2"))
        assert (info["s"].documents, info["s"].chunks, info["t"].documents) == (1, 2, 0)
        assert store.doc_states("s")["a"].origin == ""
        assert store.doc_states("nowhere") == {}

    def test_documents_and_chunks_come_back_in_the_order_asked(self, store: Store) -> None:
        for name in ("a", "b", "c"):
            store.write(*make_doc(name, f"{name} one\n\n{name} two"))
        assert [d.id for d in store.documents(["c", "zz", "a", "c"])] == ["c", "a"]
        assert [c.id for c in store.chunks(["b", "a", "zz"])] == ["b#0", "b#1", "a#0", "a#1"]
        got = store.chunk_matches(["c#1", "a#0", "zz#0", "a#9"])
        assert [m.chunk_id for m in got] == ["c#1", "a#0"]
        assert got[0].fields["body"] == "c two" and got[0].doc.id == "c" and got[0].score == 0
        with pytest.raises(InvalidInput):
            store.chunk_matches(["no-index"])

    def test_batched_reads_return_only_what_the_filters_allow(self, store: Store) -> None:
        store.write(*make_doc("a", "one\n\ntwo", type="guide"))
        store.write(*make_doc("b", "three", source="t", type="command", category="cli"))
        only_t = Filters(sources=("t",))
        assert [d.id for d in store.documents(["a", "b"], only_t)] == ["b"]
        assert [c.id for c in store.chunks(["a", "b"], only_t)] == ["b#0"]
        assert [m.chunk_id for m in store.chunk_matches(["a#1", "b#0"], only_t)] == ["b#0"]
        guides = Filters(types=("guide",))
        assert [d.id for d in store.documents(["b", "a"], guides)] == ["a"]
        assert [c.id for c in store.chunks(["b", "a"], guides)] == ["a#0", "a#1"]
        nothing = Filters(sources=("nowhere",))
        assert store.documents(["a", "b"], nothing) == []
        assert store.chunks(["a", "b"], nothing) == []
        assert store.chunk_matches(["a#0", "b#0"], Filters(categories=("cli",)))[0].doc_id == "b"

    # --------------------------------------------------------------------- meta
    def test_meta_values_are_kept_replaced_and_removed(self, store: Store, other: Store) -> None:
        assert store.get_meta("disabled_sources") is None
        token = store.change_token()
        store.set_meta("disabled_sources", '["t"]')
        assert store.get_meta("disabled_sources") == '["t"]'
        assert other.get_meta("disabled_sources") == '["t"]'  # another process sees it
        assert store.change_token() != token
        other.set_meta("disabled_sources", "naïve 'quoted' \\ value")
        assert store.get_meta("disabled_sources") == "naïve 'quoted' \\ value"
        store.set_meta("disabled_sources", None)
        store.set_meta("disabled_sources", None)  # removing twice is fine
        assert other.get_meta("disabled_sources") is None

    def test_meta_keys_of_the_store_cannot_be_set(self, store: Store) -> None:
        store.set_embedder("m", 2)
        for key in ("embedder", "embedder_dimension", "schema_version", "tokenizer", " "):
            with pytest.raises(InvalidInput):
                store.set_meta(key, "x")
        assert store.embedder() == ("m", 2)
        assert store.get_meta("embedder") == "m"

    def test_the_change_token_changes_with_every_write_and_only_then(
        self, store: Store, other: Store
    ) -> None:
        """Tokens are compared per handle: each sees its own and others' writes."""
        mine, theirs = store.change_token(), other.change_token()
        assert store.change_token() == mine and other.change_token() == theirs
        store.write(*make_doc("a", "x"))
        assert store.change_token() != mine and other.change_token() != theirs
        mine, theirs = store.change_token(), other.change_token()
        other.delete_documents(["a"])
        assert store.change_token() != mine and other.change_token() != theirs
        mine = store.change_token()
        store.documents(["a"])
        store.term_stats(["x"])
        assert store.change_token() == mine

    def test_the_content_token_names_one_content_from_every_handle(
        self, store: Store, other: Store, location: str
    ) -> None:
        """What a cache kept between processes is keyed on: the same from every handle
        and after opening again, a new value with every write, never an old one back."""
        first = store.content_token()
        assert first is not None and other.content_token() == first
        store.documents(["a"])
        store.term_stats(["x"])
        assert store.content_token() == first
        again = open_store(location)
        try:
            assert again.content_token() == first  # opening is no change
        finally:
            again.close()
        seen = {first}
        for change in (
            lambda: store.write(*make_doc("a", "x")),
            lambda: other.set_meta("disabled_sources", '["t"]'),
            lambda: other.delete_documents(["a"]),
            lambda: store.write(*make_doc("a", "x")),  # the same content as before: a new name
        ):
            change()
            token = store.content_token()
            assert token is not None and token not in seen and other.content_token() == token
            seen.add(token)

    def test_stats_count_what_is_stored(self, store: Store) -> None:
        store.write(*make_doc("a", "x\n\ny", type="guide"))
        store.write(*make_doc("b", "z", type="command", source="t"))
        s = store.stats()
        assert (s.documents, s.chunks, s.sources, dict(s.by_type)) == (
            2,
            3,
            2,
            {"guide": 1, "command": 1},
        )
        assert s.backend == store.backend and s.size_bytes > 0

    # ----------------------------------------------------------------- filters
    def test_listing_pages_by_id_with_filters_and_counts(self, store: Store) -> None:
        ids = ["b", "a", "é", "B", "a-1", "c"]
        for i, doc_id in enumerate(ids):
            kind = "command" if i % 2 else "guide"
            store.write(*make_doc(doc_id, "x", type=kind, category=f"c{i % 3}"))
        every = [d.id for d in store.list_documents(Filters(), limit=100)]
        assert every == sorted(ids)
        page = store.list_documents(Filters(), limit=2, offset=2)
        assert [d.id for d in page] == sorted(ids)[2:4]
        commands = Filters(types=("command",))
        assert store.count_documents(commands) == 3
        assert all(d.type == "command" for d in store.list_documents(commands))
        both = Filters(types=("command", "guide"), categories=("c0", "c1"))
        assert store.count_documents(both) == len(store.list_documents(both)) == 4
        assert store.count_documents(Filters(sources=("t",))) == 0

    def test_metadata_of_every_document_the_filters_allow(self, store: Store) -> None:
        meta = {"method": "POST", "path": "/v1/widgets", "resources": ["widget"]}
        store.write(*make_doc("w", "x", type="api", title="Create a widget", metadata=meta))
        store.write(*make_doc("g", "y", source="t", title="A guide"))
        got = store.document_metadata(Filters(types=("api",)))
        assert [(d.id, d.source, d.type, d.title) for d in got] == [
            ("w", "s", "api", "Create a widget")
        ]
        assert dict(got[0].metadata) == meta
        assert [d.id for d in store.document_metadata(Filters())] == ["g", "w"]
        assert [d.metadata for d in store.document_metadata(Filters(sources=("t",)))] == [{}]

    def test_flagged_documents_are_those_whose_metadata_holds_the_key_as_true(
        self, store: Store
    ) -> None:
        for doc_id, source, flag in [
            ("b", "s", True),
            ("a", "s", True),
            ("c", "s", False),
            ("d", "s", "true"),  # a string is no flag
            ("e", "s", 1),  # nor is a number
            ("f", "t", True),
        ]:
            meta = {"deprecated": flag, "odd.key": flag}
            store.write(*make_doc(doc_id, "x", source=source, type="api", metadata=meta))
        store.write(*make_doc("g", "y", metadata={"deprecated": True}))  # a page
        store.write(*make_doc("h", "z", type="api"))  # no metadata at all
        api = Filters(types=("api",))
        assert store.flagged_documents(api, "deprecated") == ["a", "b", "f"]
        assert store.flagged_documents(Filters(), "deprecated") == ["a", "b", "f", "g"]
        assert store.flagged_documents(Filters(types=("api",), sources=("t",)), "deprecated") == [
            "f"
        ]
        assert store.flagged_documents(api, "odd.key") == ["a", "b", "f"]
        assert store.flagged_documents(api, "missing") == []
        store.write(*make_doc("a", "x", type="api", metadata={"deprecated": False}))
        assert store.flagged_documents(api, "deprecated") == ["b", "f"]

    def test_source_filters_apply_inside_every_query(self, store: Store) -> None:
        # Source t has many better matches: a store that filtered after taking its top
        # candidates or neighbours would return nothing of source s.
        store.set_embedder("test", 2)
        for i in range(30):
            store.write(*make_doc(f"t{i:02}", "gadget gadget gadget", source="t", title="Gadget"))
        store.write(*make_doc("s1", "a word about a gadget and more words", source="s"))
        store.put_vectors([(f"t{i:02}#0", unit(1, 0)) for i in range(30)])
        store.put_vectors([("s1#0", unit(1, 1))])
        only_s = store.keyword_candidates(query("gadget", limit=5, sources=("s",)))
        assert [m.doc_id for m in only_s] == ["s1"]
        both = store.keyword_candidates(query("gadget", limit=5, sources=("s", "t")))
        assert len(both) == 5 and {m.doc.source for m in both} == {"t"}
        near = store.nearest(unit(1, 0), Filters(sources=("s",)), 3)
        assert [c for c, _ in near] == ["s1#0"]
        assert store.list_documents(Filters(sources=("s",))) == [
            d for d in store.list_documents(Filters()) if d.source == "s"
        ]

    def test_the_visible_view_hides_sources_inside_every_read(
        self, store: Store, other: Store
    ) -> None:
        """The one mechanism for the sources a caller may see (disabled sources today):
        :class:`~groundkb.ops.visible.VisibleStore` narrows every read's filters, so the
        store applies it inside its queries and limits stay right; statistics stay
        whole."""
        from ..ops.visible import VisibleStore, write_disabled

        store.set_embedder("test", 2)
        for i in range(30):
            doc = make_doc(f"t{i:02}", "gadget gadget gizmo", source="t", title="Gadget")
            store.write(*doc)
        store.write(*make_doc("s1", "a word about a gadget and more words", source="s"))
        store.put_vectors([(f"t{i:02}#0", unit(1, 0)) for i in range(30)])
        store.put_vectors([("s1#0", unit(1, 1))])
        view = VisibleStore(store)
        assert view.count_documents(Filters()) == 31
        write_disabled(other, ["t"])  # another process disables t
        view.change_token()  # what a search does at its start
        assert view.disabled() == {"t"} and view.allowed() == frozenset({"s"})
        assert [m.doc_id for m in view.keyword_candidates(query("gadget", limit=5))] == ["s1"]
        assert [c for c, _ in view.nearest(unit(1, 0), Filters(), 3)] == ["s1#0"]
        assert [d.id for d in view.list_documents(Filters())] == ["s1"]
        assert view.count_documents(Filters()) == 1
        assert view.count_documents(Filters(sources=("t",))) == 0
        assert [d.id for d in view.documents(["t00", "s1"])] == ["s1"]
        assert [d.id for d in view.document_metadata(Filters())] == ["s1"]
        assert view.flagged_documents(Filters(), "absent") == []
        assert view.chunks(["t00"]) == []
        assert [m.chunk_id for m in view.chunk_matches(["t00#0", "s1#0"])] == ["s1#0"]
        assert view.similar_terms("gizmos", 1) == []
        assert [x.term for x in store.similar_terms("gizmos", 1)] == ["gizmo"]
        assert view.term_stats(["gadget"]).df["gadget"] == 31  # ranking is unchanged
        write_disabled(other, [])
        view.change_token()
        assert view.allowed() is None and view.count_documents(Filters()) == 31
        assert len(view.keyword_candidates(query("gadget", limit=5))) == 5

    def test_a_callers_view_reads_only_its_sources_and_their_words(
        self, store: Store, other: Store
    ) -> None:
        """Access control: a view for a caller who may read ``s`` only narrows every read
        inside the store's queries, and a word only ``t`` holds is unknown there
        (document frequency 0), so neither a hit, a suggestion nor a word the knowledge
        base "knows" betrays it. Disabling applies on top."""
        from ..ops.visible import VisibleStore, write_disabled

        store.set_embedder("test", 2)
        store.write(*make_doc("s1", "gadget manual", source="s", title="Gadget"))
        store.write(*make_doc("t1", "gadget zanzibar merger", source="t", title="Merger"))
        store.put_vectors([("s1#0", unit(1, 1)), ("t1#0", unit(1, 0))])
        view = VisibleStore(store, readable=frozenset({"s"}))
        view.change_token()
        assert view.restricted and view.allowed() == frozenset({"s"})
        assert [m.doc_id for m in view.keyword_candidates(query("gadget", limit=5))] == ["s1"]
        assert view.keyword_candidates(query("zanzibar", limit=5)) == []
        assert [c for c, _ in view.nearest(unit(1, 0), Filters(), 3)] == ["s1#0"]
        assert [d.id for d in view.documents(["t1", "s1"])] == ["s1"]
        assert view.count_documents(Filters(sources=("t",))) == 0
        assert view.similar_terms("zanzibr", 1) == []
        stats = view.term_stats(["gadget", "zanzibar", "merger", "nowhere"])
        assert stats.df == {"gadget": 2, "zanzibar": 0, "merger": 0, "nowhere": 0}
        assert store.term_stats(["zanzibar"]).df["zanzibar"] == 1  # the index is whole
        write_disabled(other, ["s"])
        view.change_token()
        assert view.allowed() == frozenset() and view.list_documents(Filters()) == []
        assert view.term_stats(["gadget"]).df["gadget"] == 0
        write_disabled(other, [])

    def test_type_and_category_filters_follow_document_updates(self, store: Store) -> None:
        store.write(*make_doc("a", "gadget", type="guide"))
        store.write(*make_doc("a", "gadget", type="command", category="cli"))
        for f in (Filters(types=("command",)), Filters(categories=("cli",))):
            found = store.keyword_candidates(KeywordQuery([("gadget",)], WEIGHTS, f))
            assert [m.doc_id for m in found] == ["a"]
        assert store.keyword_candidates(query("gadget", types=("guide",))) == []

    # ------------------------------------------------------- keyword candidates
    def test_candidates_come_best_first_title_over_body(self, store: Store) -> None:
        store.write(*make_doc("t", "nothing relevant", title="Widgets guide", type="guide"))
        store.write(*make_doc("b", "widgets widgets in the body", type="page", category="c"))
        store.write(*make_doc("o", "one widget among many other words in a longer body"))
        store.write(*make_doc("x", "widgets elsewhere", source="t", type="guide"))
        hits = store.keyword_candidates(query("widget"))
        assert [h.doc_id for h in hits][:2] == ["t", "b"]
        assert {h.doc_id for h in hits} == {"t", "b", "o", "x"}
        assert hits[0].fields["title"] == "widget guide" and hits[0].text == "nothing relevant"
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert len(store.keyword_candidates(query("widget", limit=2))) == 2

    def test_phrases_match_in_order_and_within_one_field(self, store: Store) -> None:
        store.write(*make_doc("a", "quick links here"))
        store.write(*make_doc("b", "links are quick"))
        store.write(*make_doc("c", "links to nowhere", title="Quick"))
        hits = store.keyword_candidates(query("quick link"))
        assert [h.doc_id for h in hits] == ["a"]

    def test_any_phrase_matches(self, store: Store) -> None:
        store.write(*make_doc("a", "alpha"))
        store.write(*make_doc("b", "beta gamma"))
        store.write(*make_doc("c", "delta"))
        hits = store.keyword_candidates(query("alpha", "beta gamma", "zeta"))
        assert {h.doc_id for h in hits} == {"a", "b"}

    def test_groups_find_the_chunks_holding_all_their_phrases(self, store: Store) -> None:
        store.write(*make_doc("a", "alpha and beta"))
        store.write(*make_doc("b", "alpha alone"))
        store.write(*make_doc("c", "beta gamma delta"))
        store.write(*make_doc("d", "zeta"))
        store.write(*make_doc("e", "gamma delta zeta"))
        store.write(*make_doc("x", "alpha beta elsewhere", source="t"))
        pairs = [(("alpha",), ("beta",)), (("gamma", "delta"), ("zeta",))]

        def found(
            *phrases: str, limit: int = 50, more: int = 50, **f: tuple[str, ...]
        ) -> list[str]:
            q = replace(query(*phrases, limit=limit, **f), together=pairs, together_limit=more)
            return [h.doc_id for h in store.keyword_candidates(q)]

        assert found("zeta")[:2] == ["d", "e"]  # the phrase's matches first, best first
        assert set(found("zeta")) == {"a", "d", "e", "x"}
        assert set(found()) == {"a", "e", "x"}
        assert set(found(sources=("s",))) == {"a", "e"}
        assert found("zeta", more=0) == ["d", "e"]
        assert len(found(more=1)) == 1
        assert found("beta gamma", limit=0, more=0) == []

    def test_no_phrase_or_no_limit_gives_no_candidates(self, store: Store) -> None:
        store.write(*make_doc("a", "alpha"))
        assert store.keyword_candidates(query()) == []
        assert store.keyword_candidates(query("alpha", limit=0)) == []

    def test_terms_are_matched_exactly_as_analyzed(self, store: Store) -> None:
        store.write(*make_doc("a", "l'état naïve C++ o'reilly back\\slash"))
        for term in ("état", "naïve", "reilly", "slash", "l"):
            assert [h.doc_id for h in store.keyword_candidates(query(term))] == ["a"], term
        assert store.keyword_candidates(query("etat")) == []

    def test_optimize_changes_no_candidate_and_writes_go_on(self, store: Store) -> None:
        for i in range(12):  # one write each: several segments in an FTS5 index
            body = f"widget {i} gadget {'widget ' * (i % 3)}setting number {i}"
            store.write(*make_doc(f"d{i}", body, title=f"Guide {i}", source="st"[i % 2]))

        def found() -> list[tuple[str, float]]:
            q = replace(query("widget", "gadget"), together=[(("setting",), ("number",))])
            q = replace(q, together_limit=5)
            return [(h.chunk_id, h.score) for h in store.keyword_candidates(q)]

        before = found()
        store.optimize()
        assert found() == before
        assert store.term_stats(["widget"]).df == {"widget": 12}
        store.write(*make_doc("late", "widget arrives late"))
        assert "late#0" in [c for c, _ in found()]

    def test_reading_ahead_changes_no_candidate(self, store: Store) -> None:
        for i in range(12):
            body = f"widget {i} gadget {'widget ' * (i % 3)}setting number {i}"
            store.write(*make_doc(f"d{i}", body, title=f"Guide {i}", source="st"[i % 2]))

        def found() -> list[tuple[str, float]]:
            q = replace(query("widget", "gadget", "number"), together=[(("setting",), ("d1",))])
            return [(h.chunk_id, h.score) for h in store.keyword_candidates(q)]

        before = found()
        store.similar_terms("widgte", 1)  # a process that warms up loads its vocabulary
        store.read_ahead(WEIGHTS)
        store.read_ahead(WEIGHTS, max_chunks=3)
        after = found()
        assert [c for c, _ in after] == [c for c, _ in before]
        assert [s for _, s in after] == pytest.approx([s for _, s in before], rel=1e-12)

    # --------------------------------------------------------------- term stats
    def test_term_stats_count_chunks_tokens_and_document_frequencies(self, store: Store) -> None:
        store.write(*make_doc("a", "apple\n\napple pie", title="Fruit"))
        store.write(*make_doc("b", "apple", title="Tree"))
        stats = store.term_stats(["apple", "pie", "fruit", "nothing"])
        assert stats.chunks == 3
        # tokens: title + body per chunk: 1+1, 1+2, 1+1
        assert stats.avg_length == pytest.approx(7 / 3)
        assert dict(stats.df) == {"apple": 3, "pie": 1, "fruit": 2, "nothing": 0}
        store.write(*make_doc("a", "pear", title="Fruit"))
        assert dict(store.term_stats(["apple", "pear", "pie"]).df) == {
            "apple": 1,
            "pear": 1,
            "pie": 0,
        }
        empty = store.term_stats([])
        assert (empty.chunks, dict(empty.df)) == (2, {})

    def test_documents_holding_count_each_document_once(self, store: Store) -> None:
        store.write(*make_doc("a", "apple\n\napple pie", title="Fruit"))
        store.write(*make_doc("b", "apple", title="Tree", source="t"))
        store.write(*make_doc("c", "pear", title="Fruit"))
        assert store.documents_holding(["apple", "fruit", "pie", "nothing"]) == {
            "apple": {"s": 1, "t": 1},  # three chunks, two documents
            "fruit": {"s": 2},
            "pie": {"s": 1},
            "nothing": {},
        }
        assert store.documents_holding(["apple"], Filters(sources=("t",))) == {"apple": {"t": 1}}
        assert store.documents_holding([]) == {}

    def test_similar_terms_are_nearest_first_then_by_term(self, store: Store) -> None:
        store.write(*make_doc("a", "workspace workspaces workplace worker\n\nworkspace"))
        found = store.similar_terms("workspaec", 2)  # a swap of neighbours is one edit
        assert [(s.term, s.edits, s.chunks) for s in found] == [("workspace", 1, 2)]
        assert [s.term for s in store.similar_terms("owrker", 1)] == ["worker"]
        # typo correction's question: only terms with the word's first letter
        assert store.similar_terms("owrker", 1, first_letter=True) == []
        found = store.similar_terms("workspaec", 2, first_letter=True)
        assert [(s.term, s.edits, s.chunks) for s in found] == [("workspace", 1, 2)]
        found = store.similar_terms("workplace", 2)
        assert [(s.term, s.edits) for s in found] == [("workplace", 0), ("workspace", 2)]
        store.delete_documents(["a"])
        assert store.similar_terms("workplace", 2) == []

    def test_similar_terms_come_only_from_chunks_the_filters_allow(self, store: Store) -> None:
        store.write(*make_doc("a", "workspace", source="s"))
        store.write(*make_doc("b", "workplace\n\nworkplace", source="t"))
        only_s = store.similar_terms("workspaec", 2, Filters(sources=("s",)))
        assert [(x.term, x.edits) for x in only_s] == [("workspace", 1)]
        only_t = store.similar_terms("workplace", 2, Filters(sources=("t",)))
        assert [(x.term, x.chunks) for x in only_t] == [("workplace", 2)]
        assert store.similar_terms("workplace", 2, Filters(sources=("nowhere",))) == []
        both = store.similar_terms("workplace", 2, Filters(sources=("s", "t")))
        assert [x.term for x in both] == ["workplace", "workspace"]

    # ------------------------------------------------------------------ vectors
    def test_nearest_is_best_first_by_inner_product(self, store: Store) -> None:
        store.write(*make_doc("a", "one\n\ntwo\n\nthree", type="guide"))
        store.set_embedder("test", 3)
        store.put_vectors([("a#0", unit(1, 0, 0)), ("a#1", unit(1, 1, 0)), ("a#2", unit(0, 0, 1))])
        near = store.nearest(unit(1, 0, 0), Filters(), 2)
        assert [c for c, _ in near] == ["a#0", "a#1"]
        assert near[0][1] == pytest.approx(1.0, abs=1e-5)
        assert near[1][1] == pytest.approx(0.70711, abs=1e-4)
        assert store.nearest(unit(1, 0, 0), Filters(types=("page",)), 3) == []
        sims = store.similarities(unit(0, 0, 1), ["a#2", "a#0", "zz#0"])
        assert sims.keys() == {"a#2", "a#0"} and sims["a#2"] == pytest.approx(1.0, abs=1e-5)

    def test_document_similarities_are_the_best_chunk(self, store: Store) -> None:
        store.write(*make_doc("a", "one\n\ntwo\n\nthree"))
        store.write(*make_doc("b", "four"))
        store.write(*make_doc("c", "five"))
        store.set_embedder("test", 3)
        store.put_vectors([("a#0", unit(1, 0, 0)), ("a#1", unit(0, 1, 0)), ("b#0", unit(1, 1, 0))])
        sims = store.document_similarities(unit(0, 1, 0), ["a", "b", "c", "zz", "a"])
        # "c" has no vector yet and "zz" does not exist: both left out
        assert sims.keys() == {"a", "b"}
        assert sims["a"] == pytest.approx(1.0, abs=1e-5)
        assert sims["b"] == pytest.approx(0.70711, abs=1e-4)
        assert store.document_similarities(unit(0, 1, 0), []) == {}

    def test_vectors_stay_with_unchanged_chunks_only(self, store: Store) -> None:
        store.write(*make_doc("a", "one\n\ntwo"))
        store.set_embedder("test", 2)
        assert store.count_chunks_to_embed() == 2
        assert [c for c, _ in store.chunks_to_embed(10)] == ["a#0", "a#1"]
        assert store.chunks_to_embed(10)[0][1] == "a\none"
        store.put_vectors([("a#0", unit(1, 0)), ("a#1", unit(0, 1)), ("gone#0", unit(1, 1))])
        assert store.count_chunks_to_embed() == 0
        store.write(*make_doc("a", "one\n\nTWO"))
        assert store.get_vectors(["a#0", "a#1"]).keys() == {"a#0"}
        assert store.get_vectors(["a#0"]) == {"a#0": unit(1, 0)}
        assert [c for c, _ in store.chunks_to_embed(10)] == ["a#1"]
        store.delete_documents(["a"])
        assert store.get_vectors(["a#0"]) == {} and store.nearest(unit(1, 0), Filters(), 5) == []

    def test_another_embedder_drops_every_vector(self, store: Store) -> None:
        store.write(*make_doc("a", "one"))
        assert store.embedder() is None
        with pytest.raises(InvalidInput):
            store.put_vectors([("a#0", unit(1, 0))])
        store.set_embedder("m1", 2)
        store.put_vectors([("a#0", unit(1, 0))])
        store.set_embedder("m1", 2)  # the same model changes nothing
        assert store.get_vectors(["a#0"]) == {"a#0": unit(1, 0)}
        store.set_embedder("m2", 3)
        assert store.embedder() == ("m2", 3)
        assert store.get_vectors(["a#0"]) == {} and store.count_chunks_to_embed() == 1
        store.put_vectors([("a#0", unit(1, 0, 0))])
        assert [c for c, _ in store.nearest(unit(1, 0, 0), Filters(), 1)] == ["a#0"]

    def test_vectors_of_another_dimension_are_refused(self, store: Store) -> None:
        store.write(*make_doc("a", "one"))
        store.set_embedder("m", 3)
        with pytest.raises(IndexMismatch):
            store.put_vectors([("a#0", unit(1, 0))])
        store.put_vectors([("a#0", unit(1, 0, 0))])
        with pytest.raises(IndexMismatch):
            store.nearest(unit(1, 0), Filters(), 1)

    # --------------------------------------------------------------- API graph
    def test_api_operations_keep_their_graph_facts(self, store: Store) -> None:
        meta = {
            "method": "POST",
            "path": "/v1/locations",
            "operation_kind": "create",
            "spec": "shipwell",
            "params": [{"name": "id", "in": "path"}],
        }
        doc, chunks = make_doc(
            "shipwell:POST /v1/locations", "Create a location", type="api", metadata=meta
        )
        store.write(doc, chunks)
        store.write(*make_doc("guide", "locations", type="guide"))
        (summary,) = store.list_documents(Filters(types=("api",)))
        assert (summary.id, summary.operation_kind) == (doc.id, "create")
        assert store.documents([doc.id])[0].metadata == meta
        (match,) = store.chunk_matches([f"{doc.id}#0"])
        assert match.doc.operation_kind == "create"

    # ------------------------------------------------------------- concurrency
    def test_readers_never_see_half_a_write(self, store: Store, other: Store) -> None:
        """Another handle writes documents of five chunks while this one reads from
        several threads: every read sees all five chunks of a document or none."""
        errors: list[BaseException] = []
        done = threading.Event()

        def writer() -> None:
            try:
                for i in range(25):
                    text = "\n\n".join(f"zebra {i} part {n}" for n in range(5))
                    other.write(*make_doc(f"w{i:02}", text))
                    if i % 5 == 4:
                        other.delete_documents([f"w{i - 2:02}"])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
            finally:
                done.set()

        def reader() -> None:
            try:
                while not done.is_set():
                    per_doc: dict[str, int] = {}
                    for m in store.keyword_candidates(query("zebra", limit=1000)):
                        per_doc[m.doc_id] = per_doc.get(m.doc_id, 0) + 1
                    assert set(per_doc.values()) <= {5}, per_doc
                    ids = [d.id for d in store.list_documents(Filters(), limit=1000)]
                    counts: dict[str, int] = {}
                    for c in store.chunks(ids):
                        counts[c.doc_id] = counts.get(c.doc_id, 0) + 1
                    assert set(counts.values()) <= {5}, counts
                    stats = store.term_stats(["zebra"])
                    assert stats.df["zebra"] % 5 == 0 and stats.chunks % 5 == 0
            except BaseException as exc:
                errors.append(exc)
                done.set()

        threads = [threading.Thread(target=writer)] + [
            threading.Thread(target=reader) for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert store.count_documents(Filters()) == 20

    def test_every_failure_is_a_groundkb_error(self, store: Store) -> None:
        store.close()
        with pytest.raises(GroundKBError):
            store.term_stats(["x"])
