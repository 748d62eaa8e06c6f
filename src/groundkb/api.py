"""KnowledgeBase: the one core API every shell (CLI, MCP, HTTP) calls."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from .analyze.text import Analyzer, load_synonyms
from .errors import InvalidInput, NotFound
from .ingest import Progress, ingest_path
from .models import (
    DOC_TYPES,
    Chunk,
    Document,
    Filters,
    IngestReport,
    SearchResult,
    SourceInfo,
    Stats,
)
from .search.engine import Searcher
from .settings import Settings, load_settings
from .store import open_store
from .store.base import DocSummary, Store

log = logging.getLogger(__name__)


class KnowledgeBase:
    """A knowledge base on one store.

    >>> kb = KnowledgeBase.open("kb.db")            # doctest: +SKIP
    >>> kb.ingest("docs/", source="docs")           # doctest: +SKIP
    >>> kb.search("how do I list users").verdict    # doctest: +SKIP
    """

    def __init__(self, store: Store, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.store = store
        self.analyzer = Analyzer(
            load_synonyms(self.settings.synonyms, self.settings.default_synonyms)
        )
        self.searcher = Searcher(store, self.settings, self.analyzer)

    @classmethod
    def open(
        cls,
        location: str | os.PathLike[str] | None = None,
        settings: Settings | None = None,
        **overrides: Any,
    ) -> KnowledgeBase:
        """Open (creating if needed) the knowledge base at ``location`` or ``settings.db``."""
        settings = settings or load_settings()
        if overrides:
            settings = settings.replace(**overrides)
        if location is not None:
            settings = settings.replace(db=os.fspath(location))
        return cls(open_store(settings.db), settings)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ ingest
    def ingest(
        self, path: str | os.PathLike[str], source: str, progress: Progress | None = None
    ) -> IngestReport:
        """Make source ``source`` equal to the documents under ``path`` (see ingest/)."""
        return ingest_path(
            self.store,
            path,
            source,
            max_chunk_tokens=self.settings.max_chunk_tokens,
            progress=progress,
        )

    def delete(self, doc_ids: Sequence[str] = (), source: str | None = None) -> int:
        """Delete documents by id, or a whole source; returns documents deleted."""
        if source is not None:
            if self.store.get_source(source) is None:
                raise NotFound(f"no source named {source!r}")
            return self.store.delete_source(source)
        return self.store.delete_documents(doc_ids)

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        *,
        type: str | Sequence[str] | None = None,
        category: str | Sequence[str] | None = None,
        source: str | Sequence[str] | None = None,
        limit: int | None = None,
    ) -> SearchResult:
        """Search with evidence and a verdict; filters accept one value or several."""
        return self.searcher.search(query, make_filters(type, category, source), limit)

    def search_many(self, queries: Sequence[str], **kwargs: Any) -> list[SearchResult]:
        return [self.search(q, **kwargs) for q in queries]

    # ------------------------------------------------------------------ lookup
    def get(self, doc_id: str) -> Document:
        doc = self.store.get_document(doc_id)
        if doc is None:
            raise NotFound(f"no document with id {doc_id!r}")
        return doc

    def chunks(self, doc_id: str) -> list[Chunk]:
        self.get(doc_id)
        return self.store.get_chunks(doc_id)

    def get_command(self, command: str) -> Document:
        """The command document whose exact name or alias is ``command``; NotFound otherwise."""
        index = self.searcher.derived().commands
        docs = index.by_name.get(tuple(command.strip().lower().split()))
        if not docs:
            hint = index.suggest(command)
            did = f"; did you mean {', '.join(repr(s) for s in hint)}?" if hint else ""
            raise NotFound(f"no command {command.strip()!r}{did}")
        return self.get(docs[0].id)

    def list_documents(
        self,
        *,
        type: str | Sequence[str] | None = None,
        category: str | Sequence[str] | None = None,
        source: str | Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[DocSummary]:
        return self.store.list_documents(make_filters(type, category, source), limit, offset)

    def sources(self) -> list[SourceInfo]:
        return self.store.sources()

    def stats(self) -> Stats:
        return self.store.stats()


def _tuple(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None or value == "" or value == "all":
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip() and v.strip() != "all")
    return tuple(v for v in value if v and v != "all")


def make_filters(
    type: str | Sequence[str] | None = None,
    category: str | Sequence[str] | None = None,
    source: str | Sequence[str] | None = None,
) -> Filters:
    types = _tuple(type)
    bad = [t for t in types if t not in DOC_TYPES]
    if bad:
        raise InvalidInput(f"unknown type {bad[0]!r}; expected one of {', '.join(DOC_TYPES)}")
    return Filters(types, _tuple(category), _tuple(source))
