"""Local HTML, PDF and Word files through the loader registry; HTML conversion and
address checks on their own."""

from __future__ import annotations

import ipaddress
import re
import sys
from pathlib import Path

import pytest

from groundkb import KnowledgeBase
from groundkb.errors import IngestError, InvalidInput
from groundkb.ingest.fetch import address_problem, parse_networks
from groundkb.ingest.html import decode_html, parse_html

from .docmaker import (
    SPHINX_API_PAGE,
    encrypt_pdf,
    make_docx,
    make_pdf,
    make_zip_bomb_docx,
)

PAGE = """<!DOCTYPE html><html lang="en"><head><title>Sharing | Acme Docs</title>
<meta name="description" content="How to share a workspace."></head><body>
<div class="sidebar"><a href="/docs/a.html">A</a></div>
<header class="site">ACME HEADER</header>
<div role="main"><h1 id="sharing">Sharing</h1><p>Share a workspace with a
<a href="people.html">teammate</a> or <a href="#links">jump below</a>.</p>
<h2 id="links">Share links<a href="#links" class="anchor">#</a></h2>
<pre><code>acme share --link ws-1
  --expires 7d</code></pre>
<div hidden>HIDDENTEXT</div><p style="display: none">INVISIBLE</p>
</div><div role="contentinfo">FOOTER</div><script>alert("x")</script></body></html>"""


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "guides" / "sharing.html").write_text(PAGE, encoding="utf-8")
    pdf = make_pdf(
        [["Widget manual", "Power the widget."], ["Calibration", "Turn the dial clockwise."]],
        title="Widget Manual",
        outline=(("1. Power", 0), ("2. Calibration", 1)),
    )
    (docs / "manual.pdf").write_bytes(pdf)
    (docs / "locked.pdf").write_bytes(encrypt_pdf(pdf, "hunter2"))
    (docs / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    (docs / "handbook.docx").write_bytes(make_docx())
    (docs / "bomb.docx").write_bytes(make_zip_bomb_docx())
    (docs / "notes.md").write_text("# Notes\n\nPlain Markdown still works.\n")
    return docs


def test_html_keeps_the_main_content_headings_and_code(tmp_path: Path) -> None:
    page = parse_html(PAGE.encode(), "https://acme.test/docs/guides/sharing.html")
    assert page.title == "Sharing"
    assert page.description == "How to share a workspace."
    assert page.markdown.startswith("# Sharing\n")
    assert "## Share links\n" in page.markdown
    assert "```\nacme share --link ws-1\n  --expires 7d\n```" in page.markdown
    assert "[teammate](https://acme.test/docs/guides/people.html)" in page.markdown
    assert "jump below" in page.markdown and "#links" not in page.markdown
    for gone in ("ACME HEADER", "FOOTER", "HIDDENTEXT", "INVISIBLE", "alert", "sidebar"):
        assert gone not in page.markdown
    assert page.links == (
        "https://acme.test/docs/a.html",
        "https://acme.test/docs/guides/people.html",
    )


def test_wrong_charset_declarations_still_decode() -> None:
    latin1 = "<meta charset='utf-8'><p>Façade déjà</p>".encode("latin-1")
    assert "Façade déjà" in decode_html(latin1)
    utf8 = "<meta charset='iso-8859-1'><p>Façade déjà</p>".encode()
    assert "Façade déjà" in decode_html(utf8, "iso-8859-1")
    assert "Ärger" in decode_html("<p>Ärger</p>".encode("cp1252"), "no-such-charset")
    sjis = "<p>日本語</p>".encode("shift_jis")
    assert "日本語" in decode_html(sjis, "shift_jis")


def test_malformed_html_is_read_and_binary_content_is_an_error() -> None:
    page = parse_html(b"<div><h2>Title<p>text <b>bold <table><tr><td>cell</div></p>")
    assert "cell" in page.markdown and "Title" in page.markdown
    with pytest.raises(IngestError, match="binary"):
        parse_html(b"\x00\x01\x02<html>")
    with pytest.raises(IngestError, match="empty"):
        parse_html(b"   ")


def test_a_noindex_page_gives_no_document_but_its_links() -> None:
    page = parse_html(
        b'<meta name="robots" content="noindex"><a href="/x">x</a>', "https://a.test/"
    )
    assert page.noindex and not page.nofollow and page.links == ("https://a.test/x",)


def test_local_html_pdf_and_docx_files_are_ingested_and_bad_ones_reported(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    r = kb.ingest(_folder(tmp_path), source="files")
    ids = {d.id for d in kb.list_documents()}
    assert ids == {"guides/sharing", "manual.pdf#page=1", "manual.pdf#page=2", "handbook", "notes"}
    problems = {e.path: e.message for e in r.errors}
    assert problems["locked.pdf"] == "encrypted PDF: it needs a password to be read"
    assert problems["corrupt.pdf"].startswith("corrupt PDF")
    assert "ZIP bomb" in problems["bomb.docx"]
    assert len(problems) == 3
    pdf_hit = kb.search("calibration dial clockwise").hits[0]
    assert pdf_hit.citation == "manual.pdf#page=2"
    assert pdf_hit.header_path == "2. Calibration"
    html_hit = kb.search("share links expires").hits[0]
    assert html_hit.citation == "files:guides/sharing.html#share-links"
    assert kb.sources()[0].source.kind == "docs"
    again = kb.ingest(tmp_path / "docs", source="files")
    assert again.chunks_written == 0 and again.unchanged == 5


def test_docx_headings_become_the_header_path(kb: KnowledgeBase, tmp_path: Path) -> None:
    (tmp_path / "handbook.docx").write_bytes(make_docx())
    kb.ingest(tmp_path / "handbook.docx", source="ops")
    doc = kb.get("handbook")
    assert doc.title == "Operations Handbook"
    assert "| error rate | 2% |" in doc.content
    assert [c.header_path for c in kb.chunks("handbook")] == [
        "Operations Handbook",
        "Operations Handbook > Deploying",
        "Operations Handbook > Deploying > Rolling back",
        "Operations Handbook > Rotating credentials",
    ]


def test_a_missing_pdf_extra_is_a_per_file_error_naming_it(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _folder(tmp_path)
    monkeypatch.setitem(sys.modules, "pypdf", None)
    r = kb.ingest(docs, source="files")
    messages = {e.path: e.message for e in r.errors}
    assert "pip install 'groundkb[pdf]'" in messages["manual.pdf"]
    assert "notes" in {d.id for d in kb.list_documents()}


SPHINX_PAGE = """:orphan:
:tocdepth: 2

.. _install:

=============
Installation
=============

.. toctree::
   :maxdepth: 2

   usage-page
   api-page

Install the package with pip::

    pip install frobnicate

Then call :func:`~frobnicate.run` or see :ref:`the settings <config>` and :doc:`upgrading`.

Configuring
-----------

.. code-block:: python

   frobnicate.run(level=3)

.. versionadded:: 2.1
   The ``level`` option.

.. include:: /etc/hostname

.. raw:: html

   <script>alert("x")</script>

.. autofunction:: frobnicate.stop

Options
~~~~~~~

=========  =======================
Option     Meaning
=========  =======================
level      How hard to frobnicate
=========  =======================

Troubleshooting
---------------

If :program:`frob` fails with ``E42``, run ``frob doctor``.
"""


def test_rst_sections_become_the_header_path_and_sphinx_markup_keeps_its_text(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "install.rst").write_text(SPHINX_PAGE, encoding="utf-8")
    (docs / "notes.rst").write_text("A page without a title, *unclosed and `broken.\n")
    r = kb.ingest(docs, source="manual")
    assert not r.errors and r.inserted == 2
    doc = kb.get("guide/install")
    assert (doc.title, doc.category) == ("Installation", "guide")
    assert [c.header_path for c in kb.chunks("guide/install")] == [
        "Installation",
        "Installation > Configuring",
        "Installation > Configuring > Options",
        "Installation > Troubleshooting",
    ]
    text = doc.content
    assert "```\npip install frobnicate\n```" in text
    assert "```\nfrobnicate.run(level=3)\n```" in text
    assert "Then call `frobnicate.run` or see the settings and upgrading." in text
    assert "versionadded 2.1: The `level` option." in text
    assert "autofunction frobnicate.stop" in text
    assert "| level | How hard to frobnicate |" in re.sub(" +", " ", text)
    assert "If `frob` fails with `E42`, run `frob doctor`." in text
    # File insertion and raw output are off; toctree (a list of files) and problem
    # reports are left out.
    hostname = Path("/etc/hostname")
    if hostname.is_file() and hostname.read_text().strip():
        assert hostname.read_text().strip() not in text
    for gone in ("alert", "script", "toctree", "usage-page", "include", "Unknown", "ERROR"):
        assert gone not in text
    # Sphinx's file-wide metadata (":orphan:", ":tocdepth:") is no text of the page
    assert "orphan" not in text and "tocdepth" not in text
    assert kb.get("notes").title == "notes"
    assert "unclosed" in kb.get("notes").content
    hit = kb.search("frobnicate harder level option").hits[0]
    assert (hit.doc_id, hit.header_path) == (
        "guide/install",
        "Installation > Configuring > Options",
    )
    again = kb.ingest(docs, source="manual")
    assert again.unchanged == 2 and again.chunks_written == 0


def test_a_missing_rst_extra_is_a_per_file_error_naming_it(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "install.rst").write_text(SPHINX_PAGE, encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n\nStill ingested.\n")
    monkeypatch.setitem(sys.modules, "docutils.core", None)
    r = kb.ingest(tmp_path, source="files")
    messages = {e.path: e.message for e in r.errors}
    assert "pip install 'groundkb[rst]'" in messages["install.rst"]
    assert {d.id for d in kb.list_documents()} == {"notes"}


def test_txt_files_are_read_only_with_a_loader_that_says_what_they_are(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.txt").write_text(SPHINX_PAGE, encoding="utf-8")
    (docs / "guide.rst").write_text("Guide\n=====\n\nRead the guide.\n", encoding="utf-8")
    r = kb.ingest(docs, source="manual")
    assert r.skipped == ("install.txt",) and {d.id for d in kb.list_documents()} == {"guide"}
    r = kb.ingest(docs, source="manual", loader="rst")
    assert not r.errors and r.inserted == 1
    assert kb.get("install").title == "Installation"
    assert [c.header_path for c in kb.chunks("install")][1] == "Installation > Configuring"
    one = tmp_path / "notes.txt"
    one.write_text("# Notes\n\nPlain notes.\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="--loader rst or --loader markdown"):
        kb.ingest(one, source="notes")
    assert kb.ingest(one, source="notes", loader="markdown").inserted == 1
    assert kb.get("notes").title == "Notes"


def test_the_cli_offers_every_loader() -> None:
    from groundkb.ingest import LOADER_NAMES
    from groundkb.serve.cli import cli

    option = next(p for p in cli.commands["ingest"].params if p.name == "loader")
    assert sorted(option.type.choices) == sorted(LOADER_NAMES)


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd12::1", "a private address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("168.63.129.16", "a cloud metadata address"),
        ("fe80::1", "a link-local address"),
        ("100.64.0.1", "not a public address"),
        ("0.0.0.0", "not a public address"),
        ("224.0.0.1", "not a public address"),
        ("93.184.216.34", None),
    ],
)
def test_addresses_that_are_not_public_are_refused(address: str, problem: str | None) -> None:
    assert address_problem(ipaddress.ip_address(address), ()) == problem


def test_an_allowed_network_admits_only_its_addresses() -> None:
    allowed = parse_networks(["127.0.0.1/32", "10.0.0.0/8"])
    assert address_problem(ipaddress.ip_address("127.0.0.1"), allowed) is None
    assert address_problem(ipaddress.ip_address("10.9.9.9"), allowed) is None
    assert address_problem(ipaddress.ip_address("127.0.0.2"), allowed) == "a loopback address"
    assert address_problem(ipaddress.ip_address("192.168.0.1"), allowed) == "a private address"


def _man_html(name: str, section: str, whatis: str, synopsis: str, body: str) -> str:
    """A man page as asciidoc renders one (Git's manual is built this way)."""
    return f"""<!DOCTYPE html><html><head><title>{name}({section})</title></head>
<body class="manpage"><div id="header"><h1>{name}({section}) Manual Page</h1>
<h2>NAME</h2><div class="sectionbody"><p>{name} -
   {whatis}</p></div></div>
<div id="content"><div class="sect1"><h2 id="_synopsis">SYNOPSIS</h2>
<div class="sectionbody"><div class="verseblock"><pre class="content"><em>{synopsis}</em>
</pre></div></div></div>
<div class="sect1"><h2 id="_description">DESCRIPTION</h2><div class="sectionbody">
<p>{body}</p></div></div></div></body></html>"""


def test_man_pages_are_the_commands_they_document(kb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "man"
    docs.mkdir()
    pages = {
        "frob.html": _man_html("frob", "1", "the frobnicating tool", "frob [-v] <command>",
                               "Frob frobnicates widgets."),
        "frob-polish.html": _man_html(
            "frob-polish", "1", "Polish a widget until it shines",
            "frob polish [--gloss] &lt;widget&gt;", "Rubs the widget with a soft cloth.",
        ),
        "frob-grind.html": _man_html("frob-grind", "8", "Grind widgets down to dust",
                                     "frob grind [-n] &lt;widget&gt;", "Grinds the widget."),
        # A file format (section 5) is read, not run: it stays a page.
        "frobrc.html": _man_html("frobrc", "5", "Settings of the frob tool",
                                 "$HOME/.frobrc", "Each line sets one frob setting."),
    }  # fmt: skip
    # The same page under another name (as man page aliases are installed)
    pages["frob-buff.html"] = pages["frob-polish.html"]
    for file, html in pages.items():
        (docs / file).write_text(html, encoding="utf-8")
    # mandoc's style in Markdown: no section in the title, a synopsis that runs it, a dash
    (docs / "scour.md").write_text(
        "# SCOUR\n\n## NAME\n\n**scour**, **descour** — scrub a widget clean\n\n"
        "## SYNOPSIS\n\n```\nscour [-f] file\n```\n\n## DESCRIPTION\n\nScrubs.\n"
    )
    # mandoc's HTML: the section in a header table, the NAME heading the first <h1>
    (docs / "frob.conf.html").write_text(
        "<html><head><title>FROB.CONF(5)</title></head><body><table><tr>"
        "<td>FROB.CONF(5)</td><td>File Formats</td></tr></table>"
        '<section class="Sh"><h1 class="Sh" id="NAME">NAME</h1>'
        '<p class="Pp">frob.conf - settings of the frob tool</p></section>'
        '<section class="Sh"><h1 class="Sh" id="SYNOPSIS">SYNOPSIS</h1>'
        "<p><i>/etc/frob.conf</i></p></section></body></html>"
    )
    # ronn's Markdown (npm's manual): the whatis line is the title
    (docs / "frob-wax.md").write_text(
        "# frob-wax(1) -- wax a widget\n\n## SYNOPSIS\n\n    frob wax [--coats <n>]\n\n"
        "## DESCRIPTION\n\nWaxes.\n"
    )
    # A page that only has a section called "Name" is no man page.
    (docs / "naming.md").write_text(
        "# Naming widgets\n\n## Name\n\nwidget - any small part\n\nPick short names.\n"
    )
    report = kb.ingest(docs, source="man")
    assert not report.errors and report.inserted == 9
    polish = kb.get("frob-polish")
    assert (polish.type, polish.command) == ("command", "frob polish")
    assert polish.summary == "Polish a widget until it shines"
    assert polish.metadata["manual_section"] == "1"
    assert (kb.get("frob").command, kb.get("frob-grind").command) == ("frob", "frob grind")
    assert kb.get("frobrc").type == "page"
    # a man page shows its usage in its own sections: no "command has no examples"
    assert "no_examples" not in {p.code for p in kb.validate()}
    conf = kb.get("frob.conf")
    assert (conf.type, conf.title, conf.summary) == (
        "page",
        "frob.conf(5)",
        "settings of the frob tool",
    )
    scour = kb.get("scour")
    assert (scour.type, scour.command, scour.aliases) == ("command", "scour", ("descour",))
    wax = kb.get("frob-wax")
    assert (wax.type, wax.command, wax.summary) == ("command", "frob wax", "wax a widget")
    assert (kb.get("naming").type, kb.get("naming").command) == ("page", "")
    assert kb.get_command("frob polish").id in ("frob-polish", "frob-buff")
    # Typed as a command: answered exactly, options and values allowed ...
    r = kb.search("frob polish --gloss table.txt")
    assert (r.verdict.kind, r.verdict.reason) == ("answer", "exact_command")
    assert [h.doc_id for h in r.hits] in (["frob-polish"], ["frob-buff"])  # one, not both
    # ... and a subcommand no page documents is no match, not the program's page.
    r = kb.search("frob shine --all")
    assert (r.verdict.kind, r.verdict.reason, r.hits) == ("no_match", "unknown_command", ())
    assert "frob polish" in r.suggestions
    # Values after a command without subcommands are its arguments; plain words after
    # one with subcommands name a subcommand, whatever follows.
    r = kb.search("frob polish widgets until --gloss")
    assert r.verdict.reason == "exact_command"
    assert kb.search("frob widgets and cloth --verbose").verdict.reason == "unknown_command"
    # A question in words finds the command by what its NAME line says it does.
    assert kb.search("how do I make a widget shine").hits[0].doc_id in ("frob-polish", "frob-buff")


def test_a_local_sphinx_page_cites_an_api_entry_by_its_own_anchor(tmp_path: Path) -> None:
    """An HTML file ingested from a folder cites an API entry the way the page names it
    (``#pathutils.ismount``), as a crawled page does; Markdown keeps its slugs."""
    docs = tmp_path / "docs"
    (docs / "library").mkdir(parents=True)
    (docs / "library" / "pathutils.html").write_text(SPHINX_API_PAGE, encoding="utf-8")
    (docs / "notes.md").write_text("# Notes\n\n## url_for\n\nBuild an address for an endpoint.\n")
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        assert kb.ingest(docs, source="docs").ok
        hit = kb.search("is a path a mount point").hits[0]
        assert hit.header_path.endswith("> pathutils.ismount")
        assert hit.citation == "docs:library/pathutils.html#pathutils.ismount"
        assert kb.search("build an address").hits[0].citation == "docs:notes.md#url-for"
