"""The Store protocol: what a storage backend must provide, and nothing more.

A store keeps sources, documents and chunks, and answers keyword queries with filters.
Ranking policy (fusion, de-duplication, verdicts) lives in ``search/`` and works with any
store. Backends are chosen by name through :func:`groundkb.store.open_store`.

Contract shared by every implementation (the conformance suite in
``tests/test_store_conformance.py`` checks it):

- ``write`` is atomic per document: after it returns, the document and exactly the
  given chunks are stored; on error nothing of that call is visible. Chunks are upserted
  by ``(doc_id, index)``; a chunk whose ``chunk_hash`` is unchanged is not rewritten;
  chunks with an index past the new count are deleted. Writing a document whose id
  belongs to another source raises :class:`~groundkb.errors.Conflict`.
- Deleting is idempotent; deleting an unknown id deletes nothing.
- ``keyword_search`` scores chunks with BM25 over the analyzed fields ``title``,
  ``aliases``, ``keywords``, ``header`` and ``body`` (weights given per query), where
  every alternative of every clause is an optional phrase (OR semantics). Results come
  best first; ties in any order. Filters restrict by document type, category, source.
- ``generation`` changes after every committed write, in this and in other processes,
  so that callers can cache derived data (vocabulary, command names).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..models import Chunk, Document, Filters, Source, SourceInfo, Stats

FIELDS: tuple[str, ...] = ("title", "aliases", "keywords", "header", "body")


@dataclass(frozen=True, slots=True)
class StoredDoc:
    """What ingestion needs to know about a stored document to plan a re-ingest."""

    id: str
    content_hash: str
    origin: str
    origin_hash: str


@dataclass(frozen=True, slots=True)
class WriteResult:
    status: Literal["inserted", "updated", "unchanged"]
    chunks_written: int
    chunks_deleted: int


@dataclass(frozen=True, slots=True)
class DocSummary:
    """A document without its content: for listings and name look-ups."""

    id: str
    source: str
    type: str
    category: str
    title: str
    summary: str
    keywords: tuple[str, ...]
    aliases: tuple[str, ...]
    command: str
    uri: str
    origin: str = ""
    operation_kind: str = ""  # api documents: create, read, list, update, delete or an action


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """Clauses of alternatives; each alternative is a token sequence (a phrase)."""

    clauses: Sequence[Sequence[tuple[str, ...]]]
    weights: Mapping[str, float]
    filters: Filters = field(default_factory=Filters)
    limit: int = 50


@dataclass(frozen=True, slots=True)
class KeywordMatch:
    chunk_id: str
    doc_id: str
    index: int
    score: float  # higher is better
    fields: Mapping[str, str]  # analyzed text per field, tokens joined by spaces
    text: str
    header_path: str
    chunk_hash: str
    doc: DocSummary
    content_hash: str


@dataclass(frozen=True, slots=True)
class VectorRow:
    """A stored embedding (float32 bytes) and what filters need to know about its chunk."""

    chunk_id: str
    type: str
    category: str
    source: str
    vector: bytes


def embedding_text(title: str, header_path: str, text: str) -> str:
    """What is embedded for a chunk: its title and section path, then its text."""
    head = header_path if header_path.startswith(title) else f"{title} > {header_path}"
    return f"{head}\n{text}" if header_path else f"{title}\n{text}"


class Store(Protocol):
    """Storage backend for a knowledge base. See the module docstring for the contract."""

    path: str
    backend: str

    def close(self) -> None: ...

    def generation(self) -> int:
        """A number that changes whenever any committed write changes the data."""
        ...

    # small named values of the index (schema version, embedder, disabled sources)
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None:
        """Store a value; commits, and changes ``generation()`` like any write."""
        ...

    # sources
    def put_source(self, source: Source) -> None: ...
    def get_source(self, name: str) -> Source | None: ...
    def sources(self) -> list[SourceInfo]: ...
    def delete_source(self, name: str) -> int:
        """Delete a source and its documents; returns the number of documents deleted."""
        ...

    # documents
    def doc_states(self, source: str) -> dict[str, StoredDoc]: ...
    def owners(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """Map of the given ids that exist to the source that owns each."""
        ...

    def write(self, doc: Document, chunks: Sequence[Chunk]) -> WriteResult: ...
    def delete_documents(self, doc_ids: Iterable[str]) -> int: ...
    def get_document(self, doc_id: str) -> Document | None: ...
    def get_chunks(self, doc_id: str) -> list[Chunk]: ...
    def list_documents(
        self, filters: Filters, limit: int = 100, offset: int = 0
    ) -> list[DocSummary]:
        """Documents ordered by id."""
        ...

    def count_documents(self, filters: Filters) -> int: ...

    # search primitives
    def keyword_search(self, query: KeywordQuery) -> list[KeywordMatch]:
        """Candidates for the query, best first by the store's BM25 (about ``limit`` of
        them; a store may return more, scored by fewer words, when it leaves very common
        words out of its index query). The search engine rescores every candidate."""
        ...

    def vocabulary(self) -> dict[str, int]:
        """Every indexed token and the number of chunks that contain it."""
        ...

    def chunk_count(self) -> int: ...
    def row_stats(self) -> tuple[int, float]:
        """(chunks, average indexed tokens per chunk over all fields), for BM25."""
        ...

    def stats(self) -> Stats: ...

    # embeddings: one vector per chunk, dropped when the chunk's hash changes
    def embedder(self) -> tuple[str, int] | None:
        """(name, dimension) of the model that made the stored vectors, if any."""
        ...

    def set_embedder(self, name: str, dimension: int) -> None:
        """Record the model; a different model than before drops every stored vector."""
        ...

    def chunks_to_embed(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (chunk id, text to embed) of chunks without a current vector."""
        ...

    def count_chunks_to_embed(self) -> int: ...
    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None: ...
    def vectors(self) -> list[VectorRow]: ...
    def matches(self, chunk_ids: Sequence[str]) -> list[KeywordMatch]:
        """Chunks by id with their analyzed fields (score 0), for evidence on vector hits."""
        ...
