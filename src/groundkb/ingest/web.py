"""Web sources: ingest a crawl into a source, refresh one page, read crawl options.

This is where the crawler (``crawl.py``) meets the writer (``writer.py``): visits are
turned into writes in the calling thread, so the store has one writer, and the report
counts documents exactly as a folder ingest does. See ``crawl.py`` for scope,
politeness and deletion rules, ``fetch.py`` for safety, ``pages.py`` for incremental
re-crawls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError, InvalidInput, NotFound
from ..models import FileError, IngestReport
from ..store.base import Store
from .base import require
from .crawl import (
    USER_AGENT,
    Crawler,
    CrawlOptions,
    CrawlProgress,
    Scope,
    Tally,
    Visit,
    default_prefix,
    normalize,
    rewrite_validators,
    run_queue,
)
from .fetch import FetchError, Refused, resolve
from .pages import known_pages, sitemap_urls
from .writer import SourceWriter

log = logging.getLogger(__name__)

# [[sources]] keys of a web source, besides name and url.
CRAWL_KEYS = ("allow", "allow_networks", "max_pages", "max_depth", "rate", "concurrency")
_MAX_SITEMAPS = 100


def is_url(text: object) -> bool:
    return isinstance(text, str) and text.strip().lower().startswith(("http://", "https://"))


def crawl_options(settings: Any, table: Mapping[str, Any] | None = None,
                  where: str = "crawl") -> CrawlOptions:  # fmt: skip
    """Options from the ``crawl_*`` settings, overridden by a source's table (or flags)."""
    table = table or {}
    opts = CrawlOptions(
        max_pages=settings.crawl_max_pages,
        max_depth=settings.crawl_max_depth,
        rate=settings.crawl_rate,
        concurrency=settings.crawl_concurrency,
        timeout=settings.crawl_timeout,
        max_bytes=settings.crawl_max_mb * 2**20,
        user_agent=settings.crawl_user_agent or USER_AGENT,
    )
    changes: dict[str, Any] = {}
    for key in ("allow", "allow_networks"):
        value = table.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: '{key}' must be a string or a list of strings")
        changes[key] = tuple(v.strip() for v in value if v.strip())
        if key == "allow" and not all(is_url(v) for v in changes[key]):
            raise ConfigError(f"{where}: 'allow' takes http(s) URL prefixes")
    for key, kind, low in (("max_pages", int, 1), ("max_depth", int, 0),
                           ("concurrency", int, 1), ("rate", float, 0.0)):  # fmt: skip
        value = table.get(key)
        if value is None:
            continue
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if (
            not ok
            or (kind is int and not isinstance(value, int))
            or value < low
            or (key == "rate" and value <= 0)
        ):
            raise ConfigError(f"{where}: '{key}' must be a {kind.__name__} above {low}")
        changes[key] = kind(value)
    if changes.get("concurrency", 1) > 32:
        raise ConfigError(f"{where}: 'concurrency' must be at most 32")
    return replace(opts, **changes)


class _Ingest:
    """Feeds visits to the writer and keeps the tally."""

    def __init__(self, store: Store, writer: SourceWriter, crawler: Crawler) -> None:
        self.store = store
        self.writer = writer
        self.crawler = crawler
        self.tally = Tally()
        self.handled: set[str] = set()
        self.incomplete = False
        self.start = ""  # a start page that cannot be read keeps everything

    def __call__(self, v: Visit) -> tuple[str, ...]:
        if v.final in self.handled or v.kind == "redirect_seen":  # reached another way
            return ()
        self.handled.add(v.final)
        t, w = self.tally, self.writer
        if v.url == self.start and v.kind in ("gone", "skipped"):
            v = replace(v, kind="failed", note=f"start page: {v.note}")
        if v.kind == "page" and v.page is not None:
            t.fetched += 1
            w.add(v.final, v.page.loaded, v.page.errors)
            if v.page.not_indexed:
                t.notes[f"not indexed ({v.page.not_indexed})"] += 1
            return v.page.links
        if v.kind == "unchanged" and v.state is not None:
            t.fetched += 1
            s = v.state
            if (v.etag, v.last_modified) != (s.etag, s.last_modified) and (
                v.etag or v.last_modified
            ):
                w.add(v.final, rewrite_validators(self.store, s, v.etag, v.last_modified), [])
            elif not w.unchanged(v.final, s.origin_hash):
                w.keep_origins.add(v.final)
            return s.links
        if v.kind == "gone":
            t.gone += 1
            if v.final in w.by_origin:
                log.info("%s: %s, its documents are deleted", v.final, v.note)
            else:
                t.notes[f"broken link ({v.note})"] += 1
                log.info("broken link %s: %s", v.final, v.note)
            return ()
        if v.kind == "failed":
            t.failed += 1
            self.incomplete = True
            w.fail(v.final, [FileError(v.final, v.note)])
            return ()
        t.skipped += 1
        reason = "refused address" if v.note.startswith("refused") else v.note
        if v.note.startswith("robots.txt"):
            self.incomplete = True  # robots.txt unreadable: keep what we have
        t.notes[reason] += 1
        log.info("skipped %s: %s", v.final, v.note)
        return ()

    def finish(self, known: Mapping[str, Any], files: int) -> IngestReport:
        incomplete = self.incomplete or self.tally.capped
        kept = 0
        if incomplete:
            for origin in known:
                if origin not in self.handled:
                    self.writer.keep_origins.add(origin)
                    kept += 1
        report = self.writer.finish(files)
        return replace(report, notice=self.tally.notice(incomplete, kept))


def _check_start(url: str, crawler: Crawler) -> None:
    p = urlsplit(url)
    try:
        resolve(p.hostname or "", p.port or (443 if p.scheme == "https" else 80), crawler.policy)
    except Refused as exc:
        raise InvalidInput(f"refusing to crawl {url}: {exc}") from exc
    except FetchError:
        pass  # reported as the start page's error


def _start(url: str) -> str:
    for module in ("lxml.html", "html_to_markdown"):
        require(module, "web", "crawling websites")
    if not is_url(url):
        raise InvalidInput(f"not an http(s) URL: {url!r}")
    start = normalize(url)
    if not urlsplit(start).hostname:
        raise InvalidInput(f"no host in {url!r}")
    return start


def ingest_url(
    store: Store,
    url: str,
    source: str,
    *,
    options: CrawlOptions | None = None,
    max_chunk_tokens: int = 500,
    progress: CrawlProgress | None = None,
) -> IngestReport:
    """Make source ``source`` equal to the pages of a crawl from ``url`` (a page or a
    sitemap); see the module docstrings of ``crawl.py`` and ``pages.py``."""
    started = time.perf_counter()
    if not source or not source.strip():
        raise InvalidInput("a source name is required")
    start = _start(url)
    options = options or CrawlOptions()
    scope = Scope(options.allow or (default_prefix(start),))
    if not scope(start):
        raise InvalidInput(f"{start} is outside the allowlist {', '.join(options.allow)}")
    writer = SourceWriter(store, source, start, started)
    known = known_pages(store, writer.by_origin, writer.done)
    crawler = Crawler(scope, options, known, source, max_chunk_tokens)
    _check_start(start, crawler)
    handler = _Ingest(store, writer, crawler)
    path = urlsplit(start).path.lower()
    if path.endswith((".xml", ".xml.gz")):
        seeds = _sitemap_seeds(start, crawler, handler)
        follow = False
        if not seeds:
            handler.incomplete = True  # an empty sitemap deletes nothing
    else:
        seeds, follow = [start], True
        handler.start = start
    writer.loaders_used.add("html")
    run_queue(crawler, seeds, follow=follow, on_visit=handler, tally=handler.tally,
              progress=progress)  # fmt: skip
    return handler.finish(known, len(handler.handled))


def _sitemap_seeds(start: str, crawler: Crawler, handler: _Ingest) -> list[str]:
    pending, pages, read = [start], [], 0
    while pending and read < _MAX_SITEMAPS:
        url = pending.pop(0)
        read += 1
        try:
            _, got = crawler.get_following(url, conditional=False)
            if isinstance(got, str):
                raise FetchError(got)
            if got.status != 200:
                raise FetchError(f"HTTP {got.status}")
            urls, children = sitemap_urls(got.body)
        except (FetchError, InvalidInput) as exc:
            reason = exc.message if isinstance(exc, InvalidInput) else str(exc)
            handler.incomplete = True
            handler.writer.fail(url, [FileError(url, f"sitemap: {reason}")])
            continue
        pages += urls
        pending += children
    return pages


def refresh_url(
    store: Store,
    url: str,
    *,
    source: str | None = None,
    options_for: Callable[[str], CrawlOptions] | None = None,
    max_chunk_tokens: int = 500,
) -> IngestReport:
    """Fetch one page again (conditionally) and update, insert or delete its documents;
    the other pages of its source are left as they are."""
    started = time.perf_counter()
    target = _start(url)
    owner = _owner(store, target) or source
    if owner is None:
        raise NotFound(f"no page {target} in the index; give --source to add it to one")
    previous = store.get_source(owner)
    location = previous.location if previous and is_url(previous.location) else target
    options = options_for(owner) if options_for else CrawlOptions()
    scope = Scope(options.allow or (default_prefix(location),))
    writer = SourceWriter(store, owner, location, started)
    pages = {o: ids for o, ids in writer.by_origin.items() if o == target}
    known = known_pages(store, pages, writer.done)
    crawler = Crawler(scope, options, known, owner, max_chunk_tokens)
    _check_start(target, crawler)
    handler = _Ingest(store, writer, crawler)
    visit = crawler.visit(target, 0)
    handler(visit)
    writer.loaders_used.add("html")
    writer.keep_origins.update(o for o in writer.by_origin if o not in (target, visit.final))
    report = writer.finish(1)
    return replace(report, notice=handler.tally.notice(False, 0))


def _owner(store: Store, url: str) -> str | None:
    """The source holding the page ``url`` (a document id or an origin)."""
    found = store.owners([url]).get(url)
    if found:
        return found
    for info in store.sources():
        if any(s.origin == url for s in store.doc_states(info.source.name).values()):
            return info.source.name
    return None


__all__ = ["CRAWL_KEYS", "crawl_options", "ingest_url", "is_url", "refresh_url"]
