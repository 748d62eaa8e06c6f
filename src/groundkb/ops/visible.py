"""Enabled and disabled sources: the store as searches, look-ups and listings see it.

A disabled source keeps its documents, chunks and vectors (nothing is re-ingested when
it is enabled again) but is hidden from every read a user makes: keyword and vector
candidates, exact command and endpoint look-ups, document reads and listings, prompts.
Writes (ingest, sync, delete) and the whole-index numbers (``stats``, the vocabulary
and BM25 statistics) still see everything.

The set of disabled sources is one entry of the store's ``meta`` table
(:data:`DISABLED_KEY`, a JSON list of names), so every process serving the same index
agrees, and changing it changes the store's generation (caches rebuild).

:class:`VisibleStore` wraps a :class:`~groundkb.store.base.Store` and delegates every
method it does not override. It narrows filters rather than filtering results where the
store can do it (keyword candidates, listings, counts), so limits and offsets stay
right. When nothing is disabled it adds one cheap read per call and changes nothing.
Later, per-user access control narrows the same way (a view per principal).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Sequence
from typing import Any

from ..models import Document, Filters
from ..store.base import DocSummary, KeywordMatch, KeywordQuery, Store, VectorRow

DISABLED_KEY = "disabled_sources"


def read_disabled(store: Store) -> frozenset[str]:
    raw = store.get_meta(DISABLED_KEY)
    if not raw:
        return frozenset()
    try:
        names = json.loads(raw)
    except ValueError:
        return frozenset()
    return frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()


def write_disabled(store: Store, names: frozenset[str]) -> None:
    store.set_meta(DISABLED_KEY, json.dumps(sorted(names)))


class VisibleStore:
    """A store whose reads skip the documents of disabled sources (see module doc)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._generation: int | None = None
        self._disabled: frozenset[str] = frozenset()
        self._all_sources: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    # ------------------------------------------------------------------ state
    def generation(self) -> int:
        gen = self._store.generation()
        if gen != self._generation:
            disabled = read_disabled(self._store)
            names = tuple(i.source.name for i in self._store.sources()) if disabled else ()
            with self._lock:
                self._generation, self._disabled, self._all_sources = gen, disabled, names
        return gen

    def disabled(self) -> frozenset[str]:
        """The disabled sources, as of the store's current generation."""
        self.generation()
        return self._disabled

    def _narrow(self, filters: Filters) -> Filters | None:
        """``filters`` restricted to enabled sources; None when nothing can match."""
        off = self.disabled()
        if not off:
            return filters
        wanted = filters.sources or self._all_sources
        keep = tuple(s for s in wanted if s not in off)
        return dataclasses.replace(filters, sources=keep) if keep else None

    # ------------------------------------------------------------------ reads
    def keyword_search(self, query: KeywordQuery) -> list[KeywordMatch]:
        narrowed = self._narrow(query.filters)
        if narrowed is None:
            return []
        if narrowed is not query.filters:
            query = dataclasses.replace(query, filters=narrowed)
        return self._store.keyword_search(query)

    def list_documents(
        self, filters: Filters, limit: int = 100, offset: int = 0
    ) -> list[DocSummary]:
        narrowed = self._narrow(filters)
        return [] if narrowed is None else self._store.list_documents(narrowed, limit, offset)

    def count_documents(self, filters: Filters) -> int:
        narrowed = self._narrow(filters)
        return 0 if narrowed is None else self._store.count_documents(narrowed)

    def get_document(self, doc_id: str) -> Document | None:
        doc = self._store.get_document(doc_id)
        return None if doc is None or doc.source in self.disabled() else doc

    def vectors(self) -> list[VectorRow]:
        rows = self._store.vectors()
        off = self.disabled()
        return [r for r in rows if r.source not in off] if off else rows

    def matches(self, chunk_ids: Sequence[str]) -> list[KeywordMatch]:
        found = self._store.matches(chunk_ids)
        off = self.disabled()
        return [m for m in found if m.doc.source not in off] if off else found
