"""The store contract on SQLite, and what only SQLite does (a file, migrations on open)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundkb import KnowledgeBase, Settings
from groundkb.errors import IndexMismatch, StoreError
from groundkb.models import Filters
from groundkb.serve.cli import cli
from groundkb.store import open_store
from groundkb.testing.conformance import StoreConformance

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def location(self, tmp_path: Path) -> str:
        return f"sqlite:///{tmp_path / 'kb.db'}"


def test_an_index_from_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    open_store(str(path)).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(IndexMismatch, match="schema version 999"):
        open_store(str(path))


def test_a_file_that_is_not_a_database_gives_our_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some text, certainly not SQLite\n" * 100)
    with pytest.raises(StoreError, match="not a groundkb index"):
        open_store(str(path))
    result = CliRunner().invoke(cli, ["--db", str(path), "stats"])
    assert result.exit_code == 2
    assert "error [store_error]" in result.output and "Traceback" not in result.output


def test_migrate_reports_the_schema_version(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    first = CliRunner().invoke(cli, ["--db", db, "migrate"])
    assert first.exit_code == 0 and "from version 0 to 3" in first.output
    again = CliRunner().invoke(cli, ["--db", db, "migrate"])
    assert again.exit_code == 0 and "current (version 3)" in again.output


def test_creating_an_index_is_not_reported_as_an_upgrade(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="groundkb.store.migrations"):
        store = open_store(str(tmp_path / "kb.db"))
    assert store.migrated == (0, 3)
    store.close()
    assert caplog.text == ""


def test_an_index_of_schema_2_keeps_everything_when_documents_get_their_content_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from groundkb.store import sqlite as sqlite_store
    from groundkb.store.sqlite_schema import MIGRATIONS

    db = tmp_path / "kb.db"
    with monkeypatch.context() as m:  # an index written by a groundkb of schema 2
        m.setattr(sqlite_store, "MIGRATIONS", MIGRATIONS[:2])
        with KnowledgeBase.open(db, embedder="none", retrieval="keyword") as kb:
            kb.ingest(EXAMPLES / "docs", source="docs")
            kb.ingest(EXAMPLES / "entries", source="commands")
            before = kb.search("invite a user to a workspace")
            docs_before = kb.store.documents([h.doc_id for h in before.hits])
            stats_before = kb.stats()
    raw = sqlite3.connect(db)
    assert raw.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("2",)
    raw.close()

    with (
        caplog.at_level("WARNING", logger="groundkb.store.migrations"),
        KnowledgeBase.open(db, embedder="none", retrieval="keyword") as kb,
    ):
        store = kb.store
        assert store.migrated == (2, 3)
        assert "schema 2 -> 3" in caplog.text  # an upgrade of existing data is said
        assert store._db.execute("PRAGMA foreign_keys").fetchone() == (1,)
        columns = [r[1] for r in store._db.execute("PRAGMA table_info(documents)")]
        assert columns[-1] == "content" and len(columns) == 19
        after = kb.search("invite a user to a workspace")
        assert [(h.chunk_id, h.score, h.snippet) for h in after.hits] == [
            (h.chunk_id, h.score, h.snippet) for h in before.hits
        ]
        assert store.documents([h.doc_id for h in before.hits]) == docs_before
        assert kb.stats().documents == stats_before.documents
        assert kb.stats().chunks == stats_before.chunks
        # the references hold after the rebuild: removing a source removes its chunks
        assert store.delete_source("commands") > 0
        assert 0 < kb.stats().chunks < stats_before.chunks
        orphans = store._db.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.doc_id"
            " WHERE d.id IS NULL"
        ).fetchone()
        assert orphans == (0,)
        assert store._db.execute("PRAGMA foreign_key_check").fetchall() == []


def test_typo_correction_reads_one_first_letter_of_the_vocabulary_until_it_is_loaded(
    docs_kb: KnowledgeBase, tmp_path: Path
) -> None:
    """A fresh process correcting a typo reads the terms of the word's first letter only
    (the whole vocabulary costs 30 times as much at 100k chunks), with the same result,
    and sees the index change."""
    store = docs_kb.store
    cold = store.similar_terms("workspase", 1, first_letter=True)
    assert store._vocab.peek() is None  # the whole vocabulary was not loaded
    assert [s.term for s in cold] == ["workspace"]
    full = [s for s in store.similar_terms("workspase", 1) if s.term.startswith("w")]
    assert store._vocab.peek() is not None
    assert store.similar_terms("workspase", 1, first_letter=True) == cold == full
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "w.md").write_text("# Workspade\n\nA workspade is a tool.\n")
    assert docs_kb.ingest(tmp_path / "more", source="more").ok
    assert store._vocab.peek() is None
    assert [s.term for s in store.similar_terms("workspase", 1, first_letter=True)] == [
        "workspace",
        "workspade",
    ]


def test_term_statistics_are_the_same_from_the_loaded_vocabulary_and_follow_writes(
    docs_kb: KnowledgeBase, tmp_path: Path
) -> None:
    store = docs_kb.store
    terms = ["workspace", "team", "nosuchterm"]
    from_fts5 = store.term_stats(terms)
    assert from_fts5.df["workspace"] > 0 and from_fts5.df["nosuchterm"] == 0
    store.similar_terms("workspase", 1)  # typo correction loads the vocabulary
    assert store._vocab.peek() is not None
    assert store.term_stats(terms) == from_fts5
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "teams.md").write_text("# Teams\n\nA team shares a workspace.\n")
    assert docs_kb.ingest(tmp_path / "more", source="more").ok
    assert store._vocab.peek() is None  # the index changed: not the vocabulary of now
    after = store.term_stats(terms)
    assert after.chunks == from_fts5.chunks + 1
    assert after.df["workspace"] == from_fts5.df["workspace"] + 1


def test_token_totals_come_from_fts5s_record_or_else_a_scan() -> None:
    """``term_stats`` reads FTS5's averages record (row count, then tokens per column);
    a record that does not say what it should falls back to summing the vocabulary."""
    from groundkb.store import sqlite_query

    record = bytes([0x05, 0x81, 0x00, 0x00, 0x00, 0x00, 0x07])  # 5 rows; 128, 0, 0, 0, 7
    assert sqlite_query._varints(record) == [5, 128, 0, 0, 0, 7]
    assert sqlite_query._varints(bytes([0x81])) == []  # cut short

    def query(sql: str, args: object) -> list[tuple[object, ...]]:
        if "chunks_fts_data" in sql:
            return [(record,)]
        return [(999,)]  # the vocabulary's sum

    assert sqlite_query._total_tokens(query, 5) == 135
    assert sqlite_query._total_tokens(query, 6) == 999  # the record disagrees: scan


def fts_segments(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])
    finally:
        db.close()


def test_a_large_ingest_leaves_one_keyword_segment_and_a_small_one_does_not_merge(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):  # one transaction per document: FTS5 segments pile up
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\nWidget number {i}.\n", encoding="utf-8")
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, embedder="none", retrieval="keyword") as kb:
        kb.ingest(docs, source="docs")
        assert fts_segments(db) == 1
        before = [(h.chunk_id, h.score) for h in kb.search("widget number 7").hits]
        (docs / "p3.md").write_text("# Page 3\n\nWidget number three.\n", encoding="utf-8")
        report = kb.ingest(docs, source="docs")
        assert report.updated == 1
        assert fts_segments(db) == 2  # one changed page: a segment more, no merge
        after = [(h.chunk_id, h.score) for h in kb.search("widget number 7").hits]
    assert after[0] == before[0]


def test_kept_candidate_scores_give_what_fts5_gives_and_follow_writes(tmp_path: Path) -> None:
    """Once the vocabulary is loaded (a process that warmed up), keyword candidates come
    from per-unit scores kept in memory (``sqlite_kept.py``): the same chunks in the same
    order with the same scores as FTS5's candidate query, for phrases, several-word
    phrases, groups of common words, limits that cut through equal scores, and filters;
    a unit is read once; a write drops them all."""
    from groundkb.store.base import FIELDS, KeywordQuery
    from groundkb.store.sqlite import SQLiteStore
    from groundkb.store.sqlite_kept import KeptScores
    from groundkb.store.sqlite_query import fts_phrase
    from groundkb.testing.conformance import WEIGHTS

    words = ["deploy", "service", "token", "rotate", "backup", "restore", "quota", "alert"]
    for source in ("ops", "dev"):
        folder = tmp_path / source
        folder.mkdir()
        for i in range(40):
            picked = [words[(i * k + k) % len(words)] for k in range(1, 6)]
            body = " ".join(picked * (1 + i % 3)) + f" page {i % 7} of the guide."
            title = f"{words[i % len(words)].title()} {source} {i // 2}"  # pairs tie
            (folder / f"{source}{i}.md").write_text(
                f"# {title}\n\n{body}\n\n## Access token\n\n{body}\n"
            )
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        assert kb.ingest(tmp_path / "ops", source="ops").ok
        assert kb.ingest(tmp_path / "dev", source="dev").ok
        store = kb.store
        assert isinstance(store, SQLiteStore)
        queries = [
            KeywordQuery([("deploy",), ("quota",)], WEIGHTS, limit=7),
            KeywordQuery([("access", "token"), ("rotate",)], WEIGHTS, limit=5),
            KeywordQuery([("backup",)], WEIGHTS, Filters(sources=("dev",)), limit=4),
            KeywordQuery(
                [("alert",)],
                WEIGHTS,
                limit=3,
                together=[(("service",), ("token",)), (("service",), ("restore",))],
                together_limit=6,
            ),
            KeywordQuery([("nosuchword",)], WEIGHTS),
        ]

        def unit_args(q: KeywordQuery) -> tuple[list[str], list[float], Filters]:
            units = [fts_phrase(p) for p in sorted(set(q.phrases))]
            units += [" AND ".join(fts_phrase(p) for p in g) for g in sorted(set(q.together))]
            return units, [WEIGHTS[f] for f in FIELDS], q.filters

        def found(q: KeywordQuery) -> list[tuple[str, float]]:
            return [(m.chunk_id, m.score) for m in store.keyword_candidates(q)]

        assert store._kept_scores() is None  # a process that searches once: FTS5
        from_fts5 = [found(q) for q in queries]
        assert all(from_fts5[:4]) and from_fts5[4] == []
        assert any(len({s for _, s in f}) < len(f) for f in from_fts5)  # equal scores
        store.similar_terms("deplyo", 1)  # typo correction loads the vocabulary
        kept = store._kept_scores()
        assert kept is not None
        assert [found(q) for q in queries] == [found(q) for q in queries]
        reads = kept.reads  # a unit is read the first time a question asks for it
        assert reads == 9 and not any(kept.missing(*unit_args(q)) for q in queries)
        for q, expected in zip(queries, from_fts5, strict=True):
            got = found(q)
            assert [c for c, _ in got] == [c for c, _ in expected], q
            assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-12)
        assert kept.reads == reads  # every unit was kept
        small = store._kept = KeptScores(kept.token, max_bytes=1)  # the least recently
        for q in queries:  # used go past the budget; the answers stay
            assert found(q) == found(q)
        assert len(small._units) == 1
        store._kept = kept

        (tmp_path / "more").mkdir()
        (tmp_path / "more" / "q.md").write_text("# Quota quota quota\n\nDeploy quota.\n")
        assert kb.ingest(tmp_path / "more", source="more").ok
        assert store._kept_scores() is None  # the index changed: FTS5 answers while
        store._vocab.wait()  # the vocabulary is rebuilt in the background
        assert store._kept_scores() not in (None, kept)
        assert found(queries[0])[0][0] == "q#0"


def test_kept_scores_mb_bounds_the_memory_and_zero_turns_it_off(tmp_path: Path) -> None:
    from groundkb import Settings
    from groundkb.errors import ConfigError

    settings = Settings(db=str(tmp_path / "docs.db"))
    with KnowledgeBase.open(settings=settings) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
        kb.warm()
        on = kb.search("invite a teammate to the workspace")
        kept = kb.store._kept  # type: ignore[attr-defined]
        assert kept is not None and kept.max_bytes == kept.max_row_bytes == 64 << 20
        with pytest.raises(ConfigError, match="kept_scores_mb"):
            kb.reload(settings.replace(kept_scores_mb=0))
    with KnowledgeBase.open(settings=settings.replace(kept_scores_mb=0)) as kb:
        kb.warm()
        off = kb.search("invite a teammate to the workspace")
        assert kb.store._kept is None  # type: ignore[attr-defined]
    assert [(h.chunk_id, h.score) for h in off.hits] == [(h.chunk_id, h.score) for h in on.hits]


def test_a_warmed_up_process_reads_ahead_every_word_and_row_that_fits(tmp_path: Path) -> None:
    """``KnowledgeBase.warm`` has the SQLite store keep the scores of every word a
    question can search alone and the chunks' rows (``read_ahead``): a question of single
    words then reads no unit from FTS5 and gets what FTS5 gives. Half of each budget at
    most, most frequent words first; words past ``max_chunks`` chunks are left to pairs."""
    from groundkb.store.base import KeywordQuery
    from groundkb.store.sqlite import SQLiteStore
    from groundkb.store.sqlite_kept import KeptScores

    docs = tmp_path / "docs"
    docs.mkdir()
    words = ["deploy", "service", "token", "rotate", "backup", "restore", "quota", "alert"]
    for i in range(30):
        picked = " ".join(words[(i * k + k) % len(words)] for k in range(1, 4 + i % 4))
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\n{picked} item{i}.\n")
    settings = Settings(db=str(tmp_path / "kb.db"), embedder="none")
    WEIGHTS = settings.weights
    with KnowledgeBase.open(settings=settings) as kb:
        assert kb.ingest(docs, source="docs").ok
        store = kb.store
        assert isinstance(store, SQLiteStore)
        q = KeywordQuery([("deploy",), ("quota",), ("item7",)], WEIGHTS, limit=8)
        from_fts5 = [(m.chunk_id, m.score) for m in store.keyword_candidates(q)]
        asked = ["p3#0", "nosuch#0", "p1#0", "p2#0", "p1#0"]
        by_id = [store.chunk_matches(asked, f) for f in (Filters(), Filters(sources=("x",)))]
        kb.warm()
        kept = store._kept_scores()
        assert kept is not None and kept.reads > len(words)  # every word, "item7" too
        reads = kept.reads
        got = [(m.chunk_id, m.score) for m in store.keyword_candidates(q)]
        assert [c for c, _ in got] == [c for c, _ in from_fts5]
        assert [s for _, s in got] == pytest.approx([s for _, s in from_fts5], rel=1e-12)
        assert kept.reads == reads  # nothing read at the first asking
        assert len(kept._rows) == store.stats().chunks
        reading, asked_sql = store._query, []

        def query(sql: str, args: object = ()) -> object:
            asked_sql.append(args)
            return reading(sql, args)  # type: ignore[arg-type]

        store._query = query  # type: ignore[method-assign]
        kept_by_id = [store.chunk_matches(asked, f) for f in (Filters(), Filters(sources=("x",)))]
        store._query = reading  # type: ignore[method-assign]
        assert kept_by_id == by_id and [m.chunk_id for m in by_id[0]] == ["p3#0", "p1#0", "p2#0"]
        assert by_id[1] == [] and asked_sql == [["nosuch", 0], ["nosuch", 0, "x"]]  # only it

        df = store._loaded_vocabulary().df  # type: ignore[union-attr]
        small = store._kept = KeptScores(kept.token, max_bytes=16 * 2 * df["deploy"])
        store.read_ahead(WEIGHTS)  # room for half the budget: one word, the most frequent
        fits = max(df[t] for t in df if df[t] <= df["deploy"])
        ((unit, _),) = small._units  # the most frequent word that fits
        assert df[unit.strip('"')] == fits and small.unit_bytes <= small.max_bytes // 2
        rare = store._kept = KeptScores(kept.token)
        store.read_ahead(WEIGHTS, max_chunks=1)  # only the words of one chunk each
        assert rare._units and all(len(ids) == 1 for ids, _ in rare._units.values())
