"""Operations: what every shell shares about running a knowledge base in production.

One :class:`Operations` per :class:`~groundkb.api.KnowledgeBase` (``kb.ops``):

- ``mode.py``: the retrieval mode controller (fallback chain, kill switch);
- ``querylog.py``: one structured, redacted log line per query;
- ``metrics.py``: the console's short history and the Prometheus collectors;
- ``visible.py``: enabled/disabled sources, the store as reads see it.

:meth:`Operations.search` runs every search of the knowledge base: it asks the mode
controller which mode to run, times the search, reports the outcome back, counts it
and logs it. The CLI, MCP and REST shells all go through it, so they share one mode and
one set of numbers per process. Nothing here imports a web framework or
``prometheus_client`` until a shell asks for metrics.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import GroundKBError, InvalidInput
from ..models import Filters, IngestReport, SearchResult
from . import querylog
from .metrics import PromMetrics, Series
from .mode import ModeController, ModeState

if TYPE_CHECKING:
    from ..api import KnowledgeBase
    from ..settings import Settings
    from .backfill import Backfill

log = logging.getLogger(__name__)
T = TypeVar("T")

MODES = ("auto", "keyword", "vector", "hybrid")
FALLBACK_TEXT = {
    "latency": "slow",
    "errors": "failing",
    "forced": "switched off by an administrator",
}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, as far as the shell knows: for the query log (and, later, for
    access control). ``shell`` is cli, mcp or rest."""

    shell: str = ""
    user: str | None = None


CALLER: ContextVar[Caller | None] = ContextVar("groundkb_caller", default=None)


@contextmanager
def calling(caller: Caller) -> Iterator[None]:
    token = CALLER.set(caller)
    try:
        yield
    finally:
        CALLER.reset(token)


def controller_for(settings: Settings) -> ModeController:
    return ModeController(
        settings.retrieval,
        p95_ms=settings.fallback_p95_ms,
        error_rate=settings.fallback_error_rate,
        window_s=settings.fallback_window_s,
        min_searches=settings.fallback_min_searches,
        cooldown_s=settings.fallback_cooldown_s,
    )


class Operations:
    """Mode control, metrics and the query log of one knowledge base."""

    def __init__(self, settings: Settings) -> None:
        self.mode = controller_for(settings)
        self.series = Series()
        self.metrics: PromMetrics | None = None
        self.last_ingest: dict[str, IngestReport] = {}
        self._local = threading.local()
        self._lock = threading.Lock()
        self.probe: threading.Thread | None = None  # the background embedder probe, if any
        self.backfill: Backfill | None = None  # a server's background embedding, if on

    def start_backfill(self, kb: KnowledgeBase) -> Backfill | None:
        """Start embedding pending chunks in the background (``backfill.py``) when the
        settings ask for it and an embedder is configured; None otherwise."""
        s = kb.settings
        if not s.embed_in_background or s.retrieval == "keyword" or self.backfill is not None:
            return self.backfill
        if not kb.embedder_configured():
            return None
        from .backfill import Backfill

        self.backfill = Backfill(kb).start()
        return self.backfill

    def stop_backfill(self) -> None:
        if self.backfill is not None:
            self.backfill.stop()
            self.backfill = None

    def reconfigure(self, settings: Settings) -> None:
        """New thresholds after a settings reload; a forced keyword mode stays forced."""
        self.mode.update(controller_for(settings))

    def enable_metrics(self, kb: KnowledgeBase) -> PromMetrics:
        """Create the Prometheus collectors (imports ``prometheus_client``)."""
        with self._lock:
            if self.metrics is None:
                self.metrics = PromMetrics(
                    kb.stats, lambda: self.retrieval(kb), self.mode, self.series
                )
            return self.metrics

    # --------------------------------------------------------------- embedder
    def gate(self, embedder: Callable[[], Any]) -> Callable[[], Any]:
        """The embedder as the searcher sees it: none while this thread's search must
        run by keyword (the searcher then does exactly what keyword mode does)."""

        def gated() -> Any:
            return None if getattr(self._local, "keyword_only", False) else embedder()

        return gated

    # ----------------------------------------------------------------- search
    def search(
        self,
        kb: KnowledgeBase,
        query: str,
        filters: Filters,
        limit: int | None,
        mode: str | None,
    ) -> SearchResult:
        requested = (mode or "auto").strip().lower()
        if requested not in MODES:
            raise InvalidInput(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        configured = kb.settings.retrieval
        searcher = kb.searcher
        fallback = ""
        watched = False
        if requested == "auto":
            semantic = configured != "keyword" and _has_embedder(kb)
            fallback = (self.mode.degraded() or "") if semantic else ""
            if fallback and self.mode.probe_due():
                self._start_probe(kb)
            keyword_only = bool(fallback)
            watched = semantic and not keyword_only
        else:
            keyword_only = requested == "keyword"
            if not keyword_only and requested != configured:
                searcher = copy.copy(searcher)  # shares the derived data; other settings
                searcher.settings = kb.settings.replace(retrieval=requested)
        loaded_before = kb.embedder_loaded
        started = time.perf_counter()
        self._local.keyword_only = keyword_only
        try:
            result = searcher.search(query, filters, limit)
        except Exception as exc:
            ms = (time.perf_counter() - started) * 1000
            if watched and not isinstance(exc, InvalidInput):
                self.mode.record(ms, error=True)
            self._failed(query, filters, requested, ms, exc)
            raise
        finally:
            self._local.keyword_only = False
        ms = (time.perf_counter() - started) * 1000
        embed_failed = result.notice.startswith("embedder failed")
        if watched and embed_failed:  # the circuit breaker: keyword at once from now on
            self.mode.trip(f"{result.notice.split('; ')[0]}; retrying in the background")
        elif watched and (loaded_before or not kb.embedder_loaded):
            # a search that loaded the model (once per process) says nothing about the
            # latency searches have: it does not count towards the fallback
            self.mode.record(ms, error=False)
        notice = result.notice
        wanted = configured if requested == "auto" else requested
        if fallback:
            notice = f"{wanted} retrieval is {FALLBACK_TEXT[fallback]}: keyword search only"
            if fallback != "forced":
                notice += f" ({self.mode.state().detail or 'cooling down'})"
        elif result.mode == "keyword" and wanted != "keyword":
            if embed_failed:
                fallback = "embedder_failed"
            elif notice:
                fallback = "index_mismatch"
            elif kb.embedder_missing:  # keyword-only by configuration: said by ``fallback``
                fallback = "no_embedder"
            # else: answered by structure (a command looked up by name), no fallback
        result = dataclasses.replace(result, fallback=fallback, notice=notice)
        self._searched(query, filters, requested, ms, result)
        return result

    def _searched(
        self, query: str, filters: Filters, requested: str, ms: float, result: SearchResult
    ) -> None:
        v = result.verdict
        self.series.add(ms, v.kind, bool(result.fallback) and result.fallback != "no_embedder")
        if self.metrics is not None:
            self.metrics.search(result.mode, ms / 1000, v.kind, v.reason, result.fallback)
        if not querylog.wanted():
            return
        caller = CALLER.get() or Caller()
        querylog.emit(
            querylog.search_line(
                query,
                result=result,
                filters=_filter_map(filters),
                requested_mode=requested,
                fallback=result.fallback,
                latency_ms=ms,
                shell=caller.shell,
                user=caller.user,
            )
        )

    def _failed(
        self, query: str, filters: Filters, requested: str, ms: float, exc: BaseException
    ) -> None:
        code = exc.code if isinstance(exc, GroundKBError) else "internal_error"
        message = exc.message if isinstance(exc, GroundKBError) else type(exc).__name__
        caller = CALLER.get() or Caller()
        querylog.emit(
            querylog.search_line(
                query,
                result=None,
                filters=_filter_map(filters),
                requested_mode=requested,
                fallback="",
                latency_ms=ms,
                error=(code, message),
                shell=caller.shell,
                user=caller.user,
            )
        )

    def _start_probe(self, kb: KnowledgeBase) -> None:
        """Try the embedder in a background thread and report to the mode controller."""

        def probe() -> None:
            try:
                emb = kb.embedder()
                if emb is None:
                    raise RuntimeError("no embedder")
                emb.embed_query("groundkb health check")
            except Exception as exc:
                why = f"embedder failed ({querylog.error_text(exc)}); retrying in the background"
                log.info("embedder probe failed: %s", why)
                self.mode.probe_result(False, why)
            else:
                log.info("embedder probe succeeded: back to %s", self.mode.configured)
                self.mode.probe_result(True)

        self.probe = threading.Thread(target=probe, name="groundkb-embedder-probe", daemon=True)
        self.probe.start()

    # ------------------------------------------------------------ other events
    def error(self, operation: str, code: str) -> None:
        """Count a failed call; the shells call this where they map errors."""
        self.series.error()
        if self.metrics is not None:
            self.metrics.error(operation, code)

    def ingested(self, report: IngestReport) -> None:
        self.last_ingest[report.source] = report
        if self.metrics is not None:
            self.metrics.ingest(report)

    def state(self) -> ModeState:
        return self.mode.state()

    def retrieval(self, kb: KnowledgeBase) -> ModeState:
        """The mode searches run in now and why, including the reasons that are not the
        controller's: no embedder (``no_embedder``), an index embedded with another
        model or not at all (``index_mismatch``). Opens the embedder if needed."""
        state = self.mode.state()
        if state.reason or state.configured == "keyword":
            return state
        try:
            emb = kb.embedder()
        except Exception as exc:  # searches fall back and say so; so does the state
            detail = f"embedder failed ({querylog.error_text(exc)})"
            return dataclasses.replace(
                state, mode="keyword", reason="embedder_failed", detail=detail
            )
        if emb is None:
            detail = "no embedder configured or installed"
            return dataclasses.replace(state, mode="keyword", reason="no_embedder", detail=detail)
        stored = kb.store.embedder()
        if stored is None and not kb.store.term_stats(()).chunks:
            detail = "the index is empty: run `groundkb ingest` or `groundkb sync`"
            return dataclasses.replace(
                state, mode="keyword", reason="index_mismatch", detail=detail
            )
        if stored is None or stored[0] != emb.name:
            have = stored[0] if stored else "no embeddings"
            detail = f"index has {have}, embedder is {emb.name}: run `groundkb reindex`"
            return dataclasses.replace(
                state, mode="keyword", reason="index_mismatch", detail=detail
            )
        return state


def _has_embedder(kb: KnowledgeBase) -> bool:
    """Whether searches can use an embedder, without opening it (a search that needs it
    opens it; one answered by an exact command name never does). One that fails to open
    counts as one: the searcher then falls back to keyword and reports it."""
    return kb.embedder_configured()


def _filter_map(filters: Filters) -> dict[str, tuple[str, ...]]:
    return {"type": filters.types, "category": filters.categories, "source": filters.sources}


__all__ = ["CALLER", "Caller", "ModeController", "ModeState", "Operations", "calling"]
