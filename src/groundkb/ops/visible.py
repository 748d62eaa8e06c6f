"""The sources a read may see: one mechanism for disabled sources (and access control).

A read — a search, a look-up, a listing, a prompt — sees only some sources: today every
source but the disabled ones; with access control, also only those the caller may read.
That set is applied in exactly one way: :class:`VisibleStore` wraps a
:class:`~groundkb.store.base.Store` and narrows the ``sources`` of the
:class:`~groundkb.models.Filters` of every reading call to it, so each backend applies
it *inside* its queries (keyword candidates, nearest neighbours, listings, counts,
batched reads, similar terms): limits, offsets and top-k stay right, and nothing of a
hidden source is read. Everything built in memory from documents (the engine's command
names, API operations and known names, the API graph) is built from this view, so a
hidden source is neither a hit nor a suggestion, a did-you-mean, a command or an
endpoint. When every source is hidden, reads return nothing without asking the store.

What stays whole: writes (ingest, sync, delete go to the store itself), the numbers
that describe the index (``stats``, the source list, which marks disabled sources) and
the BM25 statistics (``term_stats``), so hiding a source never changes how the others
rank. A word that only a hidden source contains therefore still counts as a word the
index knows: it is not typo-corrected, and a ``no_match`` does not name it among the
words the knowledge base never mentions.

Access control narrows the same way: a view made for a caller (``readable``) allows
the sources the caller may read minus the disabled ones. What is built in memory from
such a view (the searcher's derived data, the API graph) is per view, and the knowledge
base keeps one view per set of readable sources (``KnowledgeBase.reader``). A caller's
view also answers ``term_stats`` for its own sources: a word that only sources the caller
may not read contain has frequency 0 there, so it is typo-corrected, named among the
words the knowledge base never mentions, and never hinted at. The index-wide totals
(chunk count, average length) and the BM25 statistics the store applies inside its
keyword query stay whole: scores are comparable across callers.

A disabled source keeps its documents, chunks and vectors (nothing is re-ingested when
it is enabled again). The set is one application value of the store's meta
(:data:`~groundkb.store.base.DISABLED_SOURCES_KEY`, a JSON list of names), so every
process serving the same index agrees; changing it changes the store's change token,
and every cache keyed on it rebuilds.

Cost: ``change_token()``, listings, counts and batched reads check the token (one small
read) and read the switch again only when it moved. The candidate reads of a search
(keyword candidates, nearest neighbours, chunk matches, similar terms) use the view as
of the latest check — a search checks at its start (the engine reads the change token
for its derived data) — so a search on PostgreSQL makes no extra round trip.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Collection, Sequence
from typing import Any

from ..models import Chunk, Document, Filters
from ..store.base import (
    DISABLED_SOURCES_KEY,
    DocMetadata,
    DocSummary,
    KeywordMatch,
    KeywordQuery,
    SimilarTerm,
    Store,
    TermStats,
    read_disabled,
    write_disabled,
)

DISABLED_KEY = DISABLED_SOURCES_KEY
__all__ = ["DISABLED_KEY", "VisibleStore", "narrow", "read_disabled", "write_disabled"]


def narrow(filters: Filters, allowed: frozenset[str] | None) -> Filters | None:
    """``filters`` restricted to the ``allowed`` sources (None: every source); None when
    nothing can pass."""
    if allowed is None:
        return filters
    keep = tuple(s for s in filters.sources if s in allowed) if filters.sources else allowed
    if not keep:
        return None
    return dataclasses.replace(filters, sources=tuple(sorted(keep)))


@dataclasses.dataclass(frozen=True, slots=True)
class _View:
    token: str
    disabled: frozenset[str]
    allowed: frozenset[str] | None  # None: every source


class VisibleStore:
    """The store as reads see it: only sources that are not disabled (module doc).
    Methods it does not define go to the store unchanged."""

    def __init__(self, store: Store, readable: frozenset[str] | None = None) -> None:
        self._store = store
        self._readable = readable  # None: every source (no access control)
        self._lock = threading.Lock()
        self._view: _View | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    # ------------------------------------------------------------------ state
    def _current(self) -> _View:
        token = self._store.change_token()
        view = self._view
        if view is None or view.token != token:
            disabled = read_disabled(self._store)
            allowed = None
            if disabled:
                names = {i.source.name for i in self._store.sources()}
                allowed = frozenset(names - disabled)
            if self._readable is not None:
                allowed = self._readable - disabled if allowed is None else allowed & self._readable
            view = _View(token, disabled, allowed)
            with self._lock:
                self._view = view
        return view

    def _latest(self) -> _View:
        """The view as of the latest check (a search's start), without a store read."""
        view = self._view
        return view if view is not None else self._current()

    def change_token(self) -> str:
        return self._current().token

    def content_token(self) -> str | None:
        """The store's content token and the sources this view sees: what is built from
        the view is the same wherever both are."""
        content = self._store.content_token()
        if content is None:
            return None
        allowed = self._current().allowed
        return content + "|" + ("*" if allowed is None else json.dumps(sorted(allowed)))

    def disabled(self) -> frozenset[str]:
        """The disabled sources, as of the store's current change token."""
        return self._current().disabled

    def allowed(self) -> frozenset[str] | None:
        """The sources reads may see (None: every source)."""
        return self._current().allowed

    def narrow(self, filters: Filters, *, check: bool = True) -> Filters | None:
        """``filters`` restricted to the visible sources; None when nothing is. With
        ``check=False``, as of the latest check (no store read)."""
        return narrow(filters, (self._current() if check else self._latest()).allowed)

    @property
    def restricted(self) -> bool:
        """Whether this is a caller's view (access control), not the whole index."""
        return self._readable is not None

    # ------------------------------------------------------------------ reads
    def term_stats(self, terms: Collection[str]) -> TermStats:
        """The store's statistics; in a caller's view a term no readable source contains
        has frequency 0 (module doc)."""
        stats = self._store.term_stats(terms)
        if self._readable is None or not terms:
            return stats
        filters = self.narrow(Filters(), check=False)
        df = {
            t: n if n and filters is not None and self._store.similar_terms(t, 0, filters) else 0
            for t, n in stats.df.items()
        }
        return dataclasses.replace(stats, df=df)

    def documents_holding(
        self, terms: Collection[str], filters: Filters = Filters()
    ) -> dict[str, dict[str, int]]:
        """The store's counts over the documents of the visible sources."""
        narrowed = self.narrow(filters, check=False)
        if narrowed is None:
            return {t: {} for t in terms}
        return self._store.documents_holding(terms, narrowed)

    def keyword_candidates(self, query: KeywordQuery) -> list[KeywordMatch]:
        filters = self.narrow(query.filters, check=False)
        if filters is None:
            return []
        return self._store.keyword_candidates(dataclasses.replace(query, filters=filters))

    def nearest(self, vector: bytes, filters: Filters, k: int) -> list[tuple[str, float]]:
        narrowed = self.narrow(filters, check=False)
        return [] if narrowed is None else self._store.nearest(vector, narrowed, k)

    def list_documents(
        self, filters: Filters, limit: int = 100, offset: int = 0
    ) -> list[DocSummary]:
        narrowed = self.narrow(filters)
        return [] if narrowed is None else self._store.list_documents(narrowed, limit, offset)

    def count_documents(self, filters: Filters) -> int:
        narrowed = self.narrow(filters)
        return 0 if narrowed is None else self._store.count_documents(narrowed)

    def document_metadata(self, filters: Filters) -> list[DocMetadata]:
        narrowed = self.narrow(filters)
        return [] if narrowed is None else self._store.document_metadata(narrowed)

    def flagged_documents(self, filters: Filters, key: str) -> list[str]:
        narrowed = self.narrow(filters)
        return [] if narrowed is None else self._store.flagged_documents(narrowed, key)

    def documents(self, doc_ids: Sequence[str], filters: Filters = Filters()) -> list[Document]:
        narrowed = self.narrow(filters)
        return [] if narrowed is None else self._store.documents(doc_ids, narrowed)

    def chunks(self, doc_ids: Sequence[str], filters: Filters = Filters()) -> list[Chunk]:
        narrowed = self.narrow(filters)
        return [] if narrowed is None else self._store.chunks(doc_ids, narrowed)

    def chunk_matches(
        self, chunk_ids: Sequence[str], filters: Filters = Filters()
    ) -> list[KeywordMatch]:
        narrowed = self.narrow(filters, check=False)
        return [] if narrowed is None else self._store.chunk_matches(chunk_ids, narrowed)

    def similar_terms(
        self, word: str, max_edits: int, filters: Filters = Filters(), first_letter: bool = False
    ) -> list[SimilarTerm]:
        narrowed = self.narrow(filters, check=False)
        if narrowed is None:
            return []
        return self._store.similar_terms(word, max_edits, narrowed, first_letter)
