"""Crawling a documentation site into a source: polite, safe and incremental.

``ingest_url(store, "https://docs.example.com/guide/", "docs")`` makes the source equal
to the pages reachable from the start URL (or listed in a sitemap, when the start URL is
one), through the same :class:`~groundkb.ingest.writer.SourceWriter` as files: per-page
upserts, only changed chunks rewritten, per-page errors without losing the rest.

**Scope.** A URL is crawled only when it starts with one of the ``allow`` prefixes
(scheme, host and path; ``http`` also admits ``https`` on the same host). The default is
the start URL's folder: ``https://x/docs/index.html`` → ``https://x/docs/``, and
``https://x/docs`` → ``/docs`` and everything under it. Redirects are followed (five
hops at most) only while they stay in scope; each hop is checked again, addresses too.
From a start page, links are followed to ``max_depth``; from a sitemap (or sitemap
index, gzip allowed) only the listed pages are read. At most ``max_pages`` URLs.

**Politeness.** robots.txt is read once per host (RFC 9309: a 4xx means no rules, a 5xx
or a failure means "stay away") and honoured for the ``groundkb`` product token,
including ``Crawl-delay`` and ``Request-rate`` when they ask for a slower pace than
``rate``. Each host gets at most ``concurrency`` requests in flight and ``rate`` request
starts per second. The user agent names groundkb. ``<meta name="robots">`` and
``X-Robots-Tag`` noindex / nofollow are honoured.

**Safety** is in ``fetch.py``: addresses checked before connecting and pinned, sizes and
times capped, nothing executed.

**Incremental** (see ``pages.py``): conditional requests, origin hashes, stored links.
Pages that answer 404 or 410, are no longer linked (or no longer in the sitemap) or are
now disallowed by robots.txt are deleted, but only when the crawl was complete: after a
failed fetch or with ``max_pages`` reached, pages not reached are kept, and the report's
notice says so. ``refresh_url`` re-fetches one page.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.robotparser
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

from ..errors import InvalidInput
from ..models import Chunk
from ..store.base import Store
from .base import LoadContext, Loaded
from .fetch import REDIRECTS, FetchError, FetchPolicy, Refused, Response, fetch, parse_networks
from .pages import LoadedPage, PageState, content_kind, load_response, origin_hash

log = logging.getLogger(__name__)

USER_AGENT = "groundkb/0.1 (documentation crawler; robots.txt token: groundkb)"
MAX_REDIRECTS = 5
_SKIP_SUFFIXES = (
    ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".bmp", ".css", ".js", ".mjs",
    ".map", ".json", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".tar", ".7z", ".rar", ".whl",
    ".exe", ".msi", ".dmg", ".pkg", ".deb", ".rpm", ".mp3", ".mp4", ".webm", ".woff",
    ".woff2", ".ttf", ".eot", ".epub", ".txt",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CrawlOptions:
    """How to crawl one source (see the module docstring)."""

    allow: tuple[str, ...] = ()  # URL prefixes; default: the start URL's folder
    allow_networks: tuple[str, ...] = ()  # CIDRs that may be fetched although not public
    max_pages: int = 5000
    max_depth: int = 20
    rate: float = 4.0  # request starts per second per host
    concurrency: int = 4  # requests in flight per host
    timeout: float = 15.0  # seconds per socket operation; a response gets 4x this
    max_bytes: int = 25 * 2**20
    user_agent: str = USER_AGENT


@dataclass(frozen=True, slots=True)
class CrawlStatus:
    """Progress of a crawl, reported after every page."""

    fetched: int
    queued: int
    failed: int
    skipped: int
    url: str


CrawlProgress = Callable[[CrawlStatus], None]


def normalize(url: str) -> str:
    """A URL without fragment, default port or user info; lower-case scheme and host."""
    p = urlsplit(url.strip())
    scheme = p.scheme.lower()
    host = (p.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = p.port
    except ValueError:
        port = None
    if port and not ((scheme == "http" and port == 80) or (scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, p.path or "/", p.query, ""))


def default_prefix(url: str) -> str:
    """The folder of a start URL: ``.../docs/index.html`` → ``.../docs/``."""
    p = urlsplit(normalize(url))
    path = p.path
    last = path.rsplit("/", 1)[-1]
    if "." in last:
        path = path[: len(path) - len(last)]
    return urlunsplit((p.scheme, p.netloc, path, "", ""))


class Scope:
    """The allowlist: URL prefixes of scheme, host and path."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        self.rules: list[tuple[str, str, str]] = []
        for prefix in prefixes:
            p = urlsplit(normalize(prefix))
            if p.scheme not in ("http", "https") or not p.netloc:
                raise InvalidInput(f"allow: {prefix!r} is not an http(s) URL prefix")
            self.rules.append((p.scheme, p.netloc, p.path))
        self.hosts = {netloc for _, netloc, _ in self.rules}

    def __call__(self, url: str) -> bool:
        p = urlsplit(url)
        for scheme, netloc, path in self.rules:
            if p.netloc != netloc or not (p.scheme == scheme or p.scheme == "https"):
                continue
            if path.endswith("/") and p.path.startswith(path):
                return True
            if p.path == path or p.path.startswith(path.rstrip("/") + "/"):
                return True
        return False


class _Host:
    """Per-host politeness: a semaphore for concurrency and spaced request starts."""

    def __init__(self, interval: float, concurrency: int) -> None:
        self.interval = interval
        self.slots = threading.Semaphore(concurrency)
        self.lock = threading.Lock()
        self.next = 0.0

    def wait_turn(self) -> None:
        with self.lock:
            now = time.monotonic()
            at = max(now, self.next)
            self.next = at + self.interval
        if at > now:
            time.sleep(at - now)


class _Robots:
    """robots.txt per origin, fetched once, thread-safe."""

    def __init__(self, get: Callable[[str], Response], agent: str) -> None:
        self.get = get
        self.agent = agent
        self.lock = threading.Lock()
        self.cache: dict[str, urllib.robotparser.RobotFileParser | str] = {}

    def rules(self, origin: str) -> urllib.robotparser.RobotFileParser | str:
        with self.lock:
            if origin not in self.cache:
                self.cache[origin] = self._load(origin)
            return self.cache[origin]

    def _load(self, origin: str) -> urllib.robotparser.RobotFileParser | str:
        parser = urllib.robotparser.RobotFileParser(origin + "/robots.txt")
        try:
            resp = self.get(origin + "/robots.txt")
        except Refused as exc:
            return f"refused: {exc}"
        except FetchError as exc:
            return f"robots.txt unavailable ({exc})"
        if resp.status >= 500:
            return f"robots.txt answered HTTP {resp.status}"
        text = resp.body[: 512 * 1024].decode("utf-8", "replace") if resp.status < 300 else ""
        parser.parse(text.splitlines())
        return parser

    def check(self, url: str) -> str | None:
        """None when ``url`` may be fetched, else why not."""
        p = urlsplit(url)
        rules = self.rules(f"{p.scheme}://{p.netloc}")
        if isinstance(rules, str):
            return rules
        return None if rules.can_fetch(self.agent, url) else "disallowed by robots.txt"

    def delay(self, origin: str) -> float:
        rules = self.rules(origin)
        if isinstance(rules, str):
            return 0.0
        delay = float(rules.crawl_delay(self.agent) or 0)
        rate = rules.request_rate(self.agent)
        if rate is not None and rate.requests:
            delay = max(delay, rate.seconds / rate.requests)
        return delay


VisitKind = Literal["page", "unchanged", "gone", "failed", "skipped", "redirect_seen"]


@dataclass(frozen=True, slots=True)
class Visit:
    """The outcome of visiting one queued URL."""

    url: str  # as queued
    final: str  # after redirects: the page's identity
    depth: int
    kind: VisitKind
    page: LoadedPage | None = None
    state: PageState | None = None  # for unchanged pages
    etag: str = ""
    last_modified: str = ""
    note: str = ""


@dataclass
class Crawler:
    """One crawl (or one refresh) of a source; the store is used only by the caller."""

    scope: Scope
    options: CrawlOptions
    known: dict[str, PageState]
    source: str
    max_chunk_tokens: int
    policy: FetchPolicy = field(init=False)
    robots: _Robots = field(init=False)
    hosts: dict[str, _Host] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    claimed: set[str] = field(default_factory=set)  # URLs queued or reached so far

    def claim(self, url: str) -> bool:
        """Mark ``url`` as taken; False when it already was."""
        with self.lock:
            if url in self.claimed:
                return False
            self.claimed.add(url)
            return True

    def __post_init__(self) -> None:
        try:
            networks = parse_networks(self.options.allow_networks)
        except ValueError as exc:
            raise InvalidInput(f"allow_networks: {exc}") from exc
        self.policy = FetchPolicy(
            self.options.user_agent,
            timeout=self.options.timeout,
            deadline=self.options.timeout * 4,
            max_bytes=self.options.max_bytes,
            allow_networks=networks,
        )
        self.robots = _Robots(self._get_robots, self.options.user_agent)

    def _host(self, url: str) -> _Host:
        p = urlsplit(url)
        origin = f"{p.scheme}://{p.netloc}"
        with self.lock:
            host = self.hosts.get(origin)
        if host is None:
            interval = max(1.0 / self.options.rate, self.robots.delay(origin))
            with self.lock:
                host = self.hosts.setdefault(origin, _Host(interval, self.options.concurrency))
        return host

    def _polite_get(self, url: str, headers: dict[str, str] | None = None) -> Response:
        host = self._host(url)
        with host.slots:
            host.wait_turn()
            return fetch(url, self.policy, headers)

    def _get_robots(self, url: str) -> Response:
        """robots.txt, following redirects on hosts of the allowlist."""
        for _ in range(MAX_REDIRECTS + 1):
            resp = fetch(url, self.policy)
            location = resp.headers.get("location", "")
            if resp.status not in REDIRECTS or not location:
                return resp
            url = normalize(urljoin(url, location))
            if urlsplit(url).netloc not in self.scope.hosts:
                raise FetchError("robots.txt redirects off the allowed hosts")
        raise FetchError("too many redirects")

    def get_following(self, url: str, conditional: bool = True) -> tuple[str, Response | str]:
        """(final URL, response) after in-scope redirects, or (URL, why it was skipped)."""
        for hop in range(MAX_REDIRECTS + 1):
            if not self.scope(url):
                return url, "redirect outside the allowlist" if hop else "outside the allowlist"
            blocked = self.robots.check(url)
            if blocked:
                return url, blocked
            state = self.known.get(url)
            headers = state.conditional_headers() if state and conditional else {}
            resp = self._polite_get(url, headers)
            location = resp.headers.get("location", "")
            if resp.status not in REDIRECTS:
                return url, resp
            if not location:
                raise FetchError(f"HTTP {resp.status} without a Location header")
            url = normalize(urljoin(url, location))
            if conditional and self.scope(url) and not self.claim(url):
                return url, "redirect_seen"  # the target is crawled on its own
        raise FetchError(f"more than {MAX_REDIRECTS} redirects")

    def visit(self, url: str, depth: int) -> Visit:
        """Fetch one URL and load what changed (runs in a worker thread)."""
        try:
            final, got = self.get_following(url)
        except Refused as exc:
            return Visit(url, url, depth, "skipped", note=f"refused: {exc}")
        except FetchError as exc:
            return Visit(url, url, depth, "failed", note=str(exc))
        if got == "redirect_seen":
            return Visit(url, final, depth, "redirect_seen")
        if isinstance(got, str):
            return Visit(url, final, depth, "skipped", note=got)
        resp = got
        etag, modified = resp.headers.get("etag", ""), resp.headers.get("last-modified", "")
        state = self.known.get(final)
        if resp.status == 304:
            if state is None or not state.origin_hash:
                return Visit(url, final, depth, "failed", note="HTTP 304 for a page not stored")
            return Visit(url, final, depth, "unchanged", state=state, etag=etag or state.etag,
                         last_modified=modified or state.last_modified)  # fmt: skip
        if resp.status in (404, 410):
            return Visit(url, final, depth, "gone", note=f"HTTP {resp.status}")
        if not 200 <= resp.status < 300:
            return Visit(url, final, depth, "failed", note=f"HTTP {resp.status}")
        kind = content_kind(resp)
        if kind is None:
            note = f"not a document type ({resp.content_type or 'no content type'})"
            return Visit(url, final, depth, "skipped", note=note)
        ohash = origin_hash(kind, self.max_chunk_tokens, resp.body)
        if state is not None and state.origin_hash == ohash:
            return Visit(url, final, depth, "unchanged", state=state, etag=etag,
                         last_modified=modified)  # fmt: skip
        ctx = LoadContext(self.source, final, ohash, self.max_chunk_tokens)
        page = load_response(resp, kind, ctx, final, self.scope)
        return Visit(url, final, depth, "page", page=page, note=page.not_indexed)


def rewrite_validators(store: Store, state: PageState, etag: str, modified: str
                       ) -> list[Loaded]:  # fmt: skip
    """The stored documents of an unchanged page with new validators (no re-chunking)."""
    out: list[Loaded] = []
    by_doc: dict[str, list[Chunk]] = {}
    for c in store.chunks(state.doc_ids):
        by_doc.setdefault(c.doc_id, []).append(c)
    for doc in store.documents(state.doc_ids):
        meta = {**doc.metadata, "etag": etag, "last_modified": modified}
        out.append(Loaded(replace(doc, metadata=meta), by_doc.get(doc.id, [])))
    return out


@dataclass
class Tally:
    """Counts for progress and the report's notice."""

    fetched: int = 0
    failed: int = 0
    skipped: int = 0
    gone: int = 0
    notes: Counter[str] = field(default_factory=Counter)
    capped: bool = False

    def status(self, queued: int, url: str) -> CrawlStatus:
        return CrawlStatus(self.fetched, queued, self.failed, self.skipped, url)

    def notice(self, incomplete: bool, kept: int) -> str:
        parts = []
        if self.notes:
            ranked = sorted(self.notes.items(), key=lambda kv: (-kv[1], kv[0]))
            parts.append(", ".join(f"{n} {why}" for why, n in ranked))
        if self.capped:
            parts.append("max_pages reached")
        if incomplete and kept:
            parts.append(f"crawl incomplete: {kept} page(s) not reached were kept")
        return "; ".join(parts)


def run_queue(
    crawler: Crawler,
    seeds: list[str],
    *,
    follow: bool,
    on_visit: Callable[[Visit], tuple[str, ...]],
    tally: Tally,
    progress: CrawlProgress | None = None,
) -> set[str]:
    """Visit the seeds and (when ``follow``) the in-scope links ``on_visit`` returns,
    breadth first; returns every URL queued. ``on_visit`` runs in the calling thread;
    visits run on a thread pool (``concurrency`` per allowed host, 32 at most)."""
    opts = crawler.options
    queued = crawler.claimed
    frontier: deque[tuple[str, int]] = deque()

    def enqueue(url: str, depth: int) -> None:
        url = normalize(url)
        if url in queued or not crawler.scope(url):
            return
        if urlsplit(url).path.lower().endswith(_SKIP_SUFFIXES):
            return
        if len(queued) >= opts.max_pages:
            tally.capped = True
            return
        if crawler.claim(url):
            frontier.append((url, depth))

    for seed in seeds:
        enqueue(seed, 0)
    workers = max(1, min(32, opts.concurrency * max(1, len(crawler.scope.hosts))))
    # Results are handled in the order URLs were queued (not as they finish), so the same
    # site gives the same crawl order, and the same pages under max_pages.
    inflight: deque[Future[Visit]] = deque()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="groundkb-crawl") as pool:
        while frontier or inflight:
            while frontier and len(inflight) < workers * 2:
                url, depth = frontier.popleft()
                inflight.append(pool.submit(crawler.visit, url, depth))
            visit = inflight.popleft().result()
            crawler.claim(visit.final)
            links = on_visit(visit)
            if follow and visit.depth < opts.max_depth:
                for link in links:
                    enqueue(link, visit.depth + 1)
            if progress:
                progress(tally.status(len(frontier) + len(inflight), visit.final))
    return queued


__all__ = [
    "USER_AGENT",
    "CrawlOptions",
    "CrawlProgress",
    "CrawlStatus",
    "Crawler",
    "Scope",
    "Tally",
    "Visit",
    "default_prefix",
    "normalize",
    "rewrite_validators",
    "run_queue",
]
