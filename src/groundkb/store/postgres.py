"""PostgreSQL + pgvector store: several stateless servers in front of one database.

Selected by a ``postgresql://`` URL (the ``db`` setting, ``GROUNDKB_DATABASE_URL`` or
``--db``). The schema (``pg_schema.py``) is created and upgraded only by ``groundkb
migrate``; opening a store checks that the database has exactly the schema this
groundkb uses and refuses anything else. Connections come from a pool that survives
database outages (``pg_connect.py``).

- Keyword candidates: a ``tsvector`` of groundkb's analyzed tokens under a GIN index
  (``pg_text.py``), ordered there by an approximation of BM25 and finished here with
  FTS5's exact formula, so candidates match SQLite's.
- Term statistics: the ``terms`` table and ``state`` totals, kept exact inside every
  write's transaction; the vocabulary for typo correction is loaded per change token,
  in the background at a bounded rate while other processes write (``refreshing.py``).
- Vectors: a ``vector(n)`` column with an HNSW index (inner product), created when the
  embedder is recorded. ``nearest`` is approximate (HNSW, ``ef_search`` ≥ 100, iterative
  scans with filters on pgvector ≥ 0.8); ``similarities`` is exact.
- Writes lock in one order (the document row, its chunks, terms sorted, the state row),
  so concurrent writers never deadlock; they serialize only on shared terms.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from ..analyze.text import TOKENIZER_VERSION
from ..errors import IndexMismatch, InvalidInput, StoreError
from ..models import Chunk, Document, Filters, Source, SourceInfo, Stats
from ..refreshing import Refreshing
from . import migrations
from .base import (
    FIELDS,
    DocMetadata,
    DocSummary,
    KeywordMatch,
    KeywordQuery,
    SimilarTerm,
    StoredDoc,
    TermStats,
    WriteResult,
    chunk_key,
    embedding_text,
)
from .pg_connect import Connections, connect, map_error, parse_url
from .pg_query import MATCH, SUMMARY, chunk_keys, filters_sql, match_row
from .pg_schema import MIGRATIONS, SCHEMA_VERSION, Migrator, schema_version, search_path
from .pg_schema import vector_extension as _vector_extension
from .pg_text import (
    POOL_FACTOR,
    POOL_FACTOR_LARGE,
    indexable,
    order_sql,
    tsquery,
    tsquery_groups,
)
from .pg_write import clean, drop_chunks, set_embedder, write_document
from .rows import (
    DOC_COLUMNS,
    Fts5Scorer,
    check_chunks,
    check_meta_key,
    document,
    fts5_idf,
    now,
    similar,
    starting_with,
    summary,
)

Conn = psycopg.Connection[Any]
EF_SEARCH = 100  # HNSW candidate list per query: at least the usual k (50)


class PostgresStore:
    """A knowledge base in a PostgreSQL schema (see the module docstring)."""

    backend = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        read_only: bool = False,
        migrate: bool = False,
        pool_size: int = 10,
        timeout: float = 10.0,
    ) -> None:
        self.target = parse_url(url)
        self.location = self.target.display
        self.schema = self.target.schema
        # the vocabulary for typo correction, rebuilt like the search engine's derived
        # data (refreshing.py): at once after this store's own writes, in the
        # background at a bounded rate after other processes'
        self._vocab: Refreshing[str, tuple[list[str], dict[str, int]]] = Refreshing(
            self.change_token, self._load_vocabulary
        )
        self.migrated: tuple[int, int] | None = None  # (before, after) when migrate=True
        conn = connect(self.target, timeout)
        try:
            self._open(conn, migrate)
        except psycopg.Error as exc:
            raise map_error(exc, self.location) from None
        finally:
            conn.close()
        self._connections = Connections(
            self.target, pool_size=pool_size, timeout=timeout, configure=self._configure
        )

    def _open(self, conn: Conn, migrate: bool) -> None:
        if migrate:
            self.migrated = migrations.migrate(
                Migrator(conn, self.schema, self.location), MIGRATIONS
            )
        ext = _vector_extension(conn)
        if ext is None:
            raise StoreError(
                f"pgvector (extension `vector`) is not installed in the database at "
                f"{self.location}: run `groundkb migrate` (as a user who may create "
                "extensions) or ask an administrator to run `CREATE EXTENSION vector;`"
            )
        self._extension = ext
        migrations.check_current(
            schema_version(conn, self.schema), MIGRATIONS, f"{self.location} (schema {self.schema})"
        )
        tok = conn.execute(
            f'SELECT value FROM "{self.schema}".meta WHERE key = %s', ("tokenizer",)
        ).fetchone()
        if tok and tok[0] != TOKENIZER_VERSION:
            raise IndexMismatch(
                f"{self.location} was built with tokenizer {tok[0]!r}, this groundkb uses "
                f"{TOKENIZER_VERSION!r}: rebuild the index (drop schema {self.schema}, "
                "migrate and ingest again)"
            )

    def _configure(self, conn: Conn) -> None:
        conn.execute(search_path(self.schema, self._extension[0]))
        register_vector(conn)
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        if tuple(int(p) for p in self._extension[1].split(".")[:2]) >= (0, 8):
            conn.execute("SET hnsw.iterative_scan = relaxed_order")

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._connections.run(lambda c: c.execute(sql, args).fetchall())

    def _write(self, fn: Any) -> Any:
        def tx(conn: Conn) -> Any:
            with conn.transaction():
                out = fn(conn.cursor())
                conn.execute("UPDATE state SET version = version + 1 WHERE id = 1")
                return out

        try:
            return self._connections.run(tx, write=True)
        finally:  # read your own writes (also after a failure: nothing is lost by it)
            self._vocab.invalidate()

    def close(self) -> None:
        self._connections.close()

    def change_token(self) -> str:
        rows = self._read(
            "SELECT s.version, m.value FROM state s, meta m WHERE m.key = 'kb_id' AND s.id = 1"
        )
        return f"{rows[0][1]}.{rows[0][0]}"

    def content_token(self) -> str:
        # the server and schema too: two databases restored from one dump share kb_id
        # and may reach the same version with different writes
        return f"{self.location}|{self.schema}|{self.change_token()}"

    def get_meta(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str | None) -> None:
        check_meta_key(key)
        if value is None:
            self._write(lambda cur: cur.execute("DELETE FROM meta WHERE key = %s", (key,)))
        else:
            self._write(
                lambda cur: cur.execute(
                    "INSERT INTO meta(key, value) VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, clean(value)),
                )
            )

    def stats(self) -> Stats:
        by_type = dict(self._read("SELECT type, count(*) FROM documents GROUP BY type"))
        (chunks, sources, size) = self._read(
            "SELECT (SELECT chunks FROM state WHERE id = 1), (SELECT count(*) FROM sources),"
            " (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            "  JOIN pg_namespace n ON n.oid = c.relnamespace"
            "  WHERE n.nspname = %s AND c.relkind = 'r')",
            (self.schema,),
        )[0]
        return Stats(
            path=self.location,
            backend=self.backend,
            schema_version=SCHEMA_VERSION,
            documents=sum(by_type.values()),
            chunks=int(chunks),
            sources=int(sources),
            by_type=by_type,
            size_bytes=int(size),
        )

    # ------------------------------------------------------------------- sources
    def put_source(self, source: Source) -> None:
        stamp = now()
        self._write(
            lambda cur: cur.execute(
                "INSERT INTO sources(name, kind, location, groups, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET"
                " kind = excluded.kind, location = excluded.location, groups = excluded.groups,"
                " updated_at = excluded.updated_at",
                [clean(v) for v in (source.name, source.kind, source.location)]
                + [json.dumps(source.groups), stamp, stamp],
            )
        )

    def sources(self) -> list[SourceInfo]:
        rows = self._read(
            "SELECT s.name, s.kind, s.location, s.groups, s.updated_at,"
            " (SELECT count(*) FROM documents d WHERE d.source = s.name),"
            " (SELECT count(*) FROM chunks c WHERE c.source = s.name)"
            " FROM sources s ORDER BY s.name"
        )
        return [
            SourceInfo(Source(n, k, loc, tuple(json.loads(g))), docs, chunks, updated)
            for n, k, loc, g, updated, docs, chunks in rows
        ]

    def delete_source(self, name: str) -> int:
        def run(cur: psycopg.Cursor[Any]) -> int:
            ids = [r[0] for r in cur.execute(
                "SELECT id FROM documents WHERE source = %s ORDER BY id FOR UPDATE", (name,)
            ).fetchall()]  # fmt: skip
            drop_chunks(cur, "source = %s", name)
            cur.execute("DELETE FROM documents WHERE source = %s", (name,))
            cur.execute("DELETE FROM sources WHERE name = %s", (name,))
            return len(ids)

        return int(self._write(run))

    # ----------------------------------------------------------------- documents
    def doc_states(self, source: str) -> dict[str, StoredDoc]:
        rows = self._read(
            "SELECT id, content_hash, origin, origin_hash FROM documents WHERE source = %s",
            (source,),
        )
        return {r[0]: StoredDoc(*r) for r in rows}

    def owners(self, doc_ids: Iterable[str]) -> dict[str, str]:
        rows = self._read("SELECT id, source FROM documents WHERE id = ANY(%s)", (list(doc_ids),))
        return dict(rows)

    def write(self, doc: Document, chunks: Sequence[Chunk]) -> WriteResult:
        check_chunks(doc, chunks)
        result: WriteResult = self._write(lambda cur: write_document(cur, doc, chunks))
        return result

    def optimize(self) -> None:
        return None  # the GIN and HNSW indexes are maintained by PostgreSQL (autovacuum)

    def read_ahead(self, weights: Mapping[str, float], max_chunks: int | None = None) -> None:
        return None  # nothing kept in memory: PostgreSQL's own buffers serve reads

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        ids = sorted(set(doc_ids))
        if not ids:
            return 0

        def run(cur: psycopg.Cursor[Any]) -> int:
            found = [r[0] for r in cur.execute(
                "SELECT id FROM documents WHERE id = ANY(%s) ORDER BY id FOR UPDATE", (ids,)
            ).fetchall()]  # fmt: skip
            if found:
                drop_chunks(cur, "doc_id = ANY(%s)", found)
                cur.execute("DELETE FROM documents WHERE id = ANY(%s)", (found,))
            return len(found)

        return int(self._write(run))

    def documents(self, doc_ids: Sequence[str], filters: Filters = Filters()) -> list[Document]:
        ids = list(dict.fromkeys(doc_ids))
        where, args = filters_sql(filters, "d")
        rows = self._read(
            f"SELECT {', '.join(DOC_COLUMNS)} FROM documents d WHERE id = ANY(%s){where}",
            [ids, *args],
        )
        found = {r[0]: document(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def chunks(self, doc_ids: Sequence[str], filters: Filters = Filters()) -> list[Chunk]:
        ids = list(dict.fromkeys(doc_ids))
        where, args = filters_sql(filters, "c")
        rows = self._read(
            "SELECT doc_id, idx, text, header_path, chunk_hash FROM chunks c"
            f" WHERE doc_id = ANY(%s){where}",
            [ids, *args],
        )
        order = {d: i for i, d in enumerate(ids)}
        rows.sort(key=lambda r: (order[r[0]], r[1]))
        return [Chunk(*r) for r in rows]

    def list_documents(
        self, filters: Filters, limit: int = 100, offset: int = 0
    ) -> list[DocSummary]:
        where, args = filters_sql(filters, "d")
        rows = self._read(
            f"SELECT {SUMMARY} FROM documents d WHERE true{where} ORDER BY d.id LIMIT %s OFFSET %s",
            [*args, limit, offset],
        )
        return [summary(r) for r in rows]

    def count_documents(self, filters: Filters) -> int:
        where, args = filters_sql(filters, "d")
        return int(self._read(f"SELECT count(*) FROM documents d WHERE true{where}", args)[0][0])

    def document_metadata(self, filters: Filters) -> list[DocMetadata]:
        where, args = filters_sql(filters, "d")
        rows = self._read(
            "SELECT d.id, d.source, d.type, d.title, d.metadata FROM documents d"
            f" WHERE true{where} ORDER BY d.id",
            args,
        )
        return [DocMetadata(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def flagged_documents(self, filters: Filters, key: str) -> list[str]:
        where, args = filters_sql(filters, "d")
        rows = self._read(
            "SELECT d.id FROM documents d"
            f" WHERE (d.metadata::jsonb -> %s) = 'true'::jsonb{where} ORDER BY d.id",
            [key, *args],
        )
        return [r[0] for r in rows]

    # -------------------------------------------------------------------- keyword
    def _term_rows(self, conn: Conn, terms: Collection[str]) -> TermStats:
        rows = conn.execute(
            "SELECT s.chunks, s.tokens, t.term, t.df FROM state s"
            " LEFT JOIN terms t ON t.term = ANY(%s) WHERE s.id = 1",
            ([t for t in terms if indexable(t)],),
        ).fetchall()
        chunks, tokens = int(rows[0][0]), int(rows[0][1])
        df = {t: 0 for t in terms}
        df.update({r[2]: max(0, int(r[3])) for r in rows if r[2] is not None})
        return TermStats(chunks, tokens / chunks if chunks else 1.0, df)

    def term_stats(self, terms: Collection[str]) -> TermStats:
        return self._connections.run(lambda c: self._term_rows(c, terms))

    def documents_holding(
        self, terms: Collection[str], filters: Filters = Filters()
    ) -> dict[str, dict[str, int]]:
        wanted = [t for t in terms if t and indexable(t)]
        where, args = filters_sql(filters, "c")
        sql = (
            "SELECT c.source, count(DISTINCT c.doc_id) FROM chunks c"
            f" WHERE c.tsv @@ %s::tsquery{where} GROUP BY c.source"
        )

        def count(conn: Conn) -> dict[str, dict[str, int]]:
            out: dict[str, dict[str, int]] = {}
            for t in wanted:
                rows = conn.execute(sql, [tsquery([(t,)]), *args]).fetchall()
                out[t] = {str(r[0]): int(r[1]) for r in rows}
            return out

        return {**{t: {} for t in terms}, **self._connections.run(count)}

    def keyword_candidates(self, query: KeywordQuery) -> list[KeywordMatch]:
        phrases = sorted({p for p in query.phrases if p and all(indexable(t) for t in p)})
        groups = sorted(
            {g for g in query.together if g and all(p and all(map(indexable, p)) for p in g)}
        )
        searches: list[tuple[list[tuple[str, ...]], str, int]] = []
        if phrases and query.limit > 0:
            searches.append((phrases, tsquery(phrases), query.limit))
        if groups and query.together_limit > 0:
            # Every occurrence of a phrase in the groups counts, as in FTS5's bm25().
            searches.append(
                ([p for g in groups for p in g], tsquery_groups(groups), query.together_limit)
            )
        if not searches:
            return []
        factor = POOL_FACTOR_LARGE if groups else POOL_FACTOR

        def pool(conn: Conn) -> tuple[TermStats, list[list[Any]]]:
            terms = {t for found, _, _ in searches for p in found for t in p}
            stats = self._term_rows(conn, terms)
            where, args = filters_sql(query.filters, "c")
            pools = []
            for found, match, limit in searches:
                idf = _idf(found, stats)
                order, order_args = order_sql(list(idf), idf, query.weights, stats.avg_length)
                pools.append(
                    conn.execute(
                        f"SELECT c.id, c.fields FROM chunks c WHERE c.tsv @@ %s::tsquery{where}"
                        f" ORDER BY {order} DESC LIMIT %s",
                        [match, *args, *order_args, limit * factor],
                    ).fetchall()
                )
            return stats, pools

        stats, pools = self._connections.run(pool)
        scores: dict[int, float] = {}
        later: set[int] = set()
        for (found, _, limit), rows in zip(searches, pools, strict=True):
            idf = _idf(found, stats)
            scorer = Fts5Scorer(list(idf), idf, query.weights, stats.avg_length)
            scored = {r[0]: scorer.score(dict(zip(FIELDS, r[1], strict=True))) for r in rows}
            best = sorted(scored, key=lambda i: (-scored[i], i))[:limit]
            new = [i for i in best if i not in scores]
            if scores:
                later.update(new)
            scores.update((i, scored[i]) for i in new)
        found_rows = self._read(
            f"SELECT {MATCH}, c.id FROM chunks c JOIN documents d ON d.id = c.doc_id"
            " WHERE c.id = ANY(%s)",
            (list(scores),),
        )
        # Best first, the groups' matches after the phrases'; equal scores in the order
        # the chunks were written, as in SQLite.
        found_rows.sort(key=lambda r: (r[-1] in later, -scores[r[-1]], r[-1]))
        return [match_row(r, scores[r[-1]]) for r in found_rows]

    def chunk_matches(
        self, chunk_ids: Sequence[str], filters: Filters = Filters()
    ) -> list[KeywordMatch]:
        docs, idxs = chunk_keys(chunk_ids)
        where, args = filters_sql(filters, "c")
        rows = self._read(
            f"SELECT {MATCH}, k.n FROM unnest(%s::text[], %s::int[]) WITH ORDINALITY k(d, i, n)"
            " JOIN chunks c ON c.doc_id = k.d AND c.idx = k.i JOIN documents d ON d.id = c.doc_id"
            f" WHERE true{where} ORDER BY k.n",
            [docs, idxs, *args],
        )
        return [match_row(r, 0.0) for r in rows]

    def _load_vocabulary(self, _token: str) -> tuple[list[str], dict[str, int]]:
        rows = self._read("SELECT term, df FROM terms WHERE df > 0 ORDER BY term")
        return [r[0] for r in rows], dict(rows)

    def similar_terms(
        self, word: str, max_edits: int, filters: Filters = Filters(), first_letter: bool = False
    ) -> list[SimilarTerm]:
        every, df = self._vocab.get()
        terms = starting_with(every, word[:1]) if first_letter else every
        found = similar(word, max_edits, terms, df)
        where, args = filters_sql(filters, "c")
        if not where or not found:
            return found
        # ``terms`` counts the whole index: a term counts when a chunk the filters allow
        # contains it.
        rows = self._read(
            "SELECT k.t FROM unnest(%s::text[], %s::text[]::tsquery[]) k(t, q) WHERE EXISTS"
            f" (SELECT 1 FROM chunks c WHERE c.tsv @@ k.q{where})",
            [[s.term for s in found], [tsquery([(s.term,)]) for s in found], *args],
        )
        present = {r[0] for r in rows}
        return [s for s in found if s.term in present]

    # --------------------------------------------------------------------- vectors
    def embedder(self) -> tuple[str, int] | None:
        meta = dict(
            self._read(
                "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_dimension')"
            )
        )
        if not meta.get("embedder"):
            return None
        return meta["embedder"], int(meta.get("embedder_dimension", 0))

    def set_embedder(self, name: str, dimension: int) -> None:
        if dimension < 1:
            raise InvalidInput(f"embedder dimension must be positive, got {dimension}")

        self._write(lambda cur: set_embedder(cur, self.schema, name, dimension))

    def chunks_to_embed(self, limit: int) -> list[tuple[str, str]]:
        rows = self._read(
            "SELECT c.doc_id, c.idx, d.title, c.header_path, c.text FROM chunks c"
            " JOIN documents d ON d.id = c.doc_id WHERE c.embedding IS NULL ORDER BY c.id"
            " LIMIT %s",
            (limit,),
        )
        return [(f"{r[0]}#{r[1]}", embedding_text(r[2], r[3], r[4])) for r in rows]

    def count_chunks_to_embed(self) -> int:
        return int(self._read("SELECT count(*) FROM chunks WHERE embedding IS NULL")[0][0])

    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        emb = self.embedder()
        if emb is None:
            raise InvalidInput("no embedder recorded: set_embedder before put_vectors")
        params = []
        for chunk_id, blob in items:
            if len(blob) != 4 * emb[1]:
                raise IndexMismatch(
                    f"vector of {chunk_id} has {len(blob) // 4} dimensions, "
                    f"the index holds {emb[1]} ({emb[0]})"
                )
            doc_id, idx = chunk_key(chunk_id)
            params.append((np.frombuffer(blob, dtype=np.float32), doc_id, idx))
        if params:
            self._write(
                lambda cur: cur.executemany(
                    "UPDATE chunks SET embedding = %s WHERE doc_id = %s AND idx = %s", params
                )
            )

    def nearest(self, vector: bytes, filters: Filters, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        query = np.frombuffer(vector, dtype=np.float32)
        where, args = filters_sql(filters, "c")
        sql = (
            "SELECT c.doc_id, c.idx, -(c.embedding <#> %s) FROM chunks c"
            f" WHERE c.embedding IS NOT NULL{where} ORDER BY c.embedding <#> %s LIMIT %s"
        )

        def run(conn: Conn) -> list[Any]:
            if k <= EF_SEARCH:
                return conn.execute(sql, [query, *args, query, k]).fetchall()
            with conn.transaction():
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(k),))
                return conn.execute(sql, [query, *args, query, k]).fetchall()

        rows = self._connections.run(run)
        out = [(f"{d}#{i}", float(s)) for d, i, s in rows]
        out.sort(key=lambda x: -x[1])  # relaxed iterative scans may return slightly out of order
        return out

    def similarities(self, vector: bytes, chunk_ids: Sequence[str]) -> dict[str, float]:
        docs, idxs = chunk_keys(chunk_ids)
        rows = self._read(
            "SELECT c.doc_id, c.idx, -(c.embedding <#> %s) FROM unnest(%s::text[], %s::int[])"
            " k(d, i) JOIN chunks c ON c.doc_id = k.d AND c.idx = k.i"
            " WHERE c.embedding IS NOT NULL",
            (np.frombuffer(vector, dtype=np.float32), docs, idxs),
        )
        return {f"{d}#{i}": float(s) for d, i, s in rows}

    def document_similarities(self, vector: bytes, doc_ids: Sequence[str]) -> dict[str, float]:
        rows = self._read(
            "SELECT c.doc_id, max(-(c.embedding <#> %s)) FROM chunks c"
            " WHERE c.doc_id = ANY(%s::text[]) AND c.embedding IS NOT NULL GROUP BY c.doc_id",
            (np.frombuffer(vector, dtype=np.float32), list(dict.fromkeys(doc_ids))),
        )
        return {d: float(s) for d, s in rows}

    def get_vectors(self, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        docs, idxs = chunk_keys(chunk_ids)
        rows = self._read(
            "SELECT c.doc_id, c.idx, c.embedding FROM unnest(%s::text[], %s::int[]) k(d, i)"
            " JOIN chunks c ON c.doc_id = k.d AND c.idx = k.i WHERE c.embedding IS NOT NULL",
            (docs, idxs),
        )
        return {
            f"{d}#{i}": np.asarray(v.to_numpy(), dtype=np.float32).tobytes() for d, i, v in rows
        }


def _idf(phrases: Sequence[tuple[str, ...]], stats: TermStats) -> dict[tuple[str, ...], float]:
    """FTS5's idf of each distinct phrase, times the times it occurs in ``phrases``."""
    out: dict[tuple[str, ...], float] = {}
    for p in phrases:
        out[p] = out.get(p, 0.0) + fts5_idf(stats.chunks, min(stats.df[t] for t in p))
    return out
