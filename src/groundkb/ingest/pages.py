"""Fetched responses to documents, and what a crawl remembers about each page.

A page's documents carry transport metadata outside their content hash (see
:func:`~groundkb.ingest.html.with_metadata`): ``url``, ``etag``, ``last_modified`` and
``links`` (the page's links inside the crawl's allowlist). Pages that are not indexed
(``noindex``, or a table of contents: see ``html.py``) are kept as documents without
content or chunks, so that they too are skipped by conditional requests. The next crawl
sends the validators as ``If-None-Match`` / ``If-Modified-Since``; on ``304 Not Modified`` it keeps
the page and follows the stored links without downloading anything. On ``200`` it
compares the origin hash (loader, chunk size and the sha1 of the body, as for files):
an identical body is not parsed again; a changed body is parsed and chunked, and the
store rewrites only the chunks whose text changed (a new link in the site's navigation
changes every page's bytes but no page's content, so nothing is re-embedded).
"""

from __future__ import annotations

import gzip
import hashlib
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal
from urllib.parse import urlsplit

from ..errors import IngestError
from ..models import Document, FileError
from ..store.base import Store
from .base import LoadContext, Loaded, finalize, require
from .docx import DocxLoader, load_docx
from .fetch import Response
from .html import HtmlLoader, page_document, parse_html, with_metadata
from .pdf import PdfLoader, load_pdf

ContentKind = Literal["html", "pdf", "docx"]
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_VERSIONS = {"html": HtmlLoader.version, "pdf": PdfLoader.version, "docx": DocxLoader.version}


@dataclass(frozen=True, slots=True)
class PageState:
    """What the index holds for one page URL (an origin of the source)."""

    doc_ids: tuple[str, ...]
    origin_hash: str
    etag: str = ""
    last_modified: str = ""
    links: tuple[str, ...] = ()

    def conditional_headers(self) -> dict[str, str]:
        """Validators for a conditional GET; none when the last load failed."""
        if not self.origin_hash:
            return {}
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


def known_pages(
    store: Store, by_origin: Mapping[str, list[str]], done: Mapping[str, str]
) -> dict[str, PageState]:
    """The stored state of every page of a source, keyed by URL. ``done`` maps the pages
    whose documents were all stored to their hash (``SourceWriter.done``); a page
    without one is fetched and loaded again."""
    out: dict[str, PageState] = {}
    for origin, ids in by_origin.items():
        doc = store.get_document(sorted(ids)[0])
        meta: Mapping[str, Any] = doc.metadata if doc is not None else {}
        links = meta.get("links", ())
        out[origin] = PageState(
            tuple(ids),
            done.get(origin, ""),
            str(meta.get("etag", "") or ""),
            str(meta.get("last_modified", "") or ""),
            tuple(str(u) for u in links) if isinstance(links, list | tuple) else (),
        )
    return out


def content_kind(resp: Response) -> ContentKind | None:
    """Which loader reads a response: by Content-Type, else by the bytes and the URL."""
    ctype = resp.content_type
    if ctype in _HTML_TYPES:
        return "html"
    if ctype == "application/pdf":
        return "pdf"
    if ctype == _DOCX_TYPE:
        return "docx"
    if ctype in ("", "application/octet-stream", "binary/octet-stream"):
        path = urlsplit(resp.url).path.lower()
        if resp.body[:5] == b"%PDF-" or path.endswith(".pdf"):
            return "pdf"
        if path.endswith(".docx"):
            return "docx"
        head = resp.body[:512].lstrip().lower()
        if head.startswith((b"<!doctype html", b"<html")):
            return "html"
    return None


def origin_hash(kind: ContentKind, max_chunk_tokens: int, body: bytes) -> str:
    h = hashlib.sha1(f"{kind}:{_VERSIONS[kind]}:{max_chunk_tokens}:".encode() + body)
    return h.hexdigest()[:16]


def category_of(url: str) -> str:
    """The URL's parent folder name, as a file's category is its folder."""
    return PurePosixPath(urlsplit(url).path).parent.name


def robots_header(resp: Response) -> tuple[bool, bool]:
    """(noindex, nofollow) from an ``X-Robots-Tag`` header."""
    tag = resp.headers.get("x-robots-tag", "").lower()
    return ("noindex" in tag or "none" in tag), ("nofollow" in tag or "none" in tag)


@dataclass(frozen=True, slots=True)
class LoadedPage:
    loaded: list[Loaded]
    errors: list[FileError]
    links: tuple[str, ...]
    not_indexed: str = ""  # why the page is kept without chunks: "noindex" or "link list"


def _stub(ctx: LoadContext, url: str, title: str, category: str, updated: str) -> Loaded:
    """A page kept without content or chunks: not searchable, but its validators and
    links let the next crawl skip it with a conditional request."""
    doc = Document(id=url, source=ctx.source, title=title or url, content="",
                   category=category, uri=url, origin=ctx.origin,
                   origin_hash=ctx.origin_hash, updated_at=updated)  # fmt: skip
    return finalize(doc, [])


def load_response(
    resp: Response, kind: ContentKind, ctx: LoadContext, url: str, in_scope: Any
) -> LoadedPage:
    """Documents of a fetched page (ids and citations from ``url``), and its links."""
    updated = resp.headers.get("last-modified", "")
    category = category_of(url)
    noindex, nofollow = robots_header(resp)
    links: tuple[str, ...] = ()
    loaded: list[Loaded]
    errors: list[FileError] = []
    title = ""
    link_list = False
    if kind == "html":
        try:
            page = parse_html(resp.body, url, resp.charset)
        except IngestError as exc:
            return LoadedPage([], [FileError(url, exc.reason)], ())
        noindex = noindex or page.noindex
        if not (nofollow or page.nofollow):
            links = tuple(u for u in page.links if in_scope(u))
        title, link_list = page.title, page.link_list
        item = page_document(page, ctx, doc_id=url, uri=url, category=category)
        loaded = [item] if item is not None else []
    elif kind == "pdf":
        loaded, errors = load_pdf(resp.body, ctx, doc_id=url, uri=url, category=category)
    else:
        loaded, errors = load_docx(resp.body, ctx, doc_id=url, uri=url, category=category)
    reason = "noindex" if noindex else "link list" if link_list else ""
    if reason:
        loaded = [_stub(ctx, url, title, category, updated)]
    meta: dict[str, Any] = {
        "url": url,
        "etag": resp.headers.get("etag", ""),
        "last_modified": updated,
        "links": list(links),
    }
    if reason:
        meta["not_indexed"] = reason
    return LoadedPage([with_metadata(item, meta) for item in loaded], errors, links, reason)


def sitemap_urls(data: bytes) -> tuple[list[str], list[str]]:
    """(page URLs, child sitemap URLs) of a sitemap or sitemap index (gzip allowed)."""
    etree = require("lxml.etree", "web", "reading sitemaps")
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                data = gz.read(50 * 2**20 + 1)
        except OSError as exc:
            raise IngestError(f"bad gzip sitemap: {exc}") from exc
        if len(data) > 50 * 2**20:
            raise IngestError("sitemap is over 50 MiB uncompressed")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(data, parser=parser)
    except Exception as exc:  # XMLSyntaxError and friends
        raise IngestError(f"not a sitemap (invalid XML: {exc})") from exc
    if root is None:
        raise IngestError("not a sitemap (empty document)")
    tag = etree.QName(root).localname
    locs = [" ".join(str(el.text or "").split()) for el in root.iter("{*}loc")]
    locs = [u for u in locs if u]
    if tag == "urlset":
        return locs, []
    if tag == "sitemapindex":
        return [], locs
    raise IngestError(f"not a sitemap (root element <{tag}>)")


__all__ = [
    "ContentKind",
    "LoadedPage",
    "PageState",
    "category_of",
    "content_kind",
    "known_pages",
    "load_response",
    "origin_hash",
    "sitemap_urls",
]
