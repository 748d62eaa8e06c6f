"""Search metrics: Prometheus collectors and a short in-memory history for the console.

:class:`Series` keeps the last hour of searches in fixed time buckets (10 s by default):
count, latencies, verdicts, fallbacks and errors per bucket, from which the console
draws latency percentiles and the no-match rate over time. It needs nothing but the
standard library and is always on.

:class:`PromMetrics` holds the Prometheus collectors (``prometheus-client``), in a
registry of its own per knowledge base (so tests and embedders never clash with the
global one). It is created only by a shell that serves ``/metrics``; ``import
groundkb`` never imports ``prometheus_client``. Exposed:

    groundkb_search_duration_seconds{mode}          histogram
    groundkb_searches_total{mode}                   counter
    groundkb_verdicts_total{kind,reason}            counter
    groundkb_fallbacks_total{reason}                counter (searches run by keyword
                                                    instead of the configured mode)
    groundkb_errors_total{operation,code}           counter
    groundkb_ingested_documents_total{source,status} counter (inserted, updated, ...)
    groundkb_ingest_file_errors_total{source}       counter
    groundkb_no_match_ratio                         gauge, over the controller window
    groundkb_search_latency_p95_seconds             gauge, idem
    groundkb_retrieval_mode{configured,mode,reason} gauge (1 for the current mode)
    groundkb_retrieval_mode_changes_total           counter
    groundkb_index_documents / _chunks / _sources / _size_bytes   gauges
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .mode import percentile

if TYPE_CHECKING:
    from ..models import IngestReport, Stats
    from .mode import ModeController, ModeState

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
MAX_LATENCIES_PER_BUCKET = 500


@dataclass
class _Bucket:
    start: float
    searches: int = 0
    no_match: int = 0
    clarify: int = 0
    errors: int = 0
    fallbacks: int = 0
    latencies: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Point:
    """One time bucket of the history."""

    start: float  # unix time
    searches: int
    p50_ms: float
    p95_ms: float
    no_match_rate: float
    clarify_rate: float
    errors: int
    fallbacks: int


class Series:
    """Searches per time bucket over the last ``span_s`` seconds (thread-safe)."""

    def __init__(
        self,
        bucket_s: float = 10.0,
        span_s: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.bucket_s = bucket_s
        self.span_s = span_s
        self.clock = clock
        self._buckets: dict[int, _Bucket] = {}
        self._lock = threading.Lock()

    def _bucket(self) -> _Bucket:
        now = self.clock()
        key = int(now // self.bucket_s)
        b = self._buckets.get(key)
        if b is None:
            b = self._buckets[key] = _Bucket(key * self.bucket_s)
            oldest = int((now - self.span_s) // self.bucket_s)
            for k in [k for k in self._buckets if k < oldest]:
                del self._buckets[k]
        return b

    def add(self, latency_ms: float, verdict: str, fallback: bool) -> None:
        with self._lock:
            b = self._bucket()
            b.searches += 1
            b.no_match += verdict == "no_match"
            b.clarify += verdict == "clarify"
            b.fallbacks += fallback
            if len(b.latencies) < MAX_LATENCIES_PER_BUCKET:
                b.latencies.append(latency_ms)

    def error(self) -> None:
        with self._lock:
            self._bucket().errors += 1

    def points(self, since_s: float | None = None) -> list[Point]:
        """Buckets with activity, oldest first, over the last ``since_s`` seconds."""
        cutoff = self.clock() - (self.span_s if since_s is None else since_s)
        with self._lock:
            buckets = sorted(
                (b for b in self._buckets.values() if b.start + self.bucket_s > cutoff),
                key=lambda b: b.start,
            )
            return [
                Point(
                    start=b.start,
                    searches=b.searches,
                    p50_ms=round(percentile(b.latencies, 0.5), 2),
                    p95_ms=round(percentile(b.latencies, 0.95), 2),
                    no_match_rate=round(b.no_match / b.searches, 4) if b.searches else 0.0,
                    clarify_rate=round(b.clarify / b.searches, 4) if b.searches else 0.0,
                    errors=b.errors,
                    fallbacks=b.fallbacks,
                )
                for b in buckets
            ]

    def summary(self, since_s: float) -> dict[str, float]:
        """Searches, p50/p95 latency and verdict rates over the last ``since_s`` seconds."""
        cutoff = self.clock() - since_s
        with self._lock:
            chosen = [b for b in self._buckets.values() if b.start + self.bucket_s > cutoff]
            latencies = [x for b in chosen for x in b.latencies]
            n = sum(b.searches for b in chosen)
            return {
                "searches": n,
                "p50_ms": round(percentile(latencies, 0.5), 2),
                "p95_ms": round(percentile(latencies, 0.95), 2),
                "no_match_rate": round(sum(b.no_match for b in chosen) / n, 4) if n else 0.0,
                "clarify_rate": round(sum(b.clarify for b in chosen) / n, 4) if n else 0.0,
                "errors": sum(b.errors for b in chosen),
                "fallbacks": sum(b.fallbacks for b in chosen),
            }


class PromMetrics:
    """The Prometheus collectors of one knowledge base (see the module docstring)."""

    def __init__(
        self,
        stats: Callable[[], Stats],
        state: Callable[[], ModeState],
        controller: ModeController,
        series: Series,
    ) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.latency = Histogram(
            "groundkb_search_duration_seconds",
            "Search latency by the retrieval mode that ran.",
            ["mode"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.searches = Counter(
            "groundkb_searches", "Searches by the mode that ran.", ["mode"], registry=r
        )
        self.verdicts = Counter(
            "groundkb_verdicts",
            "Search verdicts by kind and reason.",
            ["kind", "reason"],
            registry=r,
        )
        self.fallbacks = Counter(
            "groundkb_fallbacks",
            "Searches run by keyword instead of the configured mode, by reason.",
            ["reason"],
            registry=r,
        )
        self.errors = Counter(
            "groundkb_errors", "Failed calls by operation and error code.", ["operation", "code"],
            registry=r,
        )  # fmt: skip
        self.ingested = Counter(
            "groundkb_ingested_documents",
            "Documents seen by ingest, by source and outcome.",
            ["source", "status"],
            registry=r,
        )
        self.ingest_errors = Counter(
            "groundkb_ingest_file_errors",
            "Files or entries that could not be ingested, by source.",
            ["source"],
            registry=r,
        )
        r.register(_StateCollector(stats, state, controller, series))

    def search(self, mode: str, seconds: float, kind: str, reason: str, fallback: str) -> None:
        self.latency.labels(mode).observe(seconds)
        self.searches.labels(mode).inc()
        self.verdicts.labels(kind, reason).inc()
        if fallback and fallback != "no_embedder":
            self.fallbacks.labels(fallback).inc()

    def error(self, operation: str, code: str) -> None:
        self.errors.labels(operation, code).inc()

    def ingest(self, report: IngestReport) -> None:
        for status in ("inserted", "updated", "unchanged", "deleted"):
            n = getattr(report, status)
            if n:
                self.ingested.labels(report.source, status).inc(n)
        if report.errors:
            self.ingest_errors.labels(report.source).inc(len(report.errors))

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition format and its content type."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _StateCollector:
    """Gauges read at scrape time: index size, current mode, window rates."""

    def __init__(
        self,
        stats: Callable[[], Stats],
        state: Callable[[], ModeState],
        controller: ModeController,
        series: Series,
    ) -> None:
        self.stats, self.state, self.controller, self.series = stats, state, controller, series

    def describe(self) -> list[Any]:
        return []  # the mode's labels vary: these families are collected on scrape only

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        s = self.stats()
        for name, value, help_ in (
            ("documents", s.documents, "Documents in the index."),
            ("chunks", s.chunks, "Chunks in the index."),
            ("sources", s.sources, "Sources in the index."),
            ("size_bytes", s.size_bytes, "Size of the index on disk."),
        ):
            yield GaugeMetricFamily(f"groundkb_index_{name}", help_, value=value)
        state = self.state()
        g = GaugeMetricFamily(
            "groundkb_retrieval_mode",
            "1 for the retrieval mode searches run in now, with why it differs.",
            labels=["configured", "mode", "reason"],
        )
        g.add_metric([state.configured, state.mode, state.reason], 1)
        yield g
        summary = self.series.summary(self.controller.window_s)
        yield GaugeMetricFamily(
            "groundkb_no_match_ratio",
            "Share of no_match verdicts over the fallback window.",
            value=summary["no_match_rate"],
        )
        yield GaugeMetricFamily(
            "groundkb_search_latency_p95_seconds",
            "95th percentile search latency over the fallback window.",
            value=summary["p95_ms"] / 1000,
        )
        changes = CounterMetricFamily(
            "groundkb_retrieval_mode_changes", "Automatic and manual retrieval mode changes."
        )
        changes.add_metric([], float(self.controller.changes))
        yield changes
