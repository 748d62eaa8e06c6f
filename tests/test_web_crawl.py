"""Crawling a real HTTP site on loopback: scope, robots.txt, redirects, address safety,
incremental re-crawls, refresh, sitemaps and the CLI."""

from __future__ import annotations

import gzip
import ipaddress
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.errors import InvalidInput, MissingDependency, NotFound
from groundkb.ingest.crawl import CrawlOptions

from .docmaker import SPHINX_API_PAGE, encrypt_pdf, make_docx, make_pdf
from .website import Site, serve

PRIVATE = "10.11.12.13"
LOOPBACK = ("127.0.0.1/32",)

GUIDE = """<!doctype html><html><head><meta charset="utf-8"><title>Guide - Widget Docs</title>
</head><body><nav><a href="./">Home</a></nav>
<main><div class="toc">On this page</div><article>
<h1>Guide<a class="headerlink" href="#guide">¶</a></h1>
<section id="installing"><h2>Installing<a class="headerlink" href="#installing">¶</a></h2>
<p>Install the widget with <code>pip install widget</code>, then call the
<a href="api.html#create" title="the create call">create endpoint</a>.</p>
<pre><code>pip install widget
widget init --force</code></pre></section>
<section id="limits"><h2><span class="section-number">3.1. </span>Limits</h2>
<table><tr><th>plan</th><th>requests</th></tr><tr><td>free</td><td>LIMITS_FREE</td></tr></table>
</section></article></main><footer>Copyright FOOTERTEXT</footer></body></html>"""

API = """<html><head><title>API</title></head><body><main><h1>Widget API</h1>
<h2 id="create">Create a widget</h2><p>POST /widgets creates a widget.</p>
<p><a href="guide.html">Back to the guide</a></p></main></body></html>"""


def _index(extra: str = "") -> str:
    links = [
        "guide.html",
        "api.html",
        "moved.html",
        "private/secret.html",
        "away.html",
        "jump.html",
        "manual.pdf",
        "handbook.docx",
        "locked.pdf",
        "logo.png",
        "data.bin",
        "missing.html",
        "latin1.html",
        "broken.html",
        "contents.html",
    ]
    nav = " ".join(f'<a href="{href}">{href}</a>' for href in links)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Widget Docs</title>
<script>document.write("SCRIPTTEXT")</script><style>.x {{ color: red }}</style></head>
<body><header><a href="/docs/">Widget Docs</a></header><nav>{nav}
<a href="http://{PRIVATE}/docs/internal.html">internal</a>
<a href="https://example.com/">elsewhere</a> <a href="mailto:docs@example.com">mail</a>
{extra}</nav><main><h1>Widget Docs</h1><p>Welcome to the widget documentation.</p></main>
<footer>FOOTERTEXT</footer></body></html>"""


def _build(site: Site) -> None:
    site.raw("/robots.txt", b"User-agent: *\nDisallow: /docs/private/\n", "text/plain")
    site.html("/docs/", _index())
    site.html("/docs/guide.html", GUIDE)
    site.html("/docs/api.html", API, etag=False, last_modified="Tue, 03 Nov 2026 10:00:00 GMT")
    site.redirect("/docs/moved.html", "/docs/guide.html")
    site.redirect("/docs/away.html", "/other/page.html", 302)
    site.redirect("/docs/jump.html", f"http://{PRIVATE}/docs/x.html", 302)
    site.html("/docs/private/secret.html", "<h1>Secret</h1>")
    site.html("/other/page.html", "<h1>Other</h1>")
    pdf = make_pdf(
        [
            ["Manual page one", "Widgets need power."],
            ["Calibrating widgets", "Turn the dial to calibrate."],
        ],
        title="Widget Manual",
    )
    site.raw("/docs/manual.pdf", pdf, "application/pdf")
    site.raw("/docs/locked.pdf", encrypt_pdf(pdf, "secret"), "application/pdf")
    site.raw(
        "/docs/handbook.docx",
        make_docx(),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    )
    site.raw("/docs/logo.png", b"\x89PNG", "image/png")
    site.raw("/docs/data.bin", bytes(range(256)), "application/zip")
    latin1 = '<html><head><meta charset="utf-8"></head><body><h1>Café crème</h1><p>Déjà vu.</p>'
    site.raw("/docs/latin1.html", latin1.encode("latin-1"), "text/html")
    site.html("/docs/broken.html", "<div><h1>Broken page<p>Unclosed <b>bold <table><tr><td>cell")
    toc = "".join(f'<li><a href="{p}">{p} page</a></li>' for p in ("guide.html", "deep.html"))
    site.html("/docs/contents.html", f"<main><h1>Contents</h1><ul>{toc}</ul></main>")
    site.html("/docs/deep.html", "<h1>Deep page</h1><p>Only the contents page links here.</p>")


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    _build(s)
    with serve(s) as served:
        yield served


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Fail any connection to an address that is not loopback: no test traffic leaves."""
    attempts: list[Any] = []
    real = socket.create_connection

    def guarded(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        if not ipaddress.ip_address(address[0]).is_loopback:
            attempts.append(address)
            raise OSError(f"test guard: no connection to {address[0]}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", guarded)
    return attempts


def _opts(site: Site, **kw: Any) -> CrawlOptions:
    allow = (site.url("/docs/"), f"http://{PRIVATE}/docs/")
    return CrawlOptions(allow=allow, allow_networks=LOOPBACK, rate=1000.0, **kw)


def _docs(kb: KnowledgeBase) -> set[str]:
    return {d.id for d in kb.list_documents(limit=100)}


def test_a_crawl_ingests_pages_pdf_and_docx_and_notes_what_it_skipped(
    kb: KnowledgeBase, site: Site, loopback_only: list[Any]
) -> None:
    r = kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    u = site.url
    assert _docs(kb) == {
        u("/docs/"),
        u("/docs/guide.html"),
        u("/docs/api.html"),
        u("/docs/handbook.docx"),
        u("/docs/manual.pdf#page=1"),
        u("/docs/manual.pdf#page=2"),
        u("/docs/latin1.html"),
        u("/docs/broken.html"),
        u("/docs/contents.html"),
        u("/docs/deep.html"),
    }
    assert r.inserted == 10 and r.deleted == 0
    # A table of contents is kept without chunks (not searchable); its links were followed.
    assert (
        kb.chunks(u("/docs/contents.html")) == [] and kb.get(u("/docs/contents.html")).content == ""
    )
    assert [(e.path, e.message) for e in r.errors] == [
        (u("/docs/locked.pdf"), "encrypted PDF: it needs a password to be read")
    ]
    for note in (
        "1 disallowed by robots.txt",
        "1 redirect outside the allowlist",
        "2 refused address",
        "1 broken link (HTTP 404)",
        "1 not a document type (application/zip)",
        "1 not indexed (link list)",
    ):
        assert note in r.notice
    assert site.hits("/docs/private/secret.html") == []  # robots.txt honoured
    assert site.hits("/other/page.html") == []  # the redirect leaving the allowlist
    assert site.hits("/docs/logo.png") == []  # not even fetched
    assert loopback_only == []  # the private address was refused before connecting
    assert all("groundkb" in q.headers["User-Agent"] for q in site.requests)
    assert len(site.hits("/docs/guide.html")) == 1  # moved.html redirected to a page seen
    assert kb.sources()[0].source.kind == "docs"


def test_html_is_reduced_to_its_main_content_with_code_tables_and_absolute_links(
    kb: KnowledgeBase, site: Site
) -> None:
    kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    guide = kb.get(site.url("/docs/guide.html"))
    assert guide.title == "Guide" and guide.uri == site.url("/docs/guide.html")
    assert "```\npip install widget\nwidget init --force\n```" in guide.content
    assert "| free | LIMITS_FREE |" in guide.content.replace("  ", " ")
    assert f"[create endpoint]({site.url('/docs/api.html#create')})" in guide.content
    for boilerplate in ("FOOTERTEXT", "On this page", "Home", "¶", "3.1."):
        assert boilerplate not in guide.content
    index = kb.get(site.url("/docs/"))
    assert "SCRIPTTEXT" not in index.content and "color: red" not in index.content
    paths = [c.header_path for c in kb.chunks(guide.id)]
    assert paths == ["Guide > Installing", "Guide > Limits"]
    assert kb.get(site.url("/docs/latin1.html")).title == "Café crème"  # wrong declaration
    assert "cell" in kb.get(site.url("/docs/broken.html")).content  # malformed, still read


def test_citations_are_the_page_url_with_the_heading_anchor(kb: KnowledgeBase, site: Site) -> None:
    kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    hit = kb.search("install widget pip").hits[0]
    assert hit.citation == site.url("/docs/guide.html#installing")
    limits = kb.search("plan requests limits free").hits[0]
    assert limits.citation == site.url("/docs/guide.html#limits")
    pdf = kb.search("calibrate dial").hits[0]
    assert pdf.citation == site.url("/docs/manual.pdf#page=2")
    docx = kb.search("rollback job on-call").hits[0]
    assert docx.header_path == "Operations Handbook > Deploying > Rolling back"


def test_an_unchanged_recrawl_uses_conditional_requests_and_writes_nothing(
    kb: KnowledgeBase, site: Site
) -> None:
    first = kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    site.requests.clear()
    again = kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    assert (again.inserted, again.updated, again.deleted) == (0, 0, 0)
    assert again.unchanged == first.inserted and again.chunks_written == 0
    guide = site.hits("/docs/guide.html")[0]
    assert guide.headers.get("If-None-Match") and guide.status == 304
    api = site.hits("/docs/api.html")[0]
    assert api.headers.get("If-Modified-Since") and api.status == 304
    assert site.hits("/docs/locked.pdf")[0].status == 200  # failed before: fetched in full


def test_changed_vanished_and_unlinked_pages_are_updated_and_deleted(
    kb: KnowledgeBase, site: Site
) -> None:
    kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    guide_id = site.url("/docs/guide.html")
    before = {c.index: c.chunk_hash for c in kb.chunks(guide_id)}
    site.html("/docs/guide.html", GUIDE.replace("LIMITS_FREE", "250"))
    site.html("/docs/api.html", API, status=410)
    site.html("/docs/", _index().replace('<a href="latin1.html">latin1.html</a>', ""))
    r = kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    assert (r.inserted, r.updated, r.deleted) == (0, 1, 2)
    assert r.chunks_written == 1  # only the changed section
    after = {c.index: c.chunk_hash for c in kb.chunks(guide_id)}
    assert [i for i in after if after[i] != before[i]] == [1]
    ids = _docs(kb)
    assert site.url("/docs/api.html") not in ids and site.url("/docs/latin1.html") not in ids
    # The index page's HTML changed but its content did not: counted unchanged.
    assert r.unchanged == 7


def test_an_incomplete_crawl_keeps_the_pages_it_did_not_reach(
    kb: KnowledgeBase, site: Site
) -> None:
    kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    count = len(_docs(kb))
    site.html("/docs/", _index(), status=503)
    r = kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    assert r.deleted == 0 and len(_docs(kb)) == count
    assert [e.message for e in r.errors] == ["HTTP 503"]
    assert "crawl incomplete" in r.notice
    site.html("/docs/", _index())
    capped = kb.ingest_url(site.url("/docs/"), "web", options=_opts(site, max_pages=3))
    assert capped.deleted == 0 and "max_pages reached" in capped.notice


def test_refresh_updates_one_page_and_deletes_it_when_it_is_gone(
    kb: KnowledgeBase, site: Site
) -> None:
    kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    count = len(_docs(kb))
    guide = site.url("/docs/guide.html")
    site.html("/docs/guide.html", GUIDE.replace("LIMITS_FREE", "999"))
    site.requests.clear()
    r = kb.refresh_url(guide, options=_opts(site))
    assert (r.updated, r.deleted, r.chunks_written) == (1, 0, 1)
    assert [q.path for q in site.requests] == ["/robots.txt", "/docs/guide.html"]
    assert "999" in kb.get(guide).content and len(_docs(kb)) == count
    unchanged = kb.refresh_url(guide, options=_opts(site))
    assert (unchanged.updated, unchanged.unchanged, unchanged.chunks_written) == (0, 1, 0)
    site.html("/docs/guide.html", "", status=404)
    gone = kb.refresh_url(guide, options=_opts(site))
    assert gone.deleted == 1 and len(_docs(kb)) == count - 1
    with pytest.raises(NotFound):
        kb.refresh_url(site.url("/docs/never.html"), options=_opts(site))


def test_a_sitemap_start_reads_only_the_listed_pages_and_drops_unlisted_ones(
    kb: KnowledgeBase, site: Site
) -> None:
    def sitemap(paths: list[str]) -> bytes:
        urls = "".join(f"<url><loc>{site.url(p)}</loc></url>" for p in paths)
        xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        return gzip.compress(xml.encode())

    site.raw(
        "/docs/sitemap.xml.gz", sitemap(["/docs/guide.html", "/docs/api.html"]), "application/gzip"
    )
    start = site.url("/docs/sitemap.xml.gz")
    r = kb.ingest_url(start, "web", options=_opts(site))
    assert _docs(kb) == {site.url("/docs/guide.html"), site.url("/docs/api.html")}
    assert r.ok
    site.raw("/docs/sitemap.xml.gz", sitemap(["/docs/guide.html"]), "application/gzip")
    r = kb.ingest_url(start, "web", options=_opts(site))
    assert r.deleted == 1 and _docs(kb) == {site.url("/docs/guide.html")}


def test_loopback_is_refused_unless_the_source_allows_it(kb: KnowledgeBase, site: Site) -> None:
    with pytest.raises(InvalidInput, match="loopback address"):
        kb.ingest_url(site.url("/docs/"), "web", options=CrawlOptions(rate=1000.0))
    assert site.requests == []


def test_the_checked_address_is_the_one_connected_to(
    kb: KnowledgeBase, site: Site, monkeypatch: pytest.MonkeyPatch, loopback_only: list[Any]
) -> None:
    """DNS rebinding: the second answer for the name points elsewhere; it is never used."""
    port = int(site.base.rsplit(":", 1)[1])
    answers = iter(["127.0.0.1"] + [PRIVATE] * 100)
    real = socket.getaddrinfo

    def rebinding(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "docs.test":
            ip = next(answers)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    from groundkb.ingest.fetch import FetchPolicy, fetch, parse_networks

    policy = FetchPolicy("groundkb-test", allow_networks=parse_networks(["127.0.0.1/32"]))
    resp = fetch(f"http://docs.test:{port}/docs/api.html", policy)
    assert resp.status == 200 and loopback_only == []
    assert site.hits("/docs/api.html")[0].headers["Host"] == f"docs.test:{port}"


def test_responses_over_the_size_cap_or_too_slow_fail_that_page_only(
    kb: KnowledgeBase, site: Site
) -> None:
    big = "<h1>Big</h1>" + "<p>word</p>" * 20000
    site.html("/docs/guide.html", big)
    site.raw(
        "/docs/api.html",
        gzip.compress(b"<p>x</p>" * 200000),
        "text/html",
        headers={"Content-Encoding": "gzip"},
    )
    stall = threading.Event()
    site.html("/docs/broken.html", "<h1>late</h1>", stall=stall)
    r = kb.ingest_url(
        site.url("/docs/"), "web", options=_opts(site, max_bytes=100_000, timeout=0.3)
    )
    stall.set()
    errors = {e.path.rsplit("/", 1)[1]: e.message for e in r.errors}
    assert "over the 100,000-byte limit" in errors["guide.html"]
    assert "over the 100,000-byte limit" in errors["api.html"]  # counted after gunzip
    assert errors["broken.html"] == "timed out"
    assert site.url("/docs/handbook.docx") in _docs(kb)


def test_crawl_delay_in_robots_txt_slows_the_host_down(site: Site) -> None:
    from groundkb.ingest.crawl import Crawler, Scope

    site.raw("/robots.txt", b"User-agent: groundkb\nCrawl-delay: 2\n", "text/plain")
    crawler = Crawler(Scope((site.url("/docs/"),)), _opts(site), {}, "web", 500)
    assert crawler._host(site.url("/docs/")).interval == 2.0
    assert crawler.robots.check(site.url("/docs/private/secret.html")) is None


def test_missing_web_extra_is_named(
    kb: KnowledgeBase, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "html_to_markdown", None)
    with pytest.raises(MissingDependency, match=r"pip install 'groundkb\[web\]'"):
        kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))


def test_settings_sources_with_a_url_are_crawled_by_sync(tmp_path: Path, site: Site) -> None:
    config = tmp_path / "groundkb.toml"
    config.write_text(
        f'db = "kb.db"\n[[sources]]\nname = "web"\nurl = "{site.url("/docs/guide.html")}"\n'
        f'allow = ["{site.url("/docs/guide.html")}"]\nallow_networks = ["127.0.0.1/32"]\n'
        "rate = 1000.0\n"
    )
    from groundkb import load_settings

    settings = load_settings(config)
    with KnowledgeBase.open(settings=settings) as kb:
        [report] = kb.sync()
        assert report.inserted == 1 and _docs(kb) == {site.url("/docs/guide.html")}
        site.html("/docs/guide.html", GUIDE.replace("LIMITS_FREE", "7"))
        assert kb.refresh_url(site.url("/docs/guide.html")).updated == 1  # options from the table


def test_cli_crawls_a_url_with_progress_and_refreshes_a_page(tmp_path: Path, site: Site) -> None:
    db = str(tmp_path / "cli.db")
    base = [sys.executable, "-m", "groundkb", "--db", db]
    ingest = subprocess.run(
        [
            *base,
            "ingest",
            site.url("/docs/"),
            "-s",
            "web",
            "--allow-network",
            "127.0.0.1/32",
            "--rate",
            "1000",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert ingest.returncode == 1, ingest.stderr  # locked.pdf is an error; the rest is in
    report = json.loads(ingest.stdout)
    assert report["inserted"] == 10 and len(report["errors"]) == 1
    assert "crawling web:" in ingest.stderr and "fetched" in ingest.stderr
    refresh = subprocess.run(
        [*base, "refresh", site.url("/docs/guide.html"), "--allow-network", "127.0.0.1/32"],
        capture_output=True,
        text=True,
    )
    assert refresh.returncode == 0, refresh.stderr
    assert "1 unchanged" in refresh.stdout


def test_settings_reject_bad_crawl_options(tmp_path: Path) -> None:
    from groundkb.errors import ConfigError

    settings = Settings(
        db=str(tmp_path / "x.db"),
        sources=({"name": "web", "url": "https://docs.example.com/", "rate": -1},),
    )
    with KnowledgeBase.open(settings=settings) as kb, pytest.raises(ConfigError, match="rate"):
        kb.sync()


def test_crawl_flags_on_files_and_a_loader_on_a_url_are_usage_errors(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from groundkb.serve.cli import cli

    db = str(tmp_path / "u.db")
    files = CliRunner().invoke(cli, ["--db", db, "ingest", str(tmp_path), "-s", "x", "--rate", "2"])
    assert files.exit_code == 2 and "crawl options apply to a URL" in files.output
    url = CliRunner().invoke(
        cli, ["--db", db, "ingest", "https://docs.example.com/", "-s", "x", "--loader", "html"]
    )
    assert url.exit_code == 2 and "--loader applies to files" in url.output


def test_a_start_page_that_is_gone_or_redirects_away_deletes_nothing(
    kb: KnowledgeBase, site: Site
) -> None:
    kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    count = len(_docs(kb))
    site.html("/docs/", "", status=404)
    gone = kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    assert [e.message for e in gone.errors] == ["start page: HTTP 404"]
    site.redirect("/docs/", "/other/page.html")
    away = kb.ingest_url(site.url("/docs/"), "web", options=_opts(site))
    assert [e.message for e in away.errors] == ["start page: redirect outside the allowlist"]
    assert gone.deleted == away.deleted == 0 and len(_docs(kb)) == count


def test_sphinx_api_entries_are_sections_cited_by_their_own_anchor(kb: KnowledgeBase) -> None:
    """Each function, class and method of a Sphinx page is a section headed by its
    name, below the heading it sits under (a method below its class), with its signature
    first; a hit in it cites the entry's own anchor. Entries whose id is not their name
    (a C function's ``c.Path_Check``) and other description lists stay text, under the
    section they are in."""
    s = Site()
    s.html("/docs/pathutils.html", SPHINX_API_PAGE)
    with serve(s) as site:
        url = site.url("/docs/pathutils.html")
        assert kb.ingest_url(url, "web", options=_opts(site)).inserted == 1
        top = "pathutils — Path helpers > Functions"
        assert [c.header_path for c in kb.chunks(url)] == [
            "pathutils — Path helpers",
            top + " > pathutils.ismount",
            top + " > pathutils.Walker",
            top + " > pathutils.Walker > pathutils.Walker.skip",
            top,  # what follows the entries is the section's again
        ]
        content = kb.get(url).content
        assert "`pathutils.ismount(path)`" in content and "¶" not in content
        assert "Path_Check" in content
        hit = kb.search("is a path a mount point").hits[0]
        assert hit.citation == url + "#pathutils.ismount"
        assert kb.search("leave a subtree out of the walk").hits[0].citation == (
            url + "#pathutils.Walker.skip"
        )
        assert kb.search("the C check of a path object").hits[0].citation == url + "#functions"
