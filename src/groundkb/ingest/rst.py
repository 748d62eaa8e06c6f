"""reStructuredText (.rst) files: sections as the header path, code and tables kept.

docutils (the reference implementation of reStructuredText) parses the file; its HTML5
writer renders the tree, and the page takes the same way as a local HTML file
(``html.py``): lxml, html-to-markdown, then the header-aware chunker. So a section's
chunks carry the titles above it, and tables, lists and code blocks read as they do in
every other page.

**Safe by construction.** A documentation folder is data, not a program: the
``include``, ``literalinclude``-style file insertion and ``raw`` directives are
disabled (a ``.. include:: /etc/passwd`` inserts nothing), docutils reads no
configuration file, and no syntax highlighter runs. Parse problems never stop a file:
docutils reports them into the tree, and they are left out of the text.

**Sphinx sources.** Most .rst files are written for Sphinx, whose roles and directives
plain docutils does not know. Instead of dropping what they say:

- an unknown role keeps its text: ``:func:`frob.run``` reads as code ``frob.run``,
  ``:ref:`the options <opts>``` as "the options" (the text before an explicit target),
  and a reference to a section, document or term without one (``:doc:`install```) as
  plain text;
- Sphinx's file-wide metadata (a field list before anything else: ``:orphan:``,
  ``:tocdepth: 3``) is left out, so the title after it is the document's;
- an unknown directive keeps its name, arguments and content as a paragraph
  (``.. versionadded:: 2.1`` with "The ``level`` option." reads "versionadded 2.1: The
  level option."); one that has no content (``.. autofunction:: frob.run``) names what it
  stands for the same way; ``toctree``, which only lists other files, and a directive
  with neither arguments nor content are left out.

The document id is the path without its suffix, like a Markdown page; the title is the
document title (a lone top-level section title, as docutils promotes it), else the file
name without its suffix. Needs the ``rst`` extra (docutils, plus the HTML conversion of
the ``web`` extra).
"""

from __future__ import annotations

import io
import re
from pathlib import PurePosixPath
from typing import Any

from ..errors import IngestError, MissingDependency
from ..models import FileError
from .base import LoadContext, Loaded, decode_text, require
from .html import local_document, parse_html

# Sphinx directives that hold no text of their own: a list of other files.
_STRUCTURE_ONLY = frozenset({"toctree"})
# `:role:`text``, `:domain:role:`text`` (the form docutils leaves for an unknown role)
_ROLE = re.compile(r"^:(?P<role>[\w.+-]+(?::[\w.+-]+)?):`(?P<text>.*)`$", re.S)
# "the options <opts>": the text before an explicit target
_EXPLICIT_TARGET = re.compile(r"^(?P<text>.*?)\s*<[^<>]*>$", re.S)
_DIRECTIVE = re.compile(r"^\.\.\s+(?P<name>[\w:.+-]+)::\s*(?P<args>.*)$")
# Sphinx's file-wide metadata: a field list before anything else (":orphan:",
# ":tocdepth: 3"), with its indented continuation lines
_METADATA = re.compile(r"\A(?:[ \t]*\n)*(?::[\w.-]+:(?:[ \t][^\n]*)?\n(?:[ \t]+[^\n]*\n)*)+")
# Roles that refer to a section, a document or a glossary term: their text is prose
_PROSE_ROLES = frozenset({"ref", "doc", "term", "numref", "any"})
_OPTION = re.compile(r"^:[\w -]+:")

_SETTINGS: dict[str, Any] = {
    "_disable_config": True,  # no /etc/docutils.conf, ./docutils.conf or ~/.docutils
    "file_insertion_enabled": False,  # include, csv-table :file:, raw :file:
    "raw_enabled": False,
    "report_level": 5,  # problems stay in the tree (and out of the text), never on stderr
    "halt_level": 5,  # nothing stops the parse
    "syntax_highlight": "none",
    "input_encoding": "unicode",
    "output_encoding": "unicode",
    "embed_stylesheet": False,
    "stylesheet_path": "",
    "stylesheet": "",
}


def _role_text(raw: str) -> tuple[str, bool]:
    """(text, is code) of an unknown role's source: ``:func:`~a.b``` → ("a.b", True);
    ``:ref:`intro <start>``` → ("intro", False); anything else as it stands."""
    m = _ROLE.match(raw.strip())
    if not m:
        return raw, False
    text = m.group("text")
    explicit = _EXPLICIT_TARGET.match(text)
    if explicit and explicit.group("text"):
        return explicit.group("text"), False
    return text.lstrip("~!"), m.group("role").split(":")[-1] not in _PROSE_ROLES


def _directive_text(block: str) -> tuple[str, str] | None:
    """(name, text) of an unknown directive from its source block, None if the block is
    not one."""
    lines = block.splitlines()
    m = _DIRECTIVE.match(lines[0].strip()) if lines else None
    if not m:
        return None
    name = m.group("name").split(":")[-1]
    body = lines[1:]
    while body and _OPTION.match(body[0].strip()):
        body = body[1:]
    content = " ".join(" ".join(line.split()) for line in body if line.strip())
    args = " ".join(m.group("args").split())
    if not args and not content:
        return None
    head = f"{name} {args}".strip()
    text = f"{head}: {content}" if content else head
    return name, text.replace("``", "`")


def _clean(doctree: Any, nodes: Any) -> None:
    """Unknown roles and directives to their text (module doc); every other problem
    report out of the tree; inline literals marked as code so they render as ``<code>``."""
    for node in list(doctree.findall(nodes.problematic)):
        text, code = _role_text(node.astext())
        node.parent.replace(node, nodes.literal(text, text) if code else nodes.Text(text))
    for msg in list(doctree.findall(nodes.system_message)):
        replacement = None
        blocks = [b for b in msg.children if isinstance(b, nodes.literal_block)]
        if msg.get("level", 0) >= 3 and blocks and "Unknown directive" in msg.astext():
            found = _directive_text(blocks[0].astext())
            if found and found[0] not in _STRUCTURE_ONLY:
                replacement = nodes.paragraph(found[1], found[1])
        if replacement is None:
            msg.parent.remove(msg)
        else:
            msg.parent.replace(msg, replacement)
    for literal in doctree.findall(nodes.literal):
        literal["classes"] = [*literal.get("classes", ()), "code"]


def rst_html(text: str, title: str = "") -> str:
    """The HTML5 page docutils writes for reStructuredText ``text`` (module doc);
    ``title`` is the page's ``<title>`` when the text has no document title."""
    core = require("docutils.core", "rst", "reading reStructuredText")
    nodes = require("docutils.nodes", "rst", "reading reStructuredText")
    settings = {**_SETTINGS, "warning_stream": io.StringIO(), "title": title or "untitled"}
    # Without the metadata in front, a lone top-level title becomes the document's.
    text = _METADATA.sub("", text, count=1)
    try:
        doctree = core.publish_doctree(text, settings_overrides=settings)
        _clean(doctree, nodes)
        return str(core.publish_from_doctree(doctree, writer="html5",
                                             settings_overrides=settings))  # fmt: skip
    except Exception as exc:  # docutils' own errors on input it cannot handle
        raise IngestError(f"cannot read reStructuredText: {exc}") from exc


class RstLoader:
    """``.rst`` files: id = path without suffix, like Markdown pages."""

    name = "rst"
    version = "3"
    suffixes: tuple[str, ...] = (".rst", ".rest")

    def sniff(self, data: bytes) -> bool:
        return True

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        path = PurePosixPath(ctx.origin)
        try:
            text = decode_text(data, ctx.origin)
            if not text.strip():
                return [], []
            page = parse_html(rst_html(text, path.stem).encode("utf-8"))
        except IngestError as exc:
            return [], [FileError(ctx.origin, exc.reason)]
        except MissingDependency as exc:
            return [], [FileError(ctx.origin, exc.message)]
        item = local_document(page, ctx)
        return ([item] if item is not None else []), []


__all__ = ["RstLoader", "rst_html"]
