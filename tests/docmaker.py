"""Test documents made on the fly: PDFs (a minimal writer), DOCX (python-docx), ZIPs,
and folders of text pages (``write_pages``, with tldr alias pages in ``TLDR_ALIAS_PAGES``).

The PDF writer emits PDF 1.4 with one Helvetica text stream per page and, optionally,
an outline (bookmarks) pointing at pages; pypdf reads it like any producer's output.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from pathlib import Path


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    pages: list[list[str]], title: str = "", outline: tuple[tuple[str, int], ...] = ()
) -> bytes:
    """A PDF whose page ``i`` shows the lines ``pages[i]``; ``outline`` is (title, page
    index) bookmarks at the top level."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    pages_id = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    page_ids: list[int] = []
    for lines in pages:
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        page_ids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>"
                % (pages_id, font, content)
            )
        )
    kids = b" ".join(b"%d 0 R" % p for p in page_ids)
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))
    extra = b""
    if outline:
        root = add(b"")
        items = [add(b"") for _ in outline]
        for n, ((text, page), item) in enumerate(zip(outline, items, strict=True)):
            links = b""
            if n > 0:
                links += b" /Prev %d 0 R" % items[n - 1]
            if n < len(items) - 1:
                links += b" /Next %d 0 R" % items[n + 1]
            objects[item - 1] = b"<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /Fit]%s >>" % (
                _escape(text).encode("latin-1"),
                root,
                page_ids[page],
                links,
            )
        objects[root - 1] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
            items[0],
            items[-1],
            len(items),
        )
        extra = b" /Outlines %d 0 R" % root
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R%s >>" % (pages_id, extra)
    info = add(b"<< /Title (%s) >>" % _escape(title).encode("latin-1")) if title else 0
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info:
        trailer += b" /Info %d 0 R" % info
    out.write(b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def encrypt_pdf(data: bytes, password: str) -> bytes:
    """The same PDF, encrypted with a user password (RC4, no extra packages needed)."""
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx() -> bytes:
    """A Word document with a title, two heading levels, a list, a table and code."""
    import docx

    d = docx.Document()
    d.core_properties.title = "Operations Handbook"
    d.add_heading("Operations Handbook", level=0)
    d.add_paragraph("How the team runs the billing service.")
    d.add_heading("Deploying", level=1)
    d.add_paragraph("Deploys happen every weekday morning.")
    d.add_heading("Rolling back", level=2)
    d.add_paragraph("Run the rollback job and page the on-call engineer.")
    d.add_paragraph("Check the error rate", style="List Bullet")
    d.add_paragraph("Confirm the previous build is live", style="List Bullet")
    table = d.add_table(rows=2, cols=2)
    table.rows[0].cells[0].text = "Signal"
    table.rows[0].cells[1].text = "Threshold"
    table.rows[1].cells[0].text = "error rate"
    table.rows[1].cells[1].text = "2%"
    d.add_heading("Rotating credentials", level=1)
    d.add_paragraph("Credentials rotate every ninety days with the vault tool.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def make_zip_bomb_docx() -> bytes:
    """A .docx-shaped ZIP with an entry that expands about a thousand times."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", "<w:document/>")
        z.writestr("word/media/padding.bin", b"\0" * (8 * 2**20))
    return out.getvalue()


def write_pages(folder: Path, pages: Mapping[str, str]) -> Path:
    """Each text written to ``folder / name`` (``name`` may hold sub-folders); returns
    ``folder``, ready to ingest."""
    for name, text in pages.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def _tldr_alias(name: str, of: str, gnu: bool = False) -> str:
    return (
        f"# {name}\n\n> This command is an alias of {'GNU ' if gnu else ''}`{of}`.\n\n"
        f"- View documentation for the original command:\n\n`tldr {of}`\n"
    )


#: tldr pages, by path: two alias pages with the command each stands for (``gls`` on
#: macOS and Linux ``ls``, to pick the platform), and an alias of a command not there.
TLDR_ALIAS_PAGES = {
    "common/docker-commit.md": _tldr_alias("docker commit", "docker container commit"),
    "common/docker-container-commit.md": (
        "# docker container commit\n\n> Create a new image from a container's changes.\n\n"
        "- Create an image from a specific container:\n\n"
        "`docker container commit {{container}} {{image}}:{{tag}}`\n"
    ),
    "osx/gls.md": _tldr_alias("gls", "ls", gnu=True),
    "osx/ls.md": "# ls\n\n> List directory contents.\n\n- List files one per line:\n\n`ls -1`\n",
    "linux/ls.md": "# ls\n\n> List directory contents.\n\n- List files:\n\n`ls`\n",
    "common/kafkacat.md": _tldr_alias("kafkacat", "kcat"),
}


def sphinx_entry(
    kind: str, prename: str, name: str, params: str, body: str, inner: str = "", ident: str = ""
) -> str:
    """A Sphinx API entry as Sphinx writes it (name spans, a permalink, a description)."""
    ident = ident or prename + name
    return (
        f'<dl class="py {kind}"><dt class="sig sig-object py" id="{ident}">'
        f'<span class="sig-prename descclassname"><span class="pre">{prename}</span></span>'
        f'<span class="sig-name descname"><span class="pre">{name}</span></span>'
        f'<span class="sig-paren">(</span><em class="sig-param">{params}</em>'
        f'<span class="sig-paren">)</span><a class="headerlink" href="#{ident}">¶</a></dt>'
        f"<dd><p>{body}</p>{inner}</dd></dl>"
    )


SPHINX_API_PAGE = (
    '<html><head><title>pathutils</title></head><body><div role="main">'
    '<section id="pathutils"><h1>pathutils — Path helpers<a class="headerlink" '
    'href="#pathutils">¶</a></h1><p>Helpers for paths.</p>'
    '<section id="functions"><h2>Functions<a class="headerlink" href="#functions">¶</a></h2>'
    + sphinx_entry(
        "function", "pathutils.", "ismount", "path", "Return True if path is a mount point."
    )
    + sphinx_entry(
        "class",
        "pathutils.",
        "Walker",
        "top",
        "Walks a tree of folders.",
        # a method shows its own name only, as Sphinx writes it
        sphinx_entry(
            "method",
            "",
            "skip",
            "folder",
            "Leave a subtree out of the walk.",
            ident="pathutils.Walker.skip",
        ),
    )
    + '<dl class="c function"><dt class="sig sig-object c" id="c.Path_Check">'
    '<span class="sig-name descname"><span class="pre">Path_Check</span></span></dt>'
    "<dd><p>The C check of a path object.</p></dd></dl>"
    '<dl class="glossary"><dt id="term-mount">mount</dt><dd>A file system attached.</dd></dl>'
    "</section></section></div></body></html>"
)


_OK = {"200": {"description": "ok"}}
GADGETS_SPEC = {  # an OpenAPI spec with one deprecated operation
    "openapi": "3.0.0",
    "info": {"title": "Gadgets", "version": "1"},
    "paths": {
        "/gadgets": {
            "post": {"summary": "Create a gadget", "deprecated": True, "responses": _OK},
            "get": {"summary": "List gadgets", "responses": _OK},
        }
    },
}
