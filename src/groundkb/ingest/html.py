"""HTML pages to Markdown: the main content, with headings as the header path.

A page becomes Markdown that the header-aware chunker (``analyze/chunk.py``) splits like
any other page, so HTML, Markdown and Word documents share one notion of sections.

1. **Decode.** A byte-order mark wins; then UTF-8 when the bytes are valid UTF-8 and not
   plain ASCII (a page that declares Latin-1 but is UTF-8 is common, the reverse
   combination almost never decodes); then the charset of the HTTP ``Content-Type``,
   then a ``<meta>`` declaration; then Windows-1252, the web's default, which decodes
   anything. A wrong declaration never loses a page.
2. **Parse** with lxml, which recovers from malformed markup the way browsers do.
   Links (``<a href>``, ``<area href>``) are collected from the whole page, navigation
   included (that is how a crawler finds pages), resolved against ``<base href>`` or the
   page URL, without fragments. ``<meta name="robots">`` is read (noindex, nofollow).
3. **Main content**: inside the first ``<main>`` (or ``[role=main]``) the one
   ``<article>`` if there is exactly one, else the main element itself; without a main
   element the one ``<article>``, else ``<body>``. Scripts, styles, templates, frames,
   embedded objects, forms, navigation, footers, search boxes and hidden elements are
   dropped; without a main element also site headers and sidebars. Nothing is executed.
4. **Headings** become plain text: permalink markers (``¶``, ``#``) go, links are
   unwrapped, and a leading section number ("5.1.") is dropped when the page's own
   anchor for the heading leaves it out, so the header path reads like the text and the
   citation's anchor, derived from the heading, matches the page's.
5. **Convert** with html-to-markdown: ATX headings, code blocks fenced and verbatim,
   tables as pipe tables, lists; links absolute and without titles, links within the
   page reduced to their text; images dropped.

Why lxml + html-to-markdown (compared on the Python documentation, see docs/ingest.md):
trafilatura and readability-lxml are built for articles and dropped most code blocks
(and some headings) of API reference pages; markdownify converts as well but about 8x
slower; html2text indents code instead of fencing it and is GPL-licensed.
"""

from __future__ import annotations

import codecs
import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urldefrag, urljoin

from ..analyze.chunk import chunk_markdown
from ..analyze.text import tokenize
from ..errors import IngestError, MissingDependency
from ..models import Document, FileError
from .base import LoadContext, Loaded, finalize, require
from .manpage import as_man_page, man_page
from .markdown import first_paragraph

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_SECTION_NUMBER = re.compile(r"^\s*(?:[A-Z]|\d+)(?:\.\d+)*\.?\s+")
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))  # fmt: skip
_SINGLE_BYTE = {"iso-8859-1", "latin-1", "latin1", "ascii", "us-ascii", "iso8859-1"}
_PERMALINK_TEXT = {"", "¶", "#", "§", "🔗", "link", "permalink"}
_DROP_TAGS = (
    "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object",
    "embed", "applet", "svg", "canvas", "form", "button", "input", "select", "textarea",
    "nav", "footer", "dialog", "link", "meta", "img", "picture", "video", "audio",
)  # fmt: skip
_DROP_ROLES = ("navigation", "search", "contentinfo", "banner")
_BODY_ONLY_DROP = ("header", "aside")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Main content whose text is mostly link text is a table of contents or an index page:
# its links are followed, but it is not indexed (it would match every query a little).
# On the Python docs the pages above this share are exactly the index and contents
# pages (66 of 530); content pages stay below 0.5.
LINK_LIST_DENSITY = 0.7


@dataclass(frozen=True, slots=True)
class HtmlPage:
    """What a page holds for the knowledge base."""

    title: str
    markdown: str
    links: tuple[str, ...]  # absolute http(s) URLs without fragments, in page order
    description: str = ""
    noindex: bool = False
    nofollow: bool = False
    link_density: float = 0.0  # share of the main text that is link text

    @property
    def link_list(self) -> bool:
        return self.link_density > LINK_LIST_DENSITY


def decode_html(data: bytes, declared: str | None = None) -> str:
    """Text of an HTML document (see the module docstring for the order of guesses)."""
    for bom, bom_codec in _BOMS:
        if data.startswith(bom):
            return data.decode(bom_codec, errors="replace")
    if not data.isascii():
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    m = _META_CHARSET.search(data[:4096])
    meta = m.group(1).decode("ascii", "replace") if m else None
    for name in (declared, meta):
        codec = _codec(name)
        if codec is None:
            continue
        try:
            return data.decode(codec)
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("cp1252", errors="replace")


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    low = name.strip().lower()
    if low in _SINGLE_BYTE:
        return "cp1252"  # what browsers do for these labels
    try:
        return codecs.lookup(low).name
    except LookupError:
        return None


def _text(el: Any) -> str:
    return " ".join(str(el.text_content()).split())


def _slug(text: str) -> str:
    return "-".join(tokenize(text))


def _anchor(h: Any) -> str:
    """The id a link to this heading uses: its own, its section's, or an empty anchor's."""
    if h.get("id"):
        return str(h.get("id"))
    parent = h.getparent()
    if parent is not None and parent.get("id") and parent.index(h) <= 1:
        return str(parent.get("id"))
    for child in h.iter("a", "span"):
        if child.get("id") or child.get("name"):
            return str(child.get("id") or child.get("name"))
    prev = h.getprevious()
    if prev is not None and prev.tag in ("a", "span") and not _text(prev):
        return str(prev.get("id") or prev.get("name") or "")
    return ""


def _plain_heading(h: Any) -> None:
    """Make a heading plain text (see the module docstring)."""
    for a in h.xpath(".//a[@href]"):
        if str(a.get("href", "")).startswith("#") and _text(a).lower() in _PERMALINK_TEXT:
            a.drop_tree()
    text = _text(h)
    anchor = _anchor(h)
    m = _SECTION_NUMBER.match(text)
    if m and anchor and _slug(text) != anchor and _slug(text[m.end() :]) == anchor:
        text = text[m.end() :]
    for child in list(h):
        h.remove(child)
    h.text = text


# the description lists of Sphinx's Python and JavaScript domains
_OBJECT_LISTS = './/dl[starts-with(@class, "py ") or starts-with(@class, "js ")]'


def _object_name(dt: Any) -> str:
    """The name of the API object a Sphinx description term of the Python or JavaScript
    domain describes (``<dt id="os.path.ismount">`` of a ``<dl class="py function">``):
    its id, when the id is the name the signature shows (``os.path.`` + ``ismount``), or
    ends with it (a method shows ``most_common`` for ``collections.Counter.most_common``);
    '' for anything else (a glossary term, another domain's entry: C's ``c.PyObject_Call``,
    C++'s mangled ids, a command-line option's ``cmdoption-…``)."""
    ident = str(dt.get("id") or "")
    parent = dt.getparent()
    if not ident or parent is None or parent.tag != "dl":
        return ""
    if str(parent.get("class", "")).split()[:1] not in (["py"], ["js"]):
        return ""
    shown = "".join(
        _text(el)
        for el in dt.iter("span")
        if {"sig-prename", "sig-name"} & set(str(el.get("class", "")).split())
    )
    shown = shown.replace(" ", "")
    # a method shows its own name only ("most_common"): its class is the entry around it
    return ident if shown and (ident == shown or ident.endswith("." + shown)) else ""


def _object_sections(root: Any) -> None:
    """Make each API entry of a Sphinx page (a function, class, method, attribute…) a
    section of its own, headed by its name, one level below the heading it sits under
    and one more for each entry it is nested in (a class's methods): so a question about
    ``os.path.ismount`` finds that entry, not a window of the 30 the page describes, and
    its citation points at the entry (``#os.path.ismount``). The signature stays, as the
    section's first line. Text that follows an entry inside the same section (a note
    after the last function of a group) goes back under the section's heading, repeated
    before it, rather than into the entry above it."""
    if not root.xpath(_OBJECT_LISTS):
        return
    level = 1
    last: Any = None  # the page's last heading so far
    owner: dict[Any, Any] = {}  # an entry's list → its term
    found: list[tuple[Any, str, int, Any]] = []  # term, name, level, what it is below
    for el in root.iter(*_HEADINGS, "dt"):
        if el.tag in _HEADINGS:
            level, last = int(el.tag[1]), el
            continue
        name = _object_name(el)
        if not name:
            continue
        around = [a for a in el.getparent().iterancestors("dl") if a in owner]  # innermost first
        owner[el.getparent()] = el
        above = owner[around[0]] if around else last
        found.append((el, name, min(6, level + 1 + len(around)), above))
    made: dict[Any, Any] = {}  # a term → the heading made for it
    for dt, name, h, _ in found:
        for a in dt.xpath(".//a[@class='headerlink']"):
            a.drop_tree()
        signature = _text(dt)
        heading = dt.makeelement(f"h{h}", {})
        code = heading.makeelement("code", {})
        code.text = name
        heading.append(code)
        line = dt.makeelement("p", {})
        sig = line.makeelement("code", {})
        sig.text = signature
        line.append(sig)
        dt.addprevious(heading)
        dt.addprevious(line)
        made[dt] = heading
    for dt, _, _, above in found:
        dl = dt.getparent()
        after = dl.getnext()
        text_after = bool((dl.tail or "").strip())
        if above is None or (after is None and not text_after):
            continue
        if not text_after and (after.tag in _HEADINGS or after in owner):
            continue
        again = copy.deepcopy(made.get(above, above))
        again.tail, dl.tail = dl.tail, None
        dl.addnext(again)
    for dt in made:
        dt.getparent().remove(dt)
    for dl in owner:
        dl.tag = "div"
        dl.attrib.clear()
        for dd in dl.findall("dd"):
            dd.tag = "div"


class _Resolver:
    """Absolute URLs (without fragment) of the hrefs of one page, each computed once."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cache: dict[str, str] = {}

    def __call__(self, href: str) -> str:
        key = href.split("#", 1)[0]
        url = self.cache.get(key)
        if url is None:
            url = self.cache[key] = urldefrag(urljoin(self.base, key))[0]
        return url

    def full(self, href: str) -> str:
        """The absolute URL with the href's fragment."""
        _, hash_, fragment = href.partition("#")
        return self(href) + hash_ + fragment


def _links(doc: Any, resolve: _Resolver) -> tuple[str, ...]:
    if not resolve.base:
        return ()
    seen: dict[str, None] = {}
    for a in doc.xpath("//a[@href] | //area[@href]"):
        href = str(a.get("href")).strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "tel:", "data:")):
            continue
        url = resolve(href)
        if url.startswith(("http://", "https://")):
            seen.setdefault(url, None)
    return tuple(seen)


def _main(doc: Any) -> tuple[Any, bool]:
    """The element holding the main content, and whether the page marked it as such."""
    main = next(doc.iter("main"), None)
    if main is None:
        main = next(iter(doc.xpath("//*[@role='main']")), None)
    if main is not None:
        articles = list(main.iter("article"))
        return (articles[0] if len(articles) == 1 else main), True
    articles = list(doc.iter("article"))
    if len(articles) == 1:
        return articles[0], True
    body = doc.find("body")
    return (body if body is not None else doc), False


def _prune(root: Any, marked: bool) -> None:
    drop = list(root.iter(*_DROP_TAGS))
    if not marked:
        drop += list(root.iter(*_BODY_ONLY_DROP))
    for el in root.xpath("descendant::*[@hidden or @aria-hidden or @role or @style]"):
        style = str(el.get("style", "")).replace(" ", "").lower()
        if (
            el.get("hidden") is not None
            or el.get("aria-hidden") == "true"
            or el.get("role") in _DROP_ROLES
            or "display:none" in style
            or "visibility:hidden" in style
        ):
            drop.append(el)
    for el in drop:
        if el is not root and el.getparent() is not None:
            el.drop_tree()


def _fix_links(root: Any, url: str, resolve: _Resolver) -> None:
    for a in list(root.iter("a")):
        href = str(a.get("href") or "").strip()
        a.attrib.pop("title", None)
        if not href:
            continue
        if href.startswith(("#", "javascript:")) or (url and resolve(href) == url):
            a.drop_tag()  # a link within the page: keep the text
        elif url and not href.startswith(("mailto:", "tel:")):
            a.set("href", resolve.full(href))


def _robots(doc: Any) -> tuple[bool, bool]:
    content = " ".join(
        str(m.get("content", "")).lower()
        for m in doc.xpath("//meta[@name]")
        if str(m.get("name", "")).lower() in ("robots", "groundkb")
    )
    return ("noindex" in content or "none" in content), ("nofollow" in content or "none" in content)


def parse_html(data: bytes, url: str = "", charset: str | None = None) -> HtmlPage:
    """Convert a page; ``url`` (when known) resolves links. IngestError if unusable."""
    lxml_html = require("lxml.html", "web", "reading HTML")
    h2m = require("html_to_markdown", "web", "reading HTML")
    if b"\x00" in data[:4096]:
        raise IngestError("binary content (NUL bytes), not HTML")
    text = _XML_DECL.sub("", decode_html(data, charset), count=1)
    if not text.strip():
        raise IngestError("empty page")
    parser = lxml_html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True)
    try:
        doc = lxml_html.document_fromstring(text, parser=parser)
    except Exception as exc:  # lxml raises ParserError, ValueError, XMLSyntaxError...
        raise IngestError(f"cannot parse HTML: {exc}") from exc
    base = url
    base_el = doc.xpath("//base[@href]")
    if url and base_el:
        base = urljoin(url, str(base_el[0].get("href")))
    resolve = _Resolver(base)
    links = _links(doc, resolve)
    noindex, nofollow = _robots(doc)
    description = ""
    for m in doc.xpath("//meta[@name='description' or @property='og:description']"):
        description = " ".join(str(m.get("content", "")).split())
        if description:
            break
    page_title = ""
    title_el = doc.find(".//title")
    if title_el is not None:
        page_title = _text(title_el)
    root, marked = _main(doc)
    _prune(root, marked)
    for h in root.iter(*_HEADINGS):
        _plain_heading(h)
    _object_sections(root)
    text_chars = len(_text(root))
    link_chars = sum(len(_text(a)) for a in root.iter("a"))
    density = link_chars / text_chars if text_chars else 0.0
    _fix_links(root, urldefrag(url)[0] if url else "", resolve)
    h1 = next(root.iter("h1"), None)
    title = (_text(h1) if h1 is not None else "") or page_title
    options = h2m.ConversionOptions(
        extract_metadata=False,
        skip_images=True,
        autolinks=False,
        preprocessing=h2m.PreprocessingOptions(enabled=False),
    )
    body = lxml_html.tostring(root, encoding="unicode")
    try:
        markdown = str(h2m.convert(body, options).content)
    except Exception as exc:  # the converter's own errors (input too large, ...)
        raise IngestError(f"cannot convert HTML: {exc}") from exc
    markdown = "\n".join(line.rstrip() for line in markdown.splitlines()).strip() + "\n"
    return HtmlPage(title, markdown, links, description, noindex, nofollow, density)


def page_document(
    page: HtmlPage,
    ctx: LoadContext,
    *,
    doc_id: str,
    uri: str,
    category: str,
    updated_at: str = "",
) -> Loaded | None:
    """The document of a converted page; None when it has no text at all."""
    if not page.markdown.strip() and not page.title:
        return None
    doc = Document(
        id=doc_id,
        source=ctx.source,
        title=page.title or doc_id,
        content=page.markdown,
        category=category,
        summary=page.description or first_paragraph(page.markdown),
        uri=uri,
        origin=ctx.origin,
        origin_hash=ctx.origin_hash,
        updated_at=updated_at,
    )
    man = man_page(doc.title, page.markdown)
    if man is not None:
        doc = as_man_page(doc, man)
    return finalize(doc, chunk_markdown(doc, page.markdown, ctx.max_chunk_tokens))


def local_document(page: HtmlPage, ctx: LoadContext) -> Loaded | None:
    """The document of a page read from a local file (HTML, reStructuredText): id = the
    path without its suffix and category = its folder, like Markdown pages."""
    path = PurePosixPath(ctx.origin)
    return page_document(
        page, ctx, doc_id=path.with_suffix("").as_posix(), uri="", category=path.parent.name
    )


def with_metadata(item: Loaded, metadata: Mapping[str, Any]) -> Loaded:
    """The same document with transport metadata (URL, validators, links) that is kept
    out of its content hash: a new ETag alone does not make a page changed."""
    from dataclasses import replace

    return Loaded(replace(item.doc, metadata={**item.doc.metadata, **metadata}), item.chunks)


class HtmlLoader:
    """Local ``.html`` files: id = path without suffix, like Markdown pages."""

    name = "html"
    version = "3"
    suffixes: tuple[str, ...] = (".html", ".htm", ".xhtml")

    def sniff(self, data: bytes) -> bool:
        return True

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        try:
            page = parse_html(data)
        except IngestError as exc:
            return [], [FileError(ctx.origin, exc.reason)]
        except MissingDependency as exc:
            return [], [FileError(ctx.origin, exc.message)]
        item = local_document(page, ctx)
        if item is None or page.noindex or page.link_list:
            return [], []
        return [item], []


__all__ = [
    "HtmlLoader",
    "HtmlPage",
    "decode_html",
    "local_document",
    "page_document",
    "parse_html",
    "with_metadata",
]
