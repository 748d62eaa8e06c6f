"""The Store protocol: the few primitives a storage backend provides, and their contracts.

A store keeps sources, documents, chunks and one embedding per chunk, and answers a few
questions about them. Everything that decides *how well* something matches — BM25F,
fusion, de-duplication, verdicts, which query words are too common to look up, typo
policy — lives once in ``search/`` and works with any store. Backends are chosen by
name through :func:`groundkb.store.open_store`; the conformance suite in
:mod:`groundkb.testing.conformance` checks every contract below against each of them.

Contracts shared by every method:

- **Errors.** A store raises only :class:`~groundkb.errors.GroundKBError` subclasses,
  never a driver's exception: :class:`~groundkb.errors.StoreError` when the backend
  fails (locked, corrupt, not a database, disk full, a query the server refused),
  :class:`~groundkb.errors.StoreUnavailable` when the database cannot be reached (a
  later call may succeed; a store recovers by itself when the database returns),
  :class:`~groundkb.errors.IndexMismatch` for a schema, embedder or vector dimension
  that does not fit, :class:`~groundkb.errors.Conflict` for a document id owned by
  another source, :class:`~groundkb.errors.InvalidInput` for bad arguments.
- **Thread safety.** One store object may be called from several threads at once
  (SQLite serializes calls on one connection; PostgreSQL takes a connection from a
  pool per call). Several processes may open the same database.
- **Atomicity and isolation.** Each writing call is one transaction: after it returns
  its whole effect is visible to every later call, in this and other processes; if it
  raises, none of it is. Each reading call sees one consistent state: never half of a
  concurrent write.
- **Ordering.** Stated per method; "by id" means by code point (the order of Python's
  ``sorted`` on ``str``), the same on every backend.
- **Identity.** A document id belongs to one source. A chunk id is
  ``f"{doc_id}#{index}"``; indexes of a document are ``0..n-1``.
- **Filters.** A :class:`~groundkb.models.Filters` restricts by sets of document
  types, categories and sources (empty set: any). Every method that reads documents,
  chunks or terms for a caller takes one — searches, listings, counts, batched reads,
  similar terms — and applies it inside its queries: a chunk outside the filters is
  never read, counted or returned. This is how a read sees only the sources it may
  (disabled sources, and access control: :mod:`groundkb.ops.visible` narrows
  ``sources`` for every read). Statistics (``term_stats``, the counts of
  ``similar_terms``, ``stats``, ``sources``) describe the whole index.
- **Derived data.** What a backend derives from the whole index and keeps in memory
  (SQLite: the term table and the vector matrix; both: the vocabulary of
  ``similar_terms``) is keyed on :meth:`Store.change_token` and rebuilt like the search
  engine's derived data (:mod:`groundkb.refreshing`): after a write through the
  same store object, before the next read; after another process's write, in the
  background at a bounded rate, the previous version answering meanwhile. Methods that
  say so may therefore answer as of a recent change token rather than the latest;
  everything else reads the database as of the call.
- **Analyzed text.** Stores index the five analyzed fields of a chunk
  (:data:`FIELDS`, from :func:`groundkb.analyze.text.analyzed_fields`: lower-case
  tokens joined by single spaces) and nothing else; terms are those tokens, compared
  exactly. Every backend therefore sees the same terms.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol

from ..errors import GroundKBError
from ..models import Chunk, Document, Filters, Source, SourceInfo, Stats

log = logging.getLogger(__name__)

# A batch that wrote at least this share of the index's chunks has the store reorganize
# what keyword search reads (``Store.optimize``): merging SQLite's keyword index costs
# about as much as writing 4 % of its chunks again (0.8 s for 100k chunks written in
# 19-38 s), so after a batch of a quarter or more it adds at most a sixth to the batch.
OPTIMIZE_SHARE = 0.25

FIELDS: tuple[str, ...] = ("title", "aliases", "keywords", "header", "body")

# Meta keys a store keeps for itself: set_meta refuses them.
RESERVED_META: frozenset[str] = frozenset(
    {
        "schema_version",
        "tokenizer",
        "created_at",
        "kb_id",
        "content",
        "embedder",
        "embedder_dimension",
    }
)
# The application value naming the disabled sources (a JSON list; ops/visible.py).
DISABLED_SOURCES_KEY = "disabled_sources"


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

    def __reduce__(self) -> tuple[Callable[..., DocSummary], tuple[Any, ...]]:
        # Pickled as a call of the constructor: a quarter faster to read back than a
        # slotted frozen dataclass's state, field by field (the derived data a fresh
        # process reads back holds one per API operation; search/snapshot.py).
        return DocSummary, tuple(getattr(self, name) for name in _SUMMARY_FIELDS)


_SUMMARY_FIELDS = tuple(f.name for f in fields(DocSummary))


@dataclass(frozen=True, slots=True)
class DocMetadata:
    """A document's identity and its metadata, nothing else: what the API graph is
    built from (an operation's method, path and resources are in its metadata)."""

    id: str
    source: str
    type: str
    title: str
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """Phrases to look for: a chunk matches when one of its fields contains any phrase
    (a phrase is a sequence of terms that must be adjacent and in order). The ``limit``
    best matches by BM25 over the phrases come back.

    ``together``: groups of phrases a chunk must all hold, anywhere in its fields. The
    ``together_limit`` best chunks that hold every phrase of some group (by BM25 over
    the groups' phrases) come back as well, unless they already do."""

    phrases: Sequence[tuple[str, ...]]
    weights: Mapping[str, float]  # per field of FIELDS; a missing field weighs 1
    filters: Filters = field(default_factory=Filters)
    limit: int = 50
    together: Sequence[tuple[tuple[str, ...], ...]] = ()
    together_limit: int = 0


@dataclass(frozen=True, slots=True)
class KeywordMatch:
    """A chunk with what the search engine needs to score it and show it."""

    chunk_id: str
    doc_id: str
    index: int
    score: float  # higher is better; 0 for chunks fetched by id
    fields: Mapping[str, str]  # analyzed text per field of FIELDS, tokens joined by spaces
    text: str
    header_path: str
    chunk_hash: str
    doc: DocSummary
    content_hash: str


@dataclass(frozen=True, slots=True)
class TermStats:
    """Index statistics for BM25: chunk count, average length, document frequencies."""

    chunks: int  # chunks in the whole index (filters never apply)
    avg_length: float  # tokens per chunk over all fields, averaged; 1.0 when empty
    df: Mapping[str, int]  # every asked term -> chunks containing it (0: none)


@dataclass(frozen=True, slots=True)
class SimilarTerm:
    term: str
    edits: int  # optimal string alignment distance (a swap of neighbours is one edit)
    chunks: int  # chunks of the whole index containing the term


def embedding_text(title: str, header_path: str, text: str) -> str:
    """What is embedded for a chunk: its title and section path, then its text."""
    head = header_path if header_path.startswith(title) else f"{title} > {header_path}"
    return f"{head}\n{text}" if header_path else f"{title}\n{text}"


def chunk_key(chunk_id: str) -> tuple[str, int]:
    """``"doc#3"`` → ``("doc", 3)``; InvalidInput for anything else."""
    from ..errors import InvalidInput

    doc_id, sep, index = chunk_id.rpartition("#")
    if not sep or not index.isdigit():
        raise InvalidInput(f"not a chunk id: {chunk_id!r} (expected 'document-id#index')")
    return doc_id, int(index)


class Store(Protocol):
    """Storage backend of a knowledge base. The module docstring states the contracts
    every method shares; each method states its own."""

    backend: str  # "sqlite", "postgresql"
    location: str  # where the data lives, for people: a path, or a URL without password

    def close(self) -> None:
        """Release connections. Idempotent; no other method may be called afterwards."""
        ...

    def change_token(self) -> str:
        """An opaque value that changes after every committed write, in this or another
        process, and stays the same otherwise: the key for caches of derived data. Cheap
        (one small read at most)."""
        ...

    def content_token(self) -> str | None:
        """An opaque value naming what reads see, the same from every handle and process
        on the same content: it changes with every committed write that
        :meth:`change_token` counts and never comes back, so a cache kept between
        processes may be keyed on it (``search/snapshot.py``). None when this index has
        none (a file opened read-only that no writer of this version marked yet, or an
        index in memory). Cheap (one small read)."""
        ...

    def stats(self) -> Stats:
        """Counts (documents by type, chunks, sources), schema version, location and
        storage size in bytes as the backend measures it."""
        ...

    # ------------------------------------------------------------------- meta
    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key`` (an application value, or one of the store's
        own :data:`RESERVED_META`), None when there is none."""
        ...

    def set_meta(self, key: str, value: str | None) -> None:
        """Store an application value under ``key`` (None removes it), in one
        transaction: every later read, in any process, sees it, and the change token
        changes (caches keyed on it rebuild). Idempotent. InvalidInput for a key of
        :data:`RESERVED_META` or a blank one."""
        ...

    # ---------------------------------------------------------------- sources
    def put_source(self, source: Source) -> None:
        """Create or replace a source's kind, location and groups. Idempotent."""
        ...

    def sources(self) -> list[SourceInfo]:
        """Every source with its document and chunk counts, by name."""
        ...

    def delete_source(self, name: str) -> int:
        """Delete a source and its documents; returns how many documents that was.
        Idempotent: an unknown name deletes nothing and returns 0."""
        ...

    # -------------------------------------------------------------- documents
    def doc_states(self, source: str) -> dict[str, StoredDoc]:
        """Every document of ``source`` by id (empty for an unknown source)."""
        ...

    def owners(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """For each given id that exists, the source that owns it."""
        ...

    def write(self, doc: Document, chunks: Sequence[Chunk]) -> WriteResult:
        """Store a document and exactly these chunks, atomically.

        Chunks are upserted by ``(doc_id, index)``: one whose ``chunk_hash`` is
        unchanged is not rewritten (and keeps its vector); one whose hash changed loses
        its vector; chunks past the new count are deleted. Writing the same input twice
        returns ``unchanged`` the second time. Raises InvalidInput when a chunk does not
        belong at its position or the source was never put, Conflict when the id belongs
        to another source.
        """
        ...

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        """Delete documents with their chunks and vectors; returns how many existed.
        Idempotent; unknown ids are ignored."""
        ...

    def optimize(self) -> None:
        """Reorganize what keyword search reads after a large batch of writes (an ingest
        that wrote a good share of the index). Changes no data and no result; a backend
        that maintains its indexes itself does nothing. The change token may stay the
        same."""
        ...

    def read_ahead(self, weights: Mapping[str, float], max_chunks: int | None = None) -> None:
        """A process that will search many times is warming up: read now what the
        keyword side of a question's first asking would read one piece at a time (the
        candidate scores of single words held by at most ``max_chunks`` chunks, with
        these field weights; the chunks' rows), as far as the backend keeps such things
        in memory, and build what its vector side would build (SQLite: the int8 copy of
        a loaded matrix). Changes no result; a backend that keeps nothing does
        nothing."""
        ...

    def documents(self, doc_ids: Sequence[str], filters: Filters = Filters()) -> list[Document]:
        """The documents with these ids that the filters allow, in the order given;
        unknown ids are skipped, a repeated id appears once."""
        ...

    def chunks(self, doc_ids: Sequence[str], filters: Filters = Filters()) -> list[Chunk]:
        """Every chunk of these documents that the filters allow, grouped by document in
        the order given, each document's chunks by index; unknown ids contribute
        nothing."""
        ...

    def list_documents(
        self, filters: Filters, limit: int = 100, offset: int = 0
    ) -> list[DocSummary]:
        """A page of the documents the filters allow, by id."""
        ...

    def count_documents(self, filters: Filters) -> int:
        """How many documents the filters allow (the total behind list_documents)."""
        ...

    def document_metadata(self, filters: Filters) -> list[DocMetadata]:
        """Every document the filters allow, by id, with its metadata and without its
        content (reading a whole document of every API operation took most of a fresh
        endpoint look-up)."""
        ...

    def flagged_documents(self, filters: Filters, key: str) -> list[str]:
        """The ids, in order, of the documents the filters allow whose metadata holds
        ``key`` as JSON ``true`` (the API operations a spec marks ``deprecated``);
        without reading every document's metadata."""
        ...

    # ------------------------------------------------------------ keyword side
    def keyword_candidates(self, query: KeywordQuery) -> list[KeywordMatch]:
        """Up to ``query.limit`` chunks that contain at least one of the phrases and
        pass the filters, best first by BM25 (k1 1.2, b 0.75, field weights scaling term
        frequency, one length normalization over all fields: SQLite FTS5's ``bm25()``).

        Recall only: the search engine rescores every candidate, so a backend may
        approximate the order as long as it finds the chunks that score best. No phrase
        or a limit of 0 gives no candidates.
        """
        ...

    def chunk_matches(
        self, chunk_ids: Sequence[str], filters: Filters = Filters()
    ) -> list[KeywordMatch]:
        """Chunks by id that the filters allow, with their analyzed fields and document
        (score 0), in the order given; unknown ids are skipped. For vector hits and
        named API operations."""
        ...

    def term_stats(self, terms: Collection[str]) -> TermStats:
        """Chunk count, average chunk length and, for every given term, the number of
        chunks whose fields contain it, in one round trip at most. Consistent (one state of
        the index); as of a recent change token where the backend derives them (see
        "Derived data")."""
        ...

    def documents_holding(
        self, terms: Collection[str], filters: Filters = Filters()
    ) -> dict[str, dict[str, int]]:
        """For every given term, per source, the number of documents ``filters`` allow
        with a chunk whose fields contain it (a source with none left out). A word
        nearly every document of some sources holds, and few others, names them: the
        product's name (see ``Searcher._context_free``). One query per term at most; a
        search asks only for the few words that may name a product."""
        ...

    def similar_terms(
        self, word: str, max_edits: int, filters: Filters = Filters(), first_letter: bool = False
    ) -> list[SimilarTerm]:
        """Every term of a chunk the filters allow within ``max_edits`` edits of
        ``word`` (the vocabulary for typo correction and did-you-mean), nearest first,
        then by term. Edits are optimal string alignment: insertions, deletions,
        substitutions and swaps of two neighbouring letters count one each. A backend
        may serve it from a vocabulary derived per change token (see "Derived data").
        ``first_letter``: only terms that begin with ``word``'s first letter (typo
        correction never changes it), which a backend may answer from that part of its
        vocabulary alone."""
        ...

    # ------------------------------------------------------------ vector side
    def embedder(self) -> tuple[str, int] | None:
        """(name, dimension) of the model that made the stored vectors, if any."""
        ...

    def set_embedder(self, name: str, dimension: int) -> None:
        """Record the model. Another model (or dimension) than before drops every stored
        vector; the same one changes nothing (idempotent)."""
        ...

    def chunks_to_embed(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (chunk id, text to embed) of chunks without a current vector,
        oldest chunks first; empty when every chunk has one."""
        ...

    def count_chunks_to_embed(self) -> int:
        """How many chunks have no current vector."""
        ...

    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Store one vector (float32 bytes) per chunk id, replacing any; ids of chunks
        that no longer exist are ignored. IndexMismatch for a vector whose dimension is
        not the recorded embedder's, InvalidInput when no embedder is recorded."""
        ...

    def nearest(self, vector: bytes, filters: Filters, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (chunk id, inner product with ``vector``) of the chunks with a
        current vector that pass the filters, best first. Vectors are unit length, so
        the score is the cosine. A backend may use an approximate index (HNSW) when it
        states so; exact otherwise. A backend that searches a matrix in memory answers as of
        a recent change token (see "Derived data"). IndexMismatch for a vector of another
        dimension."""
        ...

    def similarities(self, vector: bytes, chunk_ids: Sequence[str]) -> dict[str, float]:
        """Exact inner product of ``vector`` with each given chunk that has a current
        vector (for fusion, which scores every candidate on both sides); as of the same
        version of the vectors as :meth:`nearest`."""
        ...

    def document_similarities(self, vector: bytes, doc_ids: Sequence[str]) -> dict[str, float]:
        """Per document, the best exact inner product of ``vector`` with any of its chunks
        that has a current vector (an API operation is one meaning however many chunks
        it has); documents without one are left out. As of the same version of the
        vectors as :meth:`nearest`."""
        ...

    def get_vectors(self, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        """The current vectors (float32 bytes) of the given chunks that have one."""
        ...


def optimize_after(store: Store, chunks_written: int) -> None:
    """``store.optimize()`` after a batch of writes that wrote at least
    :data:`OPTIMIZE_SHARE` of the index's chunks (an ingest, a copy). A failure is logged,
    never raised: searches are right either way, only slower."""
    if not chunks_written:
        return
    try:
        if chunks_written < OPTIMIZE_SHARE * store.stats().chunks:
            return
        started = time.perf_counter()
        store.optimize()
    except GroundKBError as exc:
        log.warning("reorganizing the keyword index failed (searches are slower): %s", exc)
        return
    log.info("reorganized the keyword index in %.2f s", time.perf_counter() - started)


def read_disabled(store: Store) -> frozenset[str]:
    """The disabled sources recorded in ``store`` (a malformed value disables nothing)."""
    raw = store.get_meta(DISABLED_SOURCES_KEY)
    try:
        names = json.loads(raw) if raw else []
    except ValueError:
        return frozenset()
    return frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()


def write_disabled(store: Store, names: Collection[str]) -> None:
    """Record the disabled sources (none: the value is removed)."""
    store.set_meta(DISABLED_SOURCES_KEY, json.dumps(sorted(names)) if names else None)
