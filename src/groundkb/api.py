"""KnowledgeBase: the one core API every shell (CLI, MCP, HTTP) calls."""

from __future__ import annotations

import dataclasses
import logging
import os
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from . import bounds
from .access import Principal
from .access.sources import READERS_CACHED, readable_sources
from .analyze import lexicon
from .analyze.text import Analyzer, load_synonyms
from .api_writes import Writes
from .apigraph import APIGraph, Endpoint, EndpointLookup
from .errors import (
    ConfigError,
    Forbidden,
    InvalidInput,
    NotFound,
)
from .models import (
    DOC_TYPES,
    Chunk,
    CommandLookup,
    Document,
    Filters,
    SearchResult,
    SourceInfo,
    Stats,
)
from .ops import Operations
from .ops.dbfile import FileWatch, sqlite_path
from .ops.querylog import error_text, strip_credentials
from .ops.visible import VisibleStore
from .refreshing import Refreshing
from .search.background import background
from .search.engine import Searcher
from .settings import Settings, load_settings
from .store import open_store
from .store.base import DocSummary, Store

if TYPE_CHECKING:
    from .answer import BuiltPrompt
    from .embed import Embedder
    from .ingest.validate import Problem

log = logging.getLogger(__name__)


class KnowledgeBase(Writes):
    """A knowledge base on one store. Its writing methods (ingest, sync, embeddings,
    source switches and deletes) are in ``api_writes.py``.

    >>> kb = KnowledgeBase.open("kb.db")            # doctest: +SKIP
    >>> kb.ingest("docs/", source="docs")           # doctest: +SKIP
    >>> kb.search("how do I list users").verdict    # doctest: +SKIP
    """

    def __init__(self, store: Store, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.store = store
        # reads (search, look-ups, listings, prompts) go through the visible store:
        # documents of disabled sources hidden (ops/visible.py)
        self.visible: Store = cast(Store, VisibleStore(store))
        self.ops = Operations(self.settings)
        self._embedder: Embedder | None = None
        self._embedder_opened = False
        self._embed_lock = threading.Lock()
        self._parent: KnowledgeBase | None = None  # set on a caller's view (reader)
        self._readable: frozenset[str] | None = None
        self._configure(self.settings)
        self._db_file = FileWatch(store.location)  # a replaced database file is reopened
        self._reopen = threading.Lock()

    # ----------------------------------------------------------- access control
    def reader(self, principal: Principal) -> KnowledgeBase:
        """This knowledge base as ``principal`` may read it: every read (search, look-ups,
        listings, suggestions, the API graph, prompts, sources and counts) sees only the
        sources the caller may read (``access/sources.py``); writes are refused. One view
        per set of readable sources is kept, with its own derived data."""
        if self._parent is not None:
            return self._parent.reader(principal)
        self._check_db()
        if principal.operator:
            return self
        infos = self._source_infos()
        readable = readable_sources(principal, infos, self.settings)
        if readable >= {i.source.name for i in infos}:
            return self  # every source (no groups anywhere, say): the index as it is
        with self._readers_lock:
            view = self._readers.pop(readable, None)
            if view is None:
                view = self._view(readable)
            self._readers[readable] = view  # most recently used last
            while len(self._readers) > READERS_CACHED:
                self._readers.pop(next(iter(self._readers)))
        return view

    def _view(self, readable: frozenset[str]) -> KnowledgeBase:
        view = object.__new__(KnowledgeBase)
        view.__dict__.update(self.__dict__)
        view._parent, view._readable = self, readable
        view.visible = cast(Store, VisibleStore(self.store, readable))
        view._configure(self.settings)
        return view

    @property
    def readable(self) -> frozenset[str] | None:
        """The sources this view may read; None: every source (not a caller's view)."""
        return self._readable

    def _operator_only(self) -> None:
        if self._parent is not None:
            raise Forbidden("changing the index needs the operator (admin)")

    def _source_infos(self) -> list[SourceInfo]:
        return self._source_list.get()

    def _configure(self, settings: Settings) -> None:
        analyzer = Analyzer(
            load_synonyms(settings.synonyms, settings.default_synonyms),
            inflections=lexicon.inflections if settings.verb_forms else None,
        )
        if settings.retrieval not in ("keyword", "vector", "hybrid"):
            raise ConfigError("retrieval must be keyword, vector or hybrid")
        if settings.fusion not in ("rrf", "weighted"):
            raise ConfigError("fusion must be rrf or weighted")
        searcher = Searcher(self.visible, settings, analyzer, self.ops.gate(self.embedder))
        self.settings, self.analyzer, self.searcher = settings, analyzer, searcher
        # whole-index data the knowledge base derives itself, refreshed like the searcher's
        self._graph: Refreshing[str, APIGraph] = Refreshing(
            self.visible.change_token, self._build_graph
        )
        self._source_list: Refreshing[str, list[SourceInfo]] = Refreshing(
            self.store.change_token, lambda _: self.store.sources()
        )
        self._sources: Refreshing[str, frozenset[str]] = Refreshing(
            self.store.change_token,
            lambda _: frozenset(
                i.source.name
                for i in self._source_infos()
                if self._readable is None or i.source.name in self._readable
            ),
        )
        if self._parent is None:  # views are per settings: a reload makes new ones
            self._readers: dict[frozenset[str], KnowledgeBase] = {}
            self._readers_lock = threading.Lock()

    def _changed(self) -> None:
        """This process changed the index: derived data is rebuilt before the next read."""
        self.searcher.invalidate()
        self._graph.invalidate()
        self._source_list.invalidate()
        self._sources.invalidate()
        if self._parent is None:
            with self._readers_lock:
                for view in self._readers.values():
                    view._changed()

    def _check_db(self) -> None:
        """Reopen the store when its database file was replaced (see ``ops/dbfile.py``)."""
        if self._parent is not None:  # a view keeps its store for this call
            return
        if not self._db_file.replaced():
            return
        with self._reopen:
            log.warning("%s was replaced by another file: reopening it", self._db_file.path)
            assert self._db_file.path is not None
            store = open_store(
                self._db_file.path,
                int8_vectors=self.settings.int8_vectors,
                kept_scores_mb=self.settings.kept_scores_mb,
            )
            # The old store is left to threads still reading it; it closes when unused.
            self.store = store
            self.visible = cast(Store, VisibleStore(store))
            self._configure(self.settings)

    @classmethod
    def open(
        cls,
        location: str | os.PathLike[str] | None = None,
        settings: Settings | None = None,
        *,
        create: bool = True,
        **overrides: Any,
    ) -> KnowledgeBase:
        """Open the knowledge base at ``location`` or ``settings.db``, creating it if
        needed; with ``create=False`` a database file that does not exist is refused
        (NotFound) and nothing is created (read commands and servers)."""
        settings = settings or load_settings()
        if overrides:
            settings = settings.replace(**overrides)
        if location is not None:
            settings = settings.replace(db=os.fspath(location))
        if not create and (missing := _missing_file(settings.db)):
            raise NotFound(
                f"no knowledge base at {missing}; run `groundkb ingest` or `groundkb sync` first"
            )
        store = open_store(
            settings.db,
            pool_size=settings.db_pool_size,
            timeout=settings.db_timeout,
            int8_vectors=settings.int8_vectors,
            kept_scores_mb=settings.kept_scores_mb,
        )
        return cls(store, settings)

    def close(self) -> None:
        self.store.close()

    def reload(self, settings: Settings) -> None:
        """Take new settings (thresholds, synonyms, sources, ...) without reopening.

        The index location, the embedder, ``int8_vectors`` and ``kept_scores_mb`` cannot
        change this way (restart for those); searches already running finish with the old
        settings.
        """
        if settings.db != self.settings.db:
            raise ConfigError(f"db changed ({self.settings.db} -> {settings.db}): restart")
        if settings.int8_vectors != self.settings.int8_vectors:
            raise ConfigError("int8_vectors changed: restart the server to apply it")
        if settings.kept_scores_mb != self.settings.kept_scores_mb:
            raise ConfigError("kept_scores_mb changed: restart the server to apply it")
        if (settings.embedder, settings.embedder_url) != (
            self.settings.embedder,
            self.settings.embedder_url,
        ):
            raise ConfigError("embedder changed: restart the server to load it")
        self._configure(settings)
        self.ops.reconfigure(settings)

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ---------------------------------------------------------------- warm-up
    def warm(self) -> None:
        """Build now what the first searches would otherwise wait for: the data searches
        derive from the whole index, the typo vocabulary and, for vector or hybrid
        retrieval, the embedder (a local one runs once) and the matrix of vectors (at
        100k chunks the first search and the first typo took 0.67 s and 0.5 s); then
        what the store reads ahead (``Store.read_ahead``): on SQLite the matrix's int8
        copy and, as far as half their budget (``kept_scores_mb``) holds them, the
        candidate scores of the words questions search and the chunks' rows (on SciFact,
        5,746 chunks, 2-3 s: a question's first asking then takes about 1 ms less). Safe
        beside searches, which take what it built; ``serve`` runs it on a thread of its
        own. A failure is logged, never raised: a search builds what it needs itself.

        A process that searches many times should call it: the whole vocabulary also
        answers term statistics, which are read from the keyword index without it (at
        100k chunks keyword searches were 15-25 % faster warmed). Searches alone never
        load it: typo correction reads one first letter's terms, which suits a process
        that searches once (the CLI)."""
        started = time.perf_counter()
        try:
            self.searcher.warm()
            stored = self.store.embedder() if self.settings.retrieval != "keyword" else None
            embedder = self.embedder() if stored is not None else None
            if stored is not None and embedder is not None and stored[0] == embedder.name:
                unit = struct.pack(f"<{stored[1]}f", 1.0, *[0.0] * (stored[1] - 1))
                self.visible.nearest(unit, Filters(), 1)  # loads the matrix of vectors
                if not getattr(embedder, "remote", False):  # never an unasked-for request
                    # the model's first run prepares its session (about 1 ms more than
                    # the next), and the vector side's thread starts: not in a search
                    background().submit(embedder.embed_query, "warm up").result()
            self.searcher.read_ahead()  # last: the longest, and searches are served meanwhile
        except Exception as exc:  # a warm-up is an optimisation, never an outage
            log.warning("warming up failed (searches build what they need): %s", error_text(exc))
            return
        log.info("warmed up in %.2f s", time.perf_counter() - started)

    # -------------------------------------------------------------- validation
    def validate(self, sources: Sequence[str] = ()) -> list[Problem]:
        self._operator_only()
        return self._validate(sources)

    def _validate(self, sources: Sequence[str] = ()) -> list[Problem]:
        """Problems authors should fix: dangling related ids, operations without
        summaries, commands without examples, duplicate commands and endpoints."""
        from .ingest.validate import validate_store

        return validate_store(self.store, sources)

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        *,
        type: str | Sequence[str] | None = None,
        category: str | Sequence[str] | None = None,
        source: str | Sequence[str] | None = None,
        limit: int | None = None,
        mode: str | None = None,
    ) -> SearchResult:
        """Search with evidence and a verdict; filters accept one value or several.

        ``mode`` (auto, keyword, vector, hybrid) overrides the retrieval mode for this
        search; ``auto`` (the default) runs what the mode controller allows (ops/mode.py).
        A query longer than ``bounds.MAX_QUERY_CHARS`` is searched by its start, and the
        result's ``notice`` says so; so does it name a source filter that matches no
        stored source (the search then finds nothing there, as asked).
        """
        query = bounds.text(query, "query", None, required=False)  # blank: the engine says so
        query, had_secret = strip_credentials(query)  # never searched, echoed or logged
        cut = "a credential in the query was left out" if had_secret else ""
        if len(query.strip()) > bounds.MAX_QUERY_CHARS:
            query = query.strip()[: bounds.MAX_QUERY_CHARS]
            cut = "; ".join(
                n for n in (cut, f"query cut to its first {bounds.MAX_QUERY_CHARS} characters") if n
            )
        if limit is not None:
            limit = bounds.integer(limit, "limit", *bounds.SEARCH_LIMIT)
        if mode is not None:
            mode = bounds.text(mode, "mode", 20)
        filters = make_filters(type, category, source)
        self._check_db()
        result = self.ops.search(self, query, filters, limit, mode)
        notices = [cut, self._unknown_sources(filters.sources), result.notice]
        if cut or notices[1]:
            result = dataclasses.replace(result, notice="; ".join(n for n in notices if n))
        return result

    def _unknown_sources(self, names: Sequence[str]) -> str:
        """A notice naming the filter's sources that do not exist, with the known ones."""
        if not names:
            return ""
        known = self._source_names()
        unknown = [n for n in names if n not in known]
        if not unknown:
            return ""
        have = ", ".join(sorted(known)[:20]) or "none yet"
        return f"no source named {bounds.excerpt(unknown[0])} (sources: {have})"

    def _source_names(self) -> frozenset[str]:
        """Names of the stored sources, cached while the index is unchanged."""
        return self._sources.get()

    def search_many(self, queries: Sequence[str], **kwargs: Any) -> list[SearchResult]:
        return [self.search(q, **kwargs) for q in queries]

    # ------------------------------------------------------------------ lookup
    def get(self, doc_id: str) -> Document:
        """A document by id; a chunk id (``{doc_id}#{index}``) gives its document."""
        bounds.text(doc_id, "id", bounds.MAX_ID_CHARS)
        self._check_db()
        head, _, index = doc_id.rpartition("#")
        ids = [doc_id, head] if head and index.isdigit() else [doc_id]
        found = self.visible.documents(ids)  # in the order asked: the id itself first
        if not found:
            raise NotFound(f"no document with id {doc_id!r}")
        return found[0]

    def chunks(self, doc_id: str) -> list[Chunk]:
        self.get(doc_id)
        return self.visible.chunks([doc_id])

    def get_command(self, command: str) -> Document:
        """The command document whose exact name or alias is ``command``; NotFound
        (with did-you-mean names in the message) otherwise."""
        found = self.lookup_command(command)
        if found.document is None:
            hint = found.suggestions
            did = f"; did you mean {', '.join(repr(s) for s in hint)}?" if hint else ""
            raise NotFound(f"no command {command.strip()!r}{did}", hint)
        return found.document

    def lookup_command(
        self, command: str, *, source: str | Sequence[str] | None = None
    ) -> CommandLookup:
        """Exact look-up of a command by name or alias: found, or not found with the
        closest command names. Never a near miss presented as the command. A command that
        is an alias of another comes with that command's document (``alias_of``)."""
        bounds.text(command, "command", bounds.MAX_NAME_CHARS)
        self._check_db()
        index = self.searcher.commands_for(make_filters(None, None, source))
        docs = index.by_name.get(tuple(command.strip().lower().split()))
        if not docs:
            return CommandLookup(command.strip(), False, None, index.suggest(command))
        doc = self.get(docs[0].id)
        alias = str(doc.metadata.get("alias_of", ""))
        target = index.alias_target(alias, docs[0]) if alias else None
        return CommandLookup(
            command.strip(), True, doc, alias_of=self.get(target.id) if target else None
        )

    def list_commands(
        self, category: str | None = None, *, limit: int = 50, offset: int = 0
    ) -> tuple[list[DocSummary], int]:
        """A page of command documents (by id) and the total count."""
        limit = bounds.integer(limit, "limit", *bounds.LIST_LIMIT)
        offset = bounds.integer(offset, "offset", 0, bounds.MAX_OFFSET)
        filters = make_filters("command", category)
        self._check_db()
        return self.visible.list_documents(filters, limit, offset), self.visible.count_documents(
            filters
        )

    # -------------------------------------------------------------------- APIs
    def api_graph(self) -> APIGraph:
        """The graph of every ``api`` document, rebuilt when the index changes (in the
        background while it is being written to, see ``refreshing.py``)."""
        self._check_db()
        return self._graph.get()

    def _build_graph(self, _token: str) -> APIGraph:
        return APIGraph.build(self.visible.document_metadata(Filters(types=("api",))))

    def get_api_endpoint(self, path: str, method: str | None = None) -> EndpointLookup:
        """The operation at ``path`` (exact, template or loose match) with its neighbours."""
        bounds.text(path, "path", bounds.MAX_NAME_CHARS)
        if method is not None:
            method = bounds.text(method, "method", 20, required=False) or None
        return self.api_graph().get_endpoint(path.strip(), method)

    def find_endpoints(self, resource: str, operation: str | None = None) -> list[Endpoint]:
        """Operations on ``resource`` (singular or plural), optionally of one kind."""
        bounds.text(resource, "resource", bounds.MAX_NAME_CHARS)
        if operation is not None:
            bounds.text(operation, "operation", bounds.MAX_NAME_CHARS, required=False)
        return self.api_graph().find_endpoints(resource.strip(), operation or None)

    # ----------------------------------------------------------------- prompts
    def build_prompt(
        self,
        question: str,
        *,
        template: str | None = None,
        grounding: str | None = None,
        format: str | None = None,
        budget: int | Mapping[str, int] | None = None,
        state: Mapping[str, Any] | str | None = None,
        messages: Sequence[Mapping[str, Any]] = (),
        instructions: str = "",
        type: str | Sequence[str] | None = None,
        category: str | Sequence[str] | None = None,
        source: str | Sequence[str] | None = None,
        limit: int | None = None,
    ) -> BuiltPrompt:
        """A knowledge-aware prompt for ``question`` (see ``answer/`` and docs/prompts.md).

        Searches, gathers passages, API entities and relationships, axioms and the
        glossary, fits each part into its token budget and renders the template at the
        grounding level asked for. The result lists the template, the token estimate and
        every id included, dropped or trimmed. Needs the ``prompts`` extra.
        """
        from .answer import build_prompt

        return build_prompt(
            self,
            question,
            template=template,
            grounding=grounding,
            format=format,
            budget=budget,
            state=state,
            messages=messages,
            instructions=instructions,
            search={"type": type, "category": category, "source": source, "limit": limit},
        )

    def list_documents(
        self,
        *,
        type: str | Sequence[str] | None = None,
        category: str | Sequence[str] | None = None,
        source: str | Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[DocSummary]:
        limit = bounds.integer(limit, "limit", *bounds.API_LIST_LIMIT)
        offset = bounds.integer(offset, "offset", 0, bounds.MAX_OFFSET)
        self._check_db()
        return self.visible.list_documents(make_filters(type, category, source), limit, offset)

    def sources(self) -> list[SourceInfo]:
        """Every source, or in a caller's view the sources the caller may read."""
        self._check_db()
        if self._readable is None:
            return self.store.sources()
        return [i for i in self._source_infos() if i.source.name in self._readable]

    def stats(self) -> Stats:
        """Index statistics; in a caller's view counted over the readable sources only
        (and without the file's path and size)."""
        self._check_db()
        if self._readable is None:
            return self.store.stats()
        whole = self.store.stats()
        infos = self.sources()
        by_type = {t: self.visible.count_documents(Filters(types=(t,))) for t in DOC_TYPES}
        return Stats(
            path="",
            backend=whole.backend,
            schema_version=whole.schema_version,
            documents=sum(i.documents for i in infos),
            chunks=sum(i.chunks for i in infos),
            sources=len(infos),
            by_type={t: n for t, n in by_type.items() if n},
            size_bytes=0,
        )


def _tuple(value: str | Sequence[str] | None, name: str) -> tuple[str, ...]:
    if value is None or value == "" or value == "all":
        return ()
    if isinstance(value, str):
        bounds.text(value, name, bounds.MAX_FILTER_CHARS, required=False)
        return tuple(v.strip() for v in value.split(",") if v.strip() and v.strip() != "all")
    if not isinstance(value, list | tuple | set | frozenset):
        raise InvalidInput(f"{name} must be text or a list of text")
    for v in value:
        bounds.text(v, name, bounds.MAX_FILTER_CHARS, required=False)
    return tuple(v for v in value if v and v != "all")


def make_filters(
    type: str | Sequence[str] | None = None,
    category: str | Sequence[str] | None = None,
    source: str | Sequence[str] | None = None,
) -> Filters:
    types = _tuple(type, "type")
    bad = [t for t in types if t not in DOC_TYPES]
    if bad:
        raise InvalidInput(
            f"unknown type {bounds.excerpt(bad[0])}; expected one of {', '.join(DOC_TYPES)}"
        )
    return Filters(types, _tuple(category, "category"), _tuple(source, "source"))


def _missing_file(location: str) -> str:
    """The path of a SQLite database file that does not exist, else ''."""
    path = sqlite_path(location)  # None for a server database: its store says
    return path if path and not Path(path).exists() else ""
